// An NFT in a grid: its image (space reserved before it loads), name, collection and attributes.
import type { Schemas } from '../api/client.ts';
import { paths } from '../router.ts';
import { type Child, h } from '../ui/dom.ts';
import { imageUrl } from '../ui/format.ts';

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

export function nftCard(asset: Asset, actions: Child = null): HTMLElement {
  const href = paths.asset(asset.id);
  return h(
    'article',
    { class: 'nft-card', 'data-asset-id': asset.id },
    h('a', { href, tabindex: '-1', 'aria-hidden': 'true' }, assetImage(asset, 'nft-image')),
    h('h3', {}, h('a', { href }, asset.name), chainBadge(asset) ? ' ' : null, chainBadge(asset)),
    h('p', { class: 'muted small' }, asset.collection),
    attributeList(asset),
    actions,
  );
}
