// WebSocket subscribes that replay from a random point (the scale benchmark): `connections` sockets
// of one session, each in a loop: subscribe to a random wallet's events with a `lastEventId` a random
// distance back inside the replay window, wait for `replayed`, unsubscribe, wait for `unsubscribed`.
// Measured: subscribe → `replayed` latency and completed replays per second. Each socket keeps under
// the gateway's 10 messages per second (two messages a cycle, at most 4 cycles a second), so no
// message is refused: at a quick service the rate is the pacing's, and the latency is the figure.
import { connectLean, type LeanWebSocket } from '../../lib/lean-ws.ts';
import type { LoadResult } from './load.ts';

const CYCLES_PER_SECOND = 4;
const EVENT_HEAD = '{"subscriptionIds"';
const ANSWER_TIMEOUT_MS = 30_000;

export interface ReplayLoad {
  label: string;
  wsUrl: string;
  headers: Record<string, string>;
  connections: number;
  durationSeconds: number;
  /** The next subscribe's wallet and resume point. */
  next(): { walletId: string; lastEventId: number };
}

/** A failure's label: `error <code>`, `closed <code>`, `resync_required <reason>`. */
function describe(message: Record<string, unknown>): string {
  return `${message.type} ${message.code ?? message.reason ?? ''}`.trim();
}

export async function runReplays(load: ReplayLoad): Promise<LoadResult> {
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  const fail = (what: string) => {
    failures[what] = (failures[what] ?? 0) + 1;
  };
  const deadline = performance.now() + load.durationSeconds * 1000;
  const started = performance.now();
  const loops = Array.from({ length: load.connections }, async (_, index) => {
    // Control messages in arrival order: an answer and the next one often come in one read, before
    // the loop asks for the second.
    const queue: Record<string, unknown>[] = [];
    let wake: (() => void) | null = null;
    const push = (message: Record<string, unknown>) => {
      queue.push(message);
      wake?.();
    };
    let closed = false;
    const socket: LeanWebSocket = await connectLean(load.wsUrl, load.headers, {
      message(data, start, end) {
        // Replayed events start with {"subscriptionIds": only the control messages are parsed.
        if (data.toString('latin1', start, Math.min(end, start + EVENT_HEAD.length)) === EVENT_HEAD) return;
        push(JSON.parse(data.toString('utf8', start, end)) as Record<string, unknown>);
      },
      close(code) {
        closed = true;
        push({ type: 'closed', code });
      },
    });
    /** The next control message of one of `types` (others are dropped), a close, or a timeout. */
    const answer = async (types: string[]): Promise<Record<string, unknown>> => {
      const deadline = performance.now() + ANSWER_TIMEOUT_MS;
      for (;;) {
        const message = queue.shift();
        if (message) {
          if (types.includes(String(message.type)) || message.type === 'closed') return message;
          continue;
        }
        const left = deadline - performance.now();
        if (left <= 0) return { type: 'timeout' };
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            wake = null;
            resolve();
          };
        });
      }
    };
    /** One subscribe, its replay and the unsubscribe. */
    const cycle = async (requestId: string, started: number) => {
      const { walletId, lastEventId } = load.next();
      socket.send(
        JSON.stringify({ type: 'subscribe', requestId, walletId, lastEventId: String(lastEventId) }),
      );
      const first = await answer(['subscribed', 'resync_required', 'error']);
      if (first.type !== 'subscribed') return fail(describe(first));
      const replayed = await answer(['replayed', 'error']);
      if (replayed.type !== 'replayed') return fail(describe(replayed));
      latencies.push(performance.now() - started);
      socket.send(
        JSON.stringify({
          type: 'unsubscribe',
          requestId: `u${requestId}`,
          subscriptionId: first.subscriptionId,
        }),
      );
      await answer(['unsubscribed', 'error']);
    };
    let cycles = 0;
    try {
      while (!closed && performance.now() < deadline) {
        const cycleStarted = performance.now();
        await cycle(`r${index}-${cycles++}`, cycleStarted);
        const rest = 1000 / CYCLES_PER_SECOND - (performance.now() - cycleStarted);
        if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
      }
    } finally {
      socket.terminate();
    }
  });
  await Promise.all(loops);
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (share: number) =>
    latencies.length === 0
      ? 0
      : Math.round(latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * share))]);
  return {
    label: load.label,
    okPerSecond: latencies.length / seconds,
    p50: at(0.5),
    p99: at(0.99),
    mean: latencies.reduce((sum, value) => sum + value, 0) / Math.max(1, latencies.length),
    ok: latencies.length,
    failures,
  };
}
