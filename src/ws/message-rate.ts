// Client messages per connection: 10 per second with bursts of 20 (a token bucket); a client that
// keeps sending past twice the burst while refused is closed with 1008.
export const MESSAGE_RATE = 10;
export const MESSAGE_BURST = 20;

/** What to do with a message: handle it, refuse it (`rate_limited`), or close the connection. */
export type RateVerdict = 'accept' | 'refuse' | 'close';

export class MessageRate {
  private tokens = MESSAGE_BURST;
  private tokensAt = Date.now();
  private rejected = 0;

  take(now = Date.now()): RateVerdict {
    this.tokens = Math.min(MESSAGE_BURST, this.tokens + ((now - this.tokensAt) / 1000) * MESSAGE_RATE);
    this.tokensAt = now;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      this.rejected = 0;
      return 'accept';
    }
    this.rejected += 1;
    return this.rejected > MESSAGE_BURST * 2 ? 'close' : 'refuse';
  }
}
