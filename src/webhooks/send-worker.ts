// The webhook sender's thread: signs and sends the requests the dispatcher hands it (sender.ts) and
// answers each outcome. The HTTP client's work (connections, headers, TLS, the HMAC) is most of a
// delivery's CPU; here it runs off the event loop that serves the API and fans events out to
// WebSockets, so a burst of webhooks does not delay them.
// A task is a series of one subscription's messages, sent one after the other (in order) and answered
// together, stopping at the first that fails: a subscription with a backlog pays the hand-over
// between threads once per series, not once per request.
import { parentPort } from 'node:worker_threads';
import type { Webhook } from 'standardwebhooks';
import { createPools, type Outcome, sendWebhook, signers } from './sender.ts';
import type { TargetPolicy } from './targets.ts';

export interface SendTask {
  n: number;
  url: string;
  messages: { id: string; body: string }[];
  secrets: string[];
  options: TargetPolicy & { timeoutMs: number; userAgent: string };
}

/** One message's outcome, and when this thread began its request and had the outcome. */
export interface Sent {
  outcome: Outcome;
  /** ms, performance.timeOrigin + now: comparable across threads (and with Date.now()). */
  startedAt: number;
  doneAt: number;
}

export interface SendDone {
  n: number;
  /** In order; shorter than the task's messages when one failed (it is the last). */
  sent: Sent[];
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

async function series(task: SendTask): Promise<Sent[]> {
  const secrets = task.secrets.map(signerOf);
  const sent: Sent[] = [];
  for (const message of task.messages) {
    const startedAt = clock();
    let outcome: Outcome;
    try {
      outcome = await sendWebhook(task.url, { ...message, secrets }, { ...task.options, pools });
    } catch (error) {
      outcome = { ok: false, statusCode: null, error: (error as Error).message };
    }
    sent.push({ outcome, startedAt, doneAt: clock() });
    if (!outcome.ok) break;
  }
  return sent;
}

port.on('message', (task: SendTask | 'close') => {
  if (task === 'close') {
    pools.close();
    port.close();
    return;
  }
  void series(task).then((sent) => port.postMessage({ n: task.n, sent } satisfies SendDone));
});
