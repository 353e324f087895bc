// The asset page's market panel: the item's active listings (Buy, or Cancel for yours), and
// - if you hold it: "List for sale" (price, currency, expiry), "Start an auction" (reserve, minimum
//   increment, currency, end) and the open offers a holder can accept (offers for this item,
//   collection offers, trait offers it matches), each after a confirmation;
// - its running auction (best bid or reserve, end; Cancel for its seller before any bid);
// - if you do not: "Make an offer" and your open offers for it, with Cancel.
// Its last sale (its market price) and a link to the collection's market page.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { paths } from '../router.ts';
import { confirmAction } from '../ui/confirm.ts';
import { h, replace } from '../ui/dom.ts';
import { formatTime, shortAddress } from '../ui/format.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';
import { isOnChain } from './asset-card.ts';
import {
  actionButton,
  buyButton,
  compareAmounts,
  currencyChoices,
  openAuctionDialog,
  openListDialog,
  openOfferDialog,
} from './market-forms.ts';
import { walletLink } from './transfer-history.ts';

type Asset = Schemas['Asset'];
type Offer = Schemas['Offer'];
type Auction = Schemas['Auction'];

/** Whether `asset` has the attribute value a trait offer asks for (numbers and booleans as text). */
function hasTrait(asset: Asset, trait: NonNullable<Offer['trait']>): boolean {
  return asset.metadata.attributes.some(
    (attribute) => attribute.trait_type === trait.type && String(attribute.value) === trait.value,
  );
}

export function assetMarket(session: Session, signal: AbortSignal) {
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const actions = h('div', { class: 'asset-actions' });
  const listings = h('div', { class: 'market-list' });
  const offers = h('div', { class: 'market-list' });
  const marketLink = h('p', {});
  const lastSale = h('p', { 'data-testid': 'asset-last-sale' });
  const element = h(
    'section',
    { class: 'panel', 'aria-labelledby': 'market-heading' },
    h('h2', { id: 'market-heading' }, 'Market'),
    marketLink,
    lastSale,
    actions,
    status,
    h('h3', {}, 'For sale'),
    listings,
    h('h3', { id: 'asset-offers-heading' }, 'Offers'),
    offers,
  );
  let current: Asset | null = null;

  async function load(asset: Asset = current as Asset): Promise<void> {
    if (!asset) return;
    current = asset;
    replace(marketLink, h('a', { href: paths.market(asset.collection) }, `Market of ${asset.collection}`));
    const wallet = session.user?.wallets[0] ?? null;
    try {
      const [found, holdings, active, auctions, sales] = await Promise.all([
        currencyChoices(session, asset.collection, signal),
        session.api
          .GET('/api/v1/assets', {
            params: { query: { kind: asset.kind, collection: asset.collection, limit: 100 } },
            signal,
          })
          .then(unwrap),
        session.api
          .GET('/api/v1/listings', {
            params: { query: { assetId: asset.id, status: 'active', limit: 50 } },
            signal,
          })
          .then(unwrap),
        asset.kind === 'nft'
          ? session.api
              .GET('/api/v1/auctions', {
                params: { query: { assetId: asset.id, status: 'open', limit: 1 } },
                signal,
              })
              .then(unwrap)
          : { data: [] as Auction[] },
        session.api
          .GET('/api/v1/sales', { params: { query: { assetId: asset.id, limit: 1 } }, signal })
          .then(unwrap),
      ]);
      // Its market price: the last sale (what `GET /api/v1/price/{id}` answers, source `market`).
      const last = sales.data[0];
      replace(
        lastSale,
        last
          ? [
              'Last sold for ',
              h('strong', {}, `${last.price} ${last.currency}`),
              ` on ${formatTime(last.createdAt)}.`,
            ]
          : 'Not sold on the market yet.',
      );
      // An NFT in a running auction is held for it: it can be neither listed nor auctioned again.
      const auction = auctions.data[0] ?? null;
      const mine = holdings.data.filter((holding) => holding.asset.id === asset.id);
      const tradable =
        auction === null &&
        found.settings.tradingEnabled &&
        !asset.frozen &&
        !asset.soulbound &&
        !asset.burned &&
        !isOnChain(asset);

      replace(
        actions,
        tradable
          ? mine.map((holding) => {
              const button = h(
                'button',
                { type: 'button' },
                mine.length > 1 ? `List for sale from ${shortAddress(holding.wallet)}` : 'List for sale',
              );
              button.addEventListener('click', () =>
                openListDialog(
                  session,
                  { asset, wallet: holding.wallet, balance: holding.balance, currencies: found.choices },
                  (listing) => {
                    replace(
                      status,
                      h(
                        'p',
                        { class: 'result good', 'data-testid': 'market-result' },
                        `${asset.name} is for sale for ${listing.price} ${listing.currency}.`,
                      ),
                    );
                    void load();
                  },
                ),
              );
              return button;
            })
          : null,
        tradable && asset.kind === 'nft'
          ? mine.map((holding) => {
              const button = h(
                'button',
                { type: 'button', class: 'secondary' },
                mine.length > 1
                  ? `Start an auction from ${shortAddress(holding.wallet)}`
                  : 'Start an auction',
              );
              button.addEventListener('click', () =>
                openAuctionDialog(
                  session,
                  { asset, wallet: holding.wallet, currencies: found.choices },
                  (started) => {
                    replace(
                      status,
                      h(
                        'p',
                        { class: 'result good', 'data-testid': 'market-result' },
                        `${asset.name} is up for auction until ${formatTime(started.endsAt)}: bids from ${started.reservePrice} ${started.currency}, in steps of ${started.minIncrement}.`,
                      ),
                    );
                    void load();
                  },
                ),
              );
              return button;
            })
          : null,
        auction ? auctionLine(asset, auction) : null,
        tradable && mine.length === 0 && asset.kind === 'nft' && wallet
          ? (() => {
              const button = h('button', { type: 'button' }, 'Make an offer');
              button.addEventListener('click', () =>
                openOfferDialog(
                  session,
                  { wallet, assetId: asset.id, name: asset.name, currencies: found.choices },
                  (offer) => {
                    replace(
                      status,
                      h(
                        'p',
                        { class: 'result good', 'data-testid': 'market-result' },
                        `You offer ${offer.price} ${offer.currency} for ${asset.name}.`,
                      ),
                    );
                    void load();
                  },
                ),
              );
              return button;
            })()
          : null,
        !found.settings.tradingEnabled
          ? h('p', { class: 'muted small' }, 'Trading is off in this collection.')
          : null,
      );

      const sorted = [...active.data].sort(
        (a, b) => a.currency.localeCompare(b.currency) || compareAmounts(a.price, b.price),
      );
      replace(
        listings,
        sorted.length === 0
          ? emptyState('Not listed for sale.')
          : h(
              'ul',
              { class: 'market-rows' },
              sorted.map((listing) =>
                h(
                  'li',
                  { 'data-listing-id': listing.id },
                  h(
                    'span',
                    { class: 'market-item' },
                    listing.amount !== '1' ? `${listing.amount} ` : null,
                    h(
                      'span',
                      { class: 'muted small' },
                      `from ${session.controls(listing.seller) ? 'you' : shortAddress(listing.seller)}`,
                    ),
                    listing.expiresAt
                      ? h('span', { class: 'muted small' }, ` until ${formatTime(listing.expiresAt)}`)
                      : null,
                  ),
                  h('strong', { class: 'number' }, `${listing.price} ${listing.currency}`),
                  session.controls(listing.seller)
                    ? actionButton(
                        'Cancel',
                        `Cancel your listing of ${asset.name}`,
                        status,
                        async () => {
                          unwrap(
                            await session.api.POST('/api/v1/listings/{listing_id}/cancel', {
                              params: { path: { listing_id: listing.id } },
                            }),
                          );
                          return `Your listing of ${asset.name} is cancelled.`;
                        },
                        () => void load(),
                      )
                    : wallet
                      ? buyButton(session, listing, asset.name, wallet, status, () => void load())
                      : null,
                ),
              ),
            ),
      );

      if (asset.kind !== 'nft' || asset.burned) {
        replace(
          offers,
          emptyState(asset.burned ? 'A burned item takes no offer.' : 'Offers are made for NFTs.'),
        );
        return;
      }
      await loadOffers(
        asset,
        mine.map((holding) => holding.wallet),
        wallet,
        found.settings.royaltyBps,
      );
    } catch (error) {
      if (!signal.aborted) replace(status, problemBox(problemOf(error)));
    }
  }

  async function loadOffers(asset: Asset, holders: string[], wallet: string | null, royaltyBps: number) {
    const list = async (query: { assetId?: string; collection?: string; bidder?: string }) =>
      unwrap(
        await session.api.GET('/api/v1/offers', {
          params: { query: { ...query, status: 'open', limit: 50 } },
          signal,
        }),
      ).data;
    let shown: Offer[];
    const holder = holders[0];
    if (holder) {
      // What the holder can accept: offers for this item, and the collection's offers it matches.
      const [forItem, forCollection] = await Promise.all([
        list({ assetId: asset.id }),
        list({ collection: asset.collection }),
      ]);
      shown = [
        ...forItem,
        ...forCollection.filter(
          (offer) => offer.assetId === null && (!offer.trait || hasTrait(asset, offer.trait)),
        ),
      ]
        .filter((offer) => !session.controls(offer.bidder))
        .sort((a, b) => a.currency.localeCompare(b.currency) || compareAmounts(b.price, a.price));
    } else {
      shown = wallet ? await list({ assetId: asset.id, bidder: wallet }) : [];
    }
    replace(
      offers,
      shown.length === 0
        ? emptyState(holder ? 'No open offer for this item.' : 'You have no open offer for this item.')
        : h(
            'ul',
            { class: 'market-rows', 'aria-labelledby': 'asset-offers-heading' },
            shown.map((offer) => {
              const kind = offer.assetId
                ? 'for this item'
                : offer.trait
                  ? `for any ${offer.trait.value} item`
                  : 'for any item';
              return h(
                'li',
                { 'data-offer-id': offer.id },
                h(
                  'span',
                  { class: 'market-item' },
                  h('span', {}, holder ? [walletLink(offer.bidder), ' offers '] : 'You offer '),
                  h('span', { class: 'muted small' }, kind),
                  offer.expiresAt
                    ? h('span', { class: 'muted small' }, ` until ${formatTime(offer.expiresAt)}`)
                    : null,
                ),
                h('strong', { class: 'number' }, `${offer.price} ${offer.currency}`),
                holder ? acceptButton(asset, offer, holder, royaltyBps) : cancelOfferButton(asset, offer),
              );
            }),
          ),
    );
  }

  function acceptButton(asset: Asset, offer: Offer, holder: string, royaltyBps: number): HTMLButtonElement {
    const guard = new SubmissionGuard();
    return actionButton(
      'Accept',
      `Accept the offer of ${offer.price} ${offer.currency} for ${asset.name}`,
      status,
      async () => {
        if (guard.busy) return null;
        const confirmed = await confirmAction({
          title: `Sell ${asset.name} for ${offer.price} ${offer.currency}?`,
          consequences: [
            h(
              'p',
              {},
              `${asset.name} moves at once from your wallet ${shortAddress(holder)} to ${shortAddress(offer.bidder)}, who pays ${offer.price} ${offer.currency} from the price reserved for this offer.`,
            ),
            h(
              'p',
              {},
              `You receive the price minus the collection's royalty (${royaltyBps / 100} %) and the marketplace fee. A sale cannot be undone.`,
            ),
          ],
          confirmLabel: `Sell ${asset.name}`,
        });
        if (!confirmed) return null;
        const body = { wallet: holder, assetId: asset.id };
        const accepted = await guard.run({ id: offer.id, ...body }, async (key) =>
          unwrap(
            await session.api.POST('/api/v1/offers/{offer_id}/accept', {
              params: { path: { offer_id: offer.id }, header: { 'Idempotency-Key': key } },
              body,
            }),
          ),
        );
        if (!accepted) return null;
        return `Sold ${asset.name} for ${accepted.sale.price} ${accepted.sale.currency}; you received ${accepted.sale.sellerProceeds}.`;
      },
      () => void load(),
      true,
    );
  }

  /** The item's running auction: its best bid or reserve and end; its seller may cancel it before a bid. */
  function auctionLine(asset: Asset, auction: Auction): HTMLElement {
    const mine = session.controls(auction.seller);
    return h(
      'p',
      { class: 'market-auction', 'data-auction-id': auction.id },
      h(
        'span',
        {},
        `Up for auction until ${formatTime(auction.endsAt)}: `,
        h(
          'strong',
          {},
          auction.bestBid === null
            ? `reserve ${auction.reservePrice} ${auction.currency}`
            : `best bid ${auction.bestBid} ${auction.currency}`,
        ),
        ` (${auction.bids} bids). `,
        h('a', { href: paths.market(asset.collection) }, 'Bid on the market page'),
        '.',
      ),
      mine && auction.bids === 0
        ? actionButton(
            'Cancel auction',
            `Cancel the auction of ${asset.name}`,
            status,
            async () => {
              unwrap(
                await session.api.POST('/api/v1/auctions/{auction_id}/cancel', {
                  params: { path: { auction_id: auction.id } },
                }),
              );
              return `The auction of ${asset.name} is cancelled: it is free again.`;
            },
            () => void load(),
          )
        : null,
    );
  }

  function cancelOfferButton(asset: Asset, offer: Offer): HTMLButtonElement {
    return actionButton(
      'Cancel',
      `Cancel your offer for ${asset.name}`,
      status,
      async () => {
        unwrap(
          await session.api.POST('/api/v1/offers/{offer_id}/cancel', {
            params: { path: { offer_id: offer.id } },
          }),
        );
        return `Your offer for ${asset.name} is cancelled: ${offer.price} ${offer.currency} is free again.`;
      },
      () => void load(),
    );
  }

  return { element, load: (asset: Asset) => load(asset), reload: () => load() };
}
