// History-API routing below /explorer/: links stay real links (open in a new tab, keyboard, screen
// readers), and the service answers every /explorer/* path with index.html.
import { BASE_PATH } from './config.ts';

export type Route =
  | { name: 'home' }
  | { name: 'callback' }
  | { name: 'wallet'; address: string }
  | { name: 'asset'; id: string }
  | { name: 'trades' }
  | { name: 'not-found' };

export function parseRoute(pathname: string): Route {
  if (pathname === BASE_PATH || pathname === BASE_PATH.slice(0, -1)) return { name: 'home' };
  const rest = pathname.startsWith(BASE_PATH) ? pathname.slice(BASE_PATH.length) : '';
  const [section, value, ...extra] = rest.split('/');
  if (section === 'callback' && value === undefined) return { name: 'callback' };
  if (section === 'trades' && value === undefined) return { name: 'trades' };
  if (section === 'wallet' && value && extra.length === 0)
    return { name: 'wallet', address: decodeURIComponent(value) };
  if (section === 'asset' && value && extra.length === 0)
    return { name: 'asset', id: decodeURIComponent(value) };
  return { name: 'not-found' };
}

export const paths = {
  home: () => BASE_PATH,
  wallet: (address: string) => `${BASE_PATH}wallet/${encodeURIComponent(address)}`,
  asset: (id: string) => `${BASE_PATH}asset/${encodeURIComponent(id)}`,
  trades: () => `${BASE_PATH}trades`,
};

/** Follows clicks on same-origin links inside the explorer without reloading the page. */
export function interceptLinks(navigate: (path: string) => void): void {
  document.addEventListener('click', (event) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    const link = (event.target as Element | null)?.closest('a');
    if (!link || link.target || link.hasAttribute('download')) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || !url.pathname.startsWith(BASE_PATH)) return;
    event.preventDefault();
    navigate(url.pathname + url.search);
  });
}
