// Short confirmations ("Transfer completed") in a polite live region, gone after a few seconds.
import { type Child, h } from './dom.ts';

let region: HTMLElement | null = null;

export function toastRegion(): HTMLElement {
  region ??= h('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' });
  return region;
}

export function toast(...content: Child[]): void {
  const item = h('p', { class: 'toast' }, content);
  toastRegion().append(item);
  window.setTimeout(() => item.remove(), 6000);
}
