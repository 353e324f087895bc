// What every view gets, and what it gives back.
import type { Session } from '../auth/session.ts';
import type { LiveConnection } from '../live/connection.ts';

export interface ViewContext {
  session: Session;
  live: LiveConnection;
  navigate(path: string, options?: { replace?: boolean }): void;
  /** The element the view renders into (the page's <main>). */
  root: HTMLElement;
  /** Aborted when the view is left: pending requests are cancelled, late answers ignored. */
  signal: AbortSignal;
}

/** Undoes what the view set up (subscriptions, timers, charts). */
export type Cleanup = () => void;

/** Coalesces bursts (a replay after a reconnect can bring many events) into one reload. */
export function debounced(run: () => void, ms = 150): () => void {
  let timer: number | undefined;
  return () => {
    window.clearTimeout(timer);
    timer = window.setTimeout(run, ms);
  };
}
