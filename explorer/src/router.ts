// History-API routing below /explorer/: links stay real links (open in a new tab, keyboard, screen
// readers), and the service answers every /explorer/* path with index.html.
import { BASE_PATH } from './config.ts';

export type Route =
  | { name: 'home' }
  | { name: 'callback' }
  | { name: 'wallet'; address: string }
  | { name: 'asset'; id: string }
  | { name: 'trades' }
  | { name: 'store'; collection: string }
  | { name: 'stores' }
  | { name: 'market'; collection: string }
  | ConsoleRoute
  | { name: 'not-found' };

/** The studio and admin console's screens (views/console/). */
export type ConsoleRoute =
  | { name: 'studio' }
  | { name: 'studio-collection'; id: string }
  | { name: 'studio-item'; id: string }
  | { name: 'studio-audit' }
  | { name: 'studio-webhooks' }
  | { name: 'studio-service-accounts' }
  | { name: 'admin-users' }
  | { name: 'admin-audit' }
  | { name: 'admin-chains' }
  | { name: 'admin-health' };

const CONSOLE_PAGES: Record<string, ConsoleRoute> = {
  'studio/': { name: 'studio' },
  'studio/audit': { name: 'studio-audit' },
  'studio/webhooks': { name: 'studio-webhooks' },
  'studio/service-accounts': { name: 'studio-service-accounts' },
  'admin/': { name: 'admin-users' },
  'admin/audit': { name: 'admin-audit' },
  'admin/chains': { name: 'admin-chains' },
  'admin/health': { name: 'admin-health' },
};

export function parseRoute(pathname: string): Route {
  if (pathname === BASE_PATH || pathname === BASE_PATH.slice(0, -1)) return { name: 'home' };
  const rest = pathname.startsWith(BASE_PATH) ? pathname.slice(BASE_PATH.length) : '';
  const [section, value, ...extra] = rest.split('/');
  if (section === 'studio' || section === 'admin') {
    const page = CONSOLE_PAGES[`${section}/${extra.length === 0 ? (value ?? '') : ''}`];
    if (page && extra.length === 0) return page;
    if (section === 'studio' && value === 'collection' && extra.length === 1 && extra[0])
      return { name: 'studio-collection', id: decodeURIComponent(extra[0]) };
    if (section === 'studio' && value === 'item' && extra.length === 1 && extra[0])
      return { name: 'studio-item', id: decodeURIComponent(extra[0]) };
    return { name: 'not-found' };
  }
  if (section === 'callback' && value === undefined) return { name: 'callback' };
  if (section === 'trades' && value === undefined) return { name: 'trades' };
  if (section === 'wallet' && value && extra.length === 0)
    return { name: 'wallet', address: decodeURIComponent(value) };
  if (section === 'asset' && value && extra.length === 0)
    return { name: 'asset', id: decodeURIComponent(value) };
  if (section === 'stores' && value === undefined) return { name: 'stores' };
  if (section === 'collection' && value && extra.length === 1 && extra[0] === 'store')
    return { name: 'store', collection: decodeURIComponent(value) };
  if (section === 'collection' && value && extra.length === 1 && extra[0] === 'market')
    return { name: 'market', collection: decodeURIComponent(value) };
  return { name: 'not-found' };
}

export const paths = {
  home: () => BASE_PATH,
  wallet: (address: string) => `${BASE_PATH}wallet/${encodeURIComponent(address)}`,
  asset: (id: string) => `${BASE_PATH}asset/${encodeURIComponent(id)}`,
  trades: () => `${BASE_PATH}trades`,
  stores: () => `${BASE_PATH}stores`,
  store: (collection: string) => `${BASE_PATH}collection/${encodeURIComponent(collection)}/store`,
  market: (collection: string) => `${BASE_PATH}collection/${encodeURIComponent(collection)}/market`,
  studio: () => `${BASE_PATH}studio/`,
  studioCollection: (id: string) => `${BASE_PATH}studio/collection/${encodeURIComponent(id)}`,
  studioItem: (id: string) => `${BASE_PATH}studio/item/${encodeURIComponent(id)}`,
  studioAudit: () => `${BASE_PATH}studio/audit`,
  studioWebhooks: () => `${BASE_PATH}studio/webhooks`,
  studioServiceAccounts: () => `${BASE_PATH}studio/service-accounts`,
  adminUsers: () => `${BASE_PATH}admin/`,
  adminAudit: () => `${BASE_PATH}admin/audit`,
  adminChains: () => `${BASE_PATH}admin/chains`,
  adminHealth: () => `${BASE_PATH}admin/health`,
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
