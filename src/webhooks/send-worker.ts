// The webhook sender's thread: signs and sends the requests the dispatcher hands it (sender.ts) and
// answers each outcome. The HTTP client's work (connections, headers, TLS, the HMAC) is most of a
// delivery's CPU; here it runs off the event loop that serves the API and fans events out to
// WebSockets, so a burst of webhooks does not delay them.
// A task is a series of one subscription's messages, sent one after the other (in order), stopping at
// the first that fails; each outcome is answered as it comes (what a receiver saw is soon recorded),
// but the next request does not wait for the dispatcher: a subscription with a backlog pays the
// hand-over to this thread once per series, not once per request. Both ways a message carries a
// batch: the tasks handed over in one turn of the dispatcher's loop, and the answers had in one turn
// of this thread's loop (sent together at its end).
import { parentPort } from 'node:worker_threads';
import type { Webhook } from 'standardwebhooks';
import { createPools, type Outcome, type Prepared, prepareTarget, sendPrepared, signers } from './sender.ts';
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
  sent: Sent;
  /** The series' last answer: every message was sent, or this one failed. */
  last: boolean;
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

async function series(task: SendTask, answer: (done: SendDone) => void): Promise<void> {
  const secrets = task.secrets.map(signerOf);
  const options = { ...task.options, pools };
  // The target is resolved and checked once per series (a few requests in a row), not per request.
  let target: Prepared | Outcome;
  try {
    target = await prepareTarget(task.url, options);
  } catch (error) {
    target = { ok: false, statusCode: null, error: (error as Error).message };
  }
  for (const [i, { id, body }] of task.messages.entries()) {
    const startedAt = clock();
    let outcome: Outcome;
    try {
      outcome = 'pool' in target ? await sendPrepared(target, { id, body, secrets }, options) : target;
    } catch (error) {
      outcome = { ok: false, statusCode: null, error: (error as Error).message };
    }
    const last = !outcome.ok || i === task.messages.length - 1;
    answer({ n: task.n, sent: { outcome, startedAt, doneAt: clock() }, last });
    if (last) return;
  }
}

/** Answers not sent yet: they go together, at the end of this turn of the event loop. */
let answers: SendDone[] = [];
let answering = false;

function flushAnswers(): void {
  answering = false;
  const batch = answers;
  answers = [];
  port?.postMessage(batch);
}

function answer(done: SendDone): void {
  answers.push(done);
  if (answering) return;
  answering = true;
  setImmediate(flushAnswers);
}

port.on('message', (tasks: SendTask[] | 'close') => {
  if (tasks === 'close') {
    pools.close();
    port.close();
    return;
  }
  for (const task of tasks) void series(task, answer);
});
