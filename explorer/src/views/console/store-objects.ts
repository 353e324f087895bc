// A collection's store offers and loot boxes, read only (GET /api/v1/collections/{id}/store-offers
// and .../loot-boxes): what each sells or draws, with a link to the public store page where players
// see them. They are set up through the API (docs/guides/stores-and-rewards.md); claim codes are not
// listed, as the contract has no list of them (each is in the audit log as `claimCode.created`).
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { paths } from '../../router.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { formatTime } from '../../ui/format.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import type { ViewContext } from '../context.ts';
import { partText } from './recipes.ts';

type StoreOffer = Schemas['StoreOffer'];
type LootBox = Schemas['LootBox'];

function table(caption: string, columns: string[], rows: HTMLElement[]): HTMLElement {
  return h(
    'table',
    { class: 'recipes-table' },
    h('caption', { class: 'visually-hidden' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        columns.map((name) => h('th', { scope: 'col' }, name)),
      ),
    ),
    h('tbody', {}, rows),
  );
}

const lines = (texts: string[]) =>
  h(
    'ul',
    { class: 'part-list' },
    texts.map((text) => h('li', {}, text)),
  );

function windowText(offer: StoreOffer): string {
  if (offer.startsAt && offer.endsAt) return `${formatTime(offer.startsAt)} to ${formatTime(offer.endsAt)}`;
  if (offer.startsAt) return `from ${formatTime(offer.startsAt)}`;
  if (offer.endsAt) return `until ${formatTime(offer.endsAt)}`;
  return 'no time window';
}

function offerRow(offer: StoreOffer): HTMLElement {
  const limits = [
    offer.totalLimit === null ? `${offer.sold} sold` : `${offer.sold} of ${offer.totalLimit} sold`,
    offer.perWalletLimit === null ? null : `${offer.perWalletLimit} per wallet`,
  ].filter((text): text is string => text !== null);
  return h(
    'tr',
    { 'data-offer-id': offer.id },
    h('td', {}, h('strong', {}, offer.name), h('br'), h('code', { class: 'muted small' }, offer.id)),
    h(
      'td',
      {},
      offer.price.length
        ? lines(
            offer.price.map((price) =>
              'nft' in price
                ? `${price.nft.quantity} × ${price.nft.name}`
                : `${price.amount} ${price.assetId}`,
            ),
          )
        : 'free',
    ),
    h('td', {}, lines(offer.grants.map((grant) => partText(grant, 'output')))),
    h('td', {}, lines([...limits, windowText(offer)])),
    h(
      'td',
      {},
      h('span', { class: `status ${offer.status === 'active' ? 'completed' : 'failed'}` }, offer.status),
    ),
  );
}

function boxRow(box: LootBox): HTMLElement {
  return h(
    'tr',
    { 'data-box-id': box.id },
    h('td', {}, h('strong', {}, box.name), h('br'), h('code', { class: 'muted small' }, box.id)),
    h('td', {}, box.paid ? 'sold for value' : 'free'),
    h('td', {}, `${box.odds.length} outcome${box.odds.length === 1 ? '' : 's'}, odds published`),
    h('td', {}, box.pity ? `entry ${box.pity.entry} after ${box.pity.after} openings without it` : 'none'),
  );
}

export function storeObjectsPanel(ctx: ViewContext, collectionId: string): HTMLElement {
  const offers = h(
    'div',
    { class: 'table-scroll', 'data-testid': 'store-offers', 'aria-busy': 'true' },
    skeleton('row', 2),
  );
  const boxes = h(
    'div',
    { class: 'table-scroll', 'data-testid': 'loot-boxes', 'aria-busy': 'true' },
    skeleton('row', 2),
  );
  const more = (next: string | null) =>
    next ? h('p', { class: 'muted small' }, 'The first 100 are shown; the store page has them all.') : null;

  async function load(): Promise<void> {
    const path = { collection_id: collectionId };
    const [offerPage, boxPage] = await Promise.allSettled([
      ctx.session.api
        .GET('/api/v1/collections/{collection_id}/store-offers', {
          params: { path, query: { limit: 100 } },
          signal: ctx.signal,
        })
        .then(unwrap),
      ctx.session.api
        .GET('/api/v1/collections/{collection_id}/loot-boxes', {
          params: { path, query: { limit: 100 } },
          signal: ctx.signal,
        })
        .then(unwrap),
    ]);
    if (ctx.signal.aborted) return;
    if (offerPage.status === 'fulfilled') {
      const { data, next_cursor } = offerPage.value;
      replace(
        offers,
        data.length
          ? [
              table(
                'Store offers, oldest first',
                ['Offer', 'Price', 'Gives', 'Sales', 'Status'],
                data.map(offerRow),
              ),
              more(next_cursor),
            ]
          : emptyState('No store offer yet.'),
      );
    } else replace(offers, problemBox(problemOf(offerPage.reason)));
    if (boxPage.status === 'fulfilled') {
      const { data, next_cursor } = boxPage.value;
      replace(
        boxes,
        data.length
          ? [
              table('Loot boxes, oldest first', ['Box', 'Paid', 'Draw', 'Pity'], data.map(boxRow)),
              more(next_cursor),
            ]
          : emptyState('No loot box yet.'),
      );
    } else replace(boxes, problemBox(problemOf(boxPage.reason)));
    offers.setAttribute('aria-busy', 'false');
    boxes.setAttribute('aria-busy', 'false');
  }

  void load();
  return h(
    'div',
    {},
    h(
      'p',
      {},
      'Read only here: offers, claim codes and loot boxes are set up through the API. Players see them on ',
      h('a', { href: paths.store(collectionId) }, 'the public store page'),
      '. Claim codes are not listed (the service keeps only their hashes); each is in the audit log.',
    ),
    h('h3', {}, 'Store offers'),
    offers,
    h('h3', {}, 'Loot boxes'),
    boxes,
  );
}
