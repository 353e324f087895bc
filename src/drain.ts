// Graceful shutdown of the real-time side (src/app.ts's `drain`, called by src/server.ts on SIGTERM
// before the HTTP server closes): every committed event is handed to the sockets (a bounded wait),
// then the sockets are closed with 1001 (clients resume on another instance) and the relay stops.
import type { EventsModule } from './events/index.ts';
import type { Gateway } from './ws/gateway.ts';

/** How long shutdown waits for the relay to hand committed events to sockets before closing them. */
const RELAY_FLUSH_LIMIT_MS = 2_000;

/** Hands committed events to the sockets (bounded wait), closes them with 1001, stops the relay. */
export async function drainRealtime(events: EventsModule, gateway: Gateway): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, RELAY_FLUSH_LIMIT_MS);
  });
  await Promise.race([events.tail.flush().catch(() => undefined), limit]);
  clearTimeout(timer);
  gateway.close();
  events.tail.stop();
}
