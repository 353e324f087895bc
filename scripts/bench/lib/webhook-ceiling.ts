// This machine's ceiling for signed webhook deliveries: the service's own sender thread
// (src/webhooks/send-thread.ts: sign with standardwebhooks, POST on kept-alive connections) sending
// as fast as `loops` concurrent senders can to a receiver, nothing else running in this process.
// The webhook benchmark divides its sustained rate by this; webhook-sender-loop.ts compares the
// thread with sending on the main thread.
import { createSendThread } from '../../../src/webhooks/send-thread.ts';

export const CEILING_BODY = JSON.stringify({
  id: '1',
  type: 'priceUpdate',
  occurredAt: new Date(0).toISOString(),
  data: { x: 'y'.repeat(200) },
});

/** Signed deliveries per second the sender thread reaches against `url` in `ms`. */
export async function senderCeiling(url: string, ms: number, loops = 50): Promise<number> {
  const thread = createSendThread();
  const secrets = [`whsec_${Buffer.alloc(32, 7).toString('base64')}`];
  const options = { allowLoopback: true, allowedNetworks: [], timeoutMs: 5000, userAgent: 'ceiling' };
  const message = { id: 'whd_01JD4C5Q6R7S8T9V0W1X2Y3Z4A', body: CEILING_BODY, secrets };
  try {
    // The thread's start and the first connections are not part of the rate.
    await Promise.all(Array.from({ length: loops }, () => thread.send(url, message, options)));
    let done = 0;
    const started = performance.now();
    const end = started + ms;
    await Promise.all(
      Array.from({ length: loops }, async () => {
        while (performance.now() < end) {
          const outcome = await thread.send(url, message, options);
          if (outcome.ok) done++;
        }
      }),
    );
    return (done * 1000) / (performance.now() - started);
  } finally {
    await thread.close();
  }
}
