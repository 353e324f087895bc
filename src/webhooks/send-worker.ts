// The webhook sender's thread: signs and sends the requests the dispatcher hands it (sender.ts) and
// answers each outcome. The HTTP client's work (connections, headers, TLS, the HMAC) is most of a
// delivery's CPU; here it runs off the event loop that serves the API and fans events out to
// WebSockets, so a burst of webhooks does not delay them.
import { parentPort } from 'node:worker_threads';
import type { Webhook } from 'standardwebhooks';
import { createPools, type Outcome, sendWebhook, signers } from './sender.ts';
import type { TargetPolicy } from './targets.ts';

export interface SendTask {
  n: number;
  url: string;
  id: string;
  body: string;
  secrets: string[];
  options: TargetPolicy & { timeoutMs: number; userAgent: string };
  /** When the dispatcher posted it (ms, performance.timeOrigin + now: comparable across threads). */
  postedAt: number;
}

export interface SendDone {
  n: number;
  outcome: Outcome;
  /** When this thread began the request and when it had the outcome (same clock as postedAt). */
  startedAt: number;
  doneAt: number;
}

const clock = () => performance.timeOrigin + performance.now();

const port = parentPort;
if (!port) throw new Error('send-worker runs as a worker thread');
const pools = createPools();
/** One signer per secret (decoded once); secrets change only with rotations. */
const signing = new Map<string, Webhook>();

function signerOf(secret: string): Webhook {
  let signer = signing.get(secret);
  if (!signer) {
    if (signing.size >= 10_000) signing.clear();
    [signer] = signers([secret]);
    signing.set(secret, signer);
  }
  return signer;
}

port.on('message', (task: SendTask | 'close') => {
  if (task === 'close') {
    pools.close();
    port.close();
    return;
  }
  const startedAt = clock();
  void sendWebhook(
    task.url,
    { id: task.id, body: task.body, secrets: task.secrets.map(signerOf) },
    { ...task.options, pools },
  ).then(
    (outcome) => port.postMessage({ n: task.n, outcome, startedAt, doneAt: clock() } satisfies SendDone),
    (error: unknown) =>
      port.postMessage({
        n: task.n,
        outcome: { ok: false, statusCode: null, error: (error as Error).message },
        startedAt,
        doneAt: clock(),
      } satisfies SendDone),
  );
});
