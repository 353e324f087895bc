// Which node answers shrink the eth_getLogs block range (and which pause the indexer instead).
import { ResponseBodyTooLargeError, TimeoutError } from 'viem';
import { describe, expect, it } from 'vitest';
import { isRangeTooLarge, isTimeout } from '../../../src/chain/rpc.ts';

describe('adaptive block range', () => {
  it('shrinks on answers that say the range or the answer is too large', () => {
    for (const message of [
      'query returned more than 10000 results',
      'block range is too wide',
      'eth_getLogs block range too large, range: 5000, max: 2000',
      'Log response size exceeded.',
      'limit exceeded',
    ]) {
      expect(isRangeTooLarge(new Error(message)), message).toBe(true);
    }
    expect(isRangeTooLarge(new ResponseBodyTooLargeError({ size: 63_000_000, maxSize: 10_485_760 }))).toBe(
      true,
    );
    expect(isRangeTooLarge(new Error('connection refused'))).toBe(false);
  });

  it('tells a time-out apart', () => {
    expect(isTimeout(new TimeoutError({ body: {}, url: 'http://127.0.0.1:1' }))).toBe(true);
    expect(isTimeout(new Error('execution reverted'))).toBe(false);
  });
});
