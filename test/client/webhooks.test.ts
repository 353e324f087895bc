// Issue 38: the official client's webhook verification against the Standard Webhooks test vectors
// (real deliveries of the service: test/client/webhooks.ts, run by client.test.ts).
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../../clients/typescript/src/index.ts';
import {
  cases,
  type Headers3,
  MSG_ID,
  PAYLOAD,
  SECRET,
  SECRET_UNPREFIXED,
  signed,
} from './standard-webhooks-vectors.ts';

/** The vectors' payload signed at `at` (seconds), as the reference library's TestPayload does. */
function signedAt(at: number): Headers3 {
  const key = Buffer.from(SECRET_UNPREFIXED, 'base64');
  const signature = createHmac('sha256', key).update(`${MSG_ID}.${at}.${PAYLOAD}`).digest('base64');
  return { 'webhook-id': MSG_ID, 'webhook-timestamp': String(at), 'webhook-signature': `v1,${signature}` };
}

describe('the official TypeScript client, Standard Webhooks test vectors', () => {
  it('verifies the specification’s signed vector (its payload is no event envelope, so parsing refuses it)', () => {
    const headers = {
      'webhook-id': signed.id,
      'webhook-timestamp': String(signed.timestamp),
      'webhook-signature': signed.signature,
    };
    const now = () => signed.timestamp * 1000;
    // The signature checks (a wrong one fails on the signature, this one only on the envelope).
    expect(() => verifyWebhook(signed.payload, headers, signed.secret, { now })).toThrow(
      'The payload is not an event envelope',
    );
    expect(() =>
      verifyWebhook(
        signed.payload,
        { ...headers, 'webhook-signature': `v1,${'A'.repeat(43)}=` },
        signed.secret,
        {
          now,
        },
      ),
    ).toThrow('No matching signature found');
  });

  it.each(cases)('$name', ({ skewMs = 0, edit, valid }) => {
    const nowMs = Date.now();
    const headers = signedAt(Math.floor((nowMs + skewMs) / 1000));
    edit?.(headers);
    const attempt = () => verifyWebhook(PAYLOAD, headers, [SECRET], { now: () => nowMs });
    if (valid) expect(attempt).toThrow('The payload is not an event envelope');
    else expect(attempt).toThrow(WebhookVerificationError);
    // The same with the key without its prefix, as the reference library accepts it.
    const unprefixed = () => verifyWebhook(PAYLOAD, headers, SECRET_UNPREFIXED, { now: () => nowMs });
    if (valid) expect(unprefixed).toThrow('The payload is not an event envelope');
    else expect(unprefixed).toThrow(WebhookVerificationError);
  });

  it('takes the tolerance it is given', () => {
    const nowMs = Date.now();
    const headers = signedAt(Math.floor(nowMs / 1000) - 60);
    expect(() => verifyWebhook(PAYLOAD, headers, SECRET, { now: () => nowMs, toleranceSeconds: 30 })).toThrow(
      'Message timestamp too old',
    );
    expect(() => verifyWebhook(PAYLOAD, headers, SECRET, { now: () => nowMs, toleranceSeconds: 90 })).toThrow(
      'The payload is not an event envelope',
    );
  });
});
