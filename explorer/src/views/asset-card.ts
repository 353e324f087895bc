// An NFT in a grid: its image (space reserved before it loads), name, collection and attributes.
import type { Schemas } from '../api/client.ts';
import { paths } from '../router.ts';
import { type Child, h } from '../ui/dom.ts';
import { formatTime, imageUrl, shortAddress } from '../ui/format.ts';

type Asset = Schemas['Asset'];

/** The image, or the asset's initial on a tile when it cannot be loaded (offline CDN, bad URL). */
export function assetImage(asset: Asset, className: string): HTMLElement {
  const frame = h('div', { class: className });
  const fallback = () =>
    frame.replaceChildren(
      h('span', { class: 'image-fallback', 'aria-hidden': 'true' }, asset.name.slice(0, 1).toUpperCase()),
    );
  const image = h('img', {
    src: imageUrl(asset.metadata.image),
    alt: `Picture of ${asset.name}`,
    loading: 'lazy',
    decoding: 'async',
    referrerpolicy: 'no-referrer',
  });
  image.addEventListener('error', fallback, { once: true });
  frame.append(image);
  return frame;
}

export function attributeList(asset: Asset): HTMLElement | null {
  if (asset.metadata.attributes.length === 0) return null;
  return h(
    'dl',
    { class: 'attributes' },
    asset.metadata.attributes.map((attribute) =>
      h('div', {}, h('dt', {}, attribute.trait_type), h('dd', {}, String(attribute.value))),
    ),
  );
}

/** An on-chain token (ERC-721, ERC-1155, ERC-20 of a registered contract): read-only here. */
export function isOnChain(asset: Pick<Asset, 'source'>): boolean {
  return asset.source?.type === 'chain';
}

/** An asset id of an on-chain token (`chn_…`): transfers name their asset by id only. */
export function isOnChainId(assetId: string): boolean {
  return assetId.startsWith('chn_');
}

/** "Chain 31337" with the token's CAIP-19 id as its title, or null for a ledger asset. */
export function chainBadge(asset: Pick<Asset, 'source'>): HTMLElement | null {
  const source = asset.source;
  if (source?.type !== 'chain') return null;
  return h(
    'span',
    { class: 'badge chain-badge', title: source.caip19, 'data-testid': 'chain-badge' },
    `On chain ${source.chainId}`,
  );
}

/** "in 2 h", "in 3 days", "in 45 min" (or "now" once past): how long until `timestamp`. */
export function endsIn(timestamp: string, now = Date.now()): string {
  const seconds = (Date.parse(timestamp) - now) / 1000;
  if (seconds <= 0) return 'now';
  if (seconds < 3600) return `in ${Math.max(1, Math.round(seconds / 60))} min`;
  if (seconds < 2 * 86_400) return `in ${Math.round(seconds / 3600)} h`;
  return `in ${Math.round(seconds / 86_400)} days`;
}

/**
 * An item with an end time (issue 36): a loan returns to its lender, a timed grant (a store's rental,
 * a season pass) is burned. Null for an item without one.
 */
export function rentalNote(asset: Asset): HTMLElement | null {
  if (!asset.expiresAt) return null;
  const ended = Date.parse(asset.expiresAt) <= Date.now();
  return h(
    'p',
    { class: 'rental small', 'data-testid': 'rental' },
    h(
      'time',
      { datetime: asset.expiresAt, title: formatTime(asset.expiresAt) },
      ended ? 'Ended' : `Ends ${endsIn(asset.expiresAt)}`,
    ),
    asset.lender
      ? [
          ': lent by ',
          h('a', { href: paths.wallet(asset.lender), title: asset.lender }, shortAddress(asset.lender)),
          ended ? ', returning to them.' : ', returns to them then.',
        ]
      : ended
        ? ': being removed.'
        : ': removed then (a rental).',
  );
}

export function nftCard(asset: Asset, actions: Child = null): HTMLElement {
  const href = paths.asset(asset.id);
  return h(
    'article',
    { class: 'nft-card', 'data-asset-id': asset.id },
    h('a', { href, tabindex: '-1', 'aria-hidden': 'true' }, assetImage(asset, 'nft-image')),
    h('h3', {}, h('a', { href }, asset.name), chainBadge(asset) ? ' ' : null, chainBadge(asset)),
    h(
      'p',
      { class: 'muted small' },
      h(
        'a',
        { href: paths.store(asset.collection), title: `The store of ${asset.collection}` },
        asset.collection,
      ),
    ),
    rentalNote(asset),
    attributeList(asset),
    actions,
  );
}
