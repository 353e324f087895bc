// The always-visible state of the live connection, announced politely to screen readers.
import { h } from '../ui/dom.ts';
import type { LiveConnection, LiveStatus } from './connection.ts';

const TEXT: Record<LiveStatus, string> = {
  // Not "Offline": before sign-in (or on a page with nothing live) the service is up, only no live
  // updates are flowing to this page.
  offline: 'Live updates off',
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
};

export function liveIndicator(live: LiveConnection): HTMLElement {
  const text = h('span', {});
  const element = h(
    'p',
    { class: 'live-indicator', role: 'status', 'aria-live': 'polite', title: 'Live updates' },
    h('span', { class: 'dot', 'aria-hidden': 'true' }),
    text,
  );
  const render = () => {
    element.dataset.status = live.status;
    text.textContent = TEXT[live.status];
  };
  live.addEventListener('status', render);
  render();
  return element;
}
