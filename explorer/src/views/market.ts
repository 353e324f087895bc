// A collection's market page (/explorer/collection/{id}/market): its figures in a chosen currency
// (floor and the floor listing, best offer, last sale, 24 h volume), its active listings in that
// currency cheapest first across pages (`GET /api/v1/listings?sort=price`) with Buy, its recent
// sales, a collection offer or a trait offer, your open offers with Cancel, and its running auctions
// (current bid, end, a bid).
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import { PAGE_SIZE } from '../config.ts';
import { paths } from '../router.ts';
import { h, replace, skeleton } from '../ui/dom.ts';
import { labelled, select, textInput } from '../ui/field.ts';
import { formatTime, shortAddress } from '../ui/format.ts';
import { CursorPager } from '../ui/pager.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';
import { type Cleanup, debounced, type ViewContext } from './context.ts';
import {
  actionButton,
  assetNames,
  buyButton,
  currencyChoices,
  openOfferDialog,
  type Trait,
} from './market-forms.ts';
import { walletLink } from './transfer-history.ts';

type Listing = Schemas['Listing'];
type Offer = Schemas['Offer'];
type Auction = Schemas['Auction'];

const LISTINGS_PAGE = 20;

export function marketView(ctx: ViewContext, collection: string): Cleanup {
  const { session, signal } = ctx;
  const wallet = session.user?.wallets[0] ?? null;
  const names = assetNames(session, signal);
  const assetLink = (id: string, name: string) => h('a', { href: paths.asset(id) }, name);
  document.title = `Market of ${collection} · GATS Explorer`;

  const currency = select('market-currency', []);
  const figures = h(
    'div',
    { class: 'market-figures', 'aria-live': 'polite', 'aria-busy': 'true' },
    skeleton('line', 2),
  );
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const listingsBody = h('div', { class: 'market-list', 'aria-busy': 'true' }, skeleton('row', 3));
  const salesBody = h('div', { class: 'market-list', 'aria-busy': 'true' }, skeleton('row', 2));
  const offersBody = h('div', { class: 'market-list' });
  const offerStatus = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const auctionsBody = h('div', { class: 'market-list' });
  const auctionStatus = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const listingsPager = new CursorPager('listings', () => void loadListings());
  const salesPager = new CursorPager('sales', () => void loadSales());
  const offerButton = h('button', { type: 'button', disabled: true }, 'Make a collection offer');
  const refreshButton = h('button', { type: 'button', class: 'secondary' }, 'Refresh');
  const changed = h('p', { class: 'muted market-changed', 'aria-live': 'polite' });
  let currencies: [string, string][] = [];

  replace(
    ctx.root,
    h(
      'div',
      { class: 'market-header' },
      h('h1', {}, 'Market of ', h('code', {}, collection)),
      h('div', { class: 'market-currency' }, labelled('Currency', currency), refreshButton),
    ),
    changed,
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'figures-heading' },
      h('h2', { id: 'figures-heading' }, 'Market figures'),
      figures,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'listings-heading' },
      h('h2', { id: 'listings-heading' }, 'For sale'),
      h('p', { class: 'muted small' }, 'Active listings in the chosen currency, cheapest first.'),
      status,
      listingsBody,
      listingsPager.element,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'offers-heading' },
      h('h2', { id: 'offers-heading' }, 'Offers'),
      h(
        'p',
        { class: 'muted small' },
        'A collection offer buys any item of the collection its holder chooses to sell; a trait offer, any item with the trait you choose.',
      ),
      h('div', { class: 'asset-actions' }, offerButton),
      offerStatus,
      h('h3', {}, 'Your open offers'),
      offersBody,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'auctions-heading' },
      h('h2', { id: 'auctions-heading' }, 'Auctions'),
      auctionStatus,
      auctionsBody,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'sales-heading' },
      h('h2', { id: 'sales-heading' }, 'Recent sales'),
      salesBody,
      salesPager.element,
    ),
  );

  async function loadFigures(): Promise<void> {
    if (!currency.value) {
      replace(figures, emptyState('No currency to show prices in: you hold none this collection accepts.'));
      figures.removeAttribute('aria-busy');
      return;
    }
    figures.setAttribute('aria-busy', 'true');
    try {
      const stats = unwrap(
        await session.api.GET('/api/v1/collections/{collection_id}/market', {
          params: { path: { collection_id: collection }, query: { currency: currency.value } },
          signal,
        }),
      );
      const unit = ` ${stats.currency}`;
      const floorListing = stats.floorListingId
        ? await session.api
            .GET('/api/v1/listings/{listing_id}', {
              params: { path: { listing_id: stats.floorListingId } },
              signal,
            })
            .then((result) => result.data ?? null)
        : null;
      const rows: [string, string, HTMLElement | string][] = [
        [
          'Floor',
          'floor',
          stats.floor === null
            ? 'None listed'
            : h(
                'span',
                {},
                h('strong', {}, stats.floor + unit),
                floorListing
                  ? [' ', assetLink(floorListing.assetId, await names.name(floorListing.assetId))]
                  : null,
              ),
        ],
        ['Best offer', 'best-offer', stats.bestOffer === null ? 'No offer' : stats.bestOffer + unit],
        [
          'Last sale',
          'last-sale',
          stats.lastSale === null
            ? 'No sale yet'
            : h(
                'span',
                {},
                h('strong', {}, stats.lastSale.price + unit),
                ' ',
                assetLink(stats.lastSale.assetId, await names.name(stats.lastSale.assetId)),
              ),
        ],
        ['24 h volume', 'volume', `${stats.volume24h}${unit} (${stats.sales24h} sales)`],
      ];
      replace(
        figures,
        h(
          'dl',
          { class: 'facts' },
          rows.map(([term, id, value]) =>
            h('div', {}, h('dt', {}, term), h('dd', { 'data-testid': `market-${id}` }, value)),
          ),
        ),
      );
    } catch (error) {
      if (!signal.aborted) replace(figures, problemBox(problemOf(error)));
    } finally {
      figures.removeAttribute('aria-busy');
    }
  }

  /** The collection's items this page has seen (listed, sold, auctioned, yours): their traits. */
  const seenItems = new Set<string>();
  async function knownTraits(): Promise<Trait[]> {
    if (wallet) {
      const yours = await session.api
        .GET('/api/v1/assets', { params: { query: { kind: 'nft', collection, limit: 100 } }, signal })
        .then((result) => result.data?.data ?? []);
      for (const holding of yours) seenItems.add(holding.asset.id);
    }
    const traits = new Map<string, Trait>();
    for (const asset of await Promise.all([...seenItems].map(names.get)))
      for (const attribute of asset?.kind === 'nft' && asset.collection === collection
        ? asset.metadata.attributes
        : []) {
        const trait = { type: attribute.trait_type, value: String(attribute.value) };
        traits.set(JSON.stringify(trait), trait);
      }
    return [...traits.values()].sort(
      (a, b) => a.type.localeCompare(b.type) || a.value.localeCompare(b.value),
    );
  }

  async function listingRow(listing: Listing): Promise<HTMLElement> {
    seenItems.add(listing.assetId);
    const name = await names.name(listing.assetId);
    const mine = session.controls(listing.seller);
    return h(
      'li',
      { 'data-listing-id': listing.id },
      h(
        'span',
        { class: 'market-item' },
        assetLink(listing.assetId, name),
        listing.amount !== '1' ? ` × ${listing.amount}` : null,
        h('span', { class: 'muted small' }, ` from ${mine ? 'you' : shortAddress(listing.seller)}`),
      ),
      h('strong', { class: 'number' }, `${listing.price} ${listing.currency}`),
      mine
        ? actionButton(
            'Cancel',
            `Cancel your listing of ${name}`,
            status,
            async () => {
              unwrap(
                await session.api.POST('/api/v1/listings/{listing_id}/cancel', {
                  params: { path: { listing_id: listing.id } },
                }),
              );
              return `Your listing of ${name} is cancelled.`;
            },
            refresh,
          )
        : wallet
          ? buyButton(session, listing, name, wallet, status, refresh)
          : null,
    );
  }

  async function loadListings(): Promise<void> {
    const chosen = currency.value;
    if (!chosen) {
      listingsPager.update(null);
      replace(listingsBody, emptyState('No currency to show listings in.'));
      listingsBody.removeAttribute('aria-busy');
      return;
    }
    listingsBody.setAttribute('aria-busy', 'true');
    try {
      // Cheapest first across pages: the API's price order (its cursor carries the last price and
      // id), in the chosen currency (prices in different currencies are not compared).
      const page = unwrap(
        await session.api.GET('/api/v1/listings', {
          params: {
            query: {
              collection,
              currency: chosen,
              sort: 'price',
              cursor: listingsPager.cursor,
              limit: LISTINGS_PAGE,
            },
          },
          signal,
        }),
      );
      listingsPager.update(page.next_cursor);
      const rows = await Promise.all(page.data.map(listingRow));
      replace(
        listingsBody,
        rows.length === 0
          ? emptyState(`Nothing is for sale in this collection in ${chosen} right now.`)
          : h('ul', { class: 'market-rows' }, rows),
      );
    } catch (error) {
      if (!signal.aborted) replace(listingsBody, problemBox(problemOf(error)));
    } finally {
      listingsBody.removeAttribute('aria-busy');
    }
  }

  async function loadSales(): Promise<void> {
    salesBody.setAttribute('aria-busy', 'true');
    try {
      const page = unwrap(
        await session.api.GET('/api/v1/sales', {
          params: { query: { collection, cursor: salesPager.cursor, limit: PAGE_SIZE.transfers } },
          signal,
        }),
      );
      salesPager.update(page.next_cursor);
      const rows = await Promise.all(
        page.data.map(async (sale) => {
          seenItems.add(sale.assetId);
          return h(
            'li',
            {},
            h(
              'span',
              { class: 'market-item' },
              assetLink(sale.assetId, await names.name(sale.assetId)),
              h(
                'span',
                { class: 'muted small' },
                ` ${formatTime(sale.createdAt)} · `,
                walletLink(sale.seller),
                ' → ',
                walletLink(sale.buyer),
              ),
            ),
            h('strong', { class: 'number' }, `${sale.price} ${sale.currency}`),
          );
        }),
      );
      replace(
        salesBody,
        rows.length === 0 ? emptyState('No sales yet.') : h('ul', { class: 'market-rows' }, rows),
      );
    } catch (error) {
      if (!signal.aborted) replace(salesBody, problemBox(problemOf(error)));
    } finally {
      salesBody.removeAttribute('aria-busy');
    }
  }

  function offerWhat(offer: Offer, name: string | null): string {
    if (offer.assetId) return name ?? offer.assetId;
    if (offer.trait) return `any ${offer.trait.type} ${offer.trait.value} item`;
    return 'any item';
  }

  async function loadOffers(): Promise<void> {
    if (!wallet) {
      replace(offersBody, emptyState('You have no wallet to offer from.'));
      return;
    }
    try {
      const page = unwrap(
        await session.api.GET('/api/v1/offers', {
          params: { query: { collection, bidder: wallet, status: 'open', limit: 50 } },
          signal,
        }),
      );
      const rows = await Promise.all(
        page.data.map(async (offer) => {
          const what = offerWhat(offer, offer.assetId ? await names.name(offer.assetId) : null);
          return h(
            'li',
            { 'data-offer-id': offer.id },
            h(
              'span',
              { class: 'market-item' },
              offer.assetId ? assetLink(offer.assetId, what) : what,
              offer.expiresAt
                ? h('span', { class: 'muted small' }, ` until ${formatTime(offer.expiresAt)}`)
                : null,
            ),
            h('strong', { class: 'number' }, `${offer.price} ${offer.currency}`),
            actionButton(
              'Cancel',
              `Cancel your offer for ${what}`,
              offerStatus,
              async () => {
                unwrap(
                  await session.api.POST('/api/v1/offers/{offer_id}/cancel', {
                    params: { path: { offer_id: offer.id } },
                  }),
                );
                return `Your offer for ${what} is cancelled: ${offer.price} ${offer.currency} is free again.`;
              },
              refresh,
            ),
          );
        }),
      );
      replace(
        offersBody,
        rows.length === 0
          ? emptyState('You have no open offer here.')
          : h('ul', { class: 'market-rows' }, rows),
      );
    } catch (error) {
      if (!signal.aborted) replace(offersBody, problemBox(problemOf(error)));
    }
  }

  function bidForm(auction: Auction, name: string): HTMLElement {
    const guard = new SubmissionGuard();
    const minimum = auction.bestBid === null ? auction.reservePrice : null;
    const amount = textInput('bid', {
      inputmode: 'decimal',
      pattern: '[0-9]+([.][0-9]+)?',
      required: true,
      placeholder: minimum ?? `more than ${auction.bestBid}`,
    });
    const submit = h('button', { type: 'submit', class: 'small' }, 'Bid');
    const form = h(
      'form',
      { class: 'bid-form' },
      labelled(`Your bid for ${name} (${auction.currency})`, amount),
      submit,
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (guard.busy || !wallet) return;
      const value = amount.value.trim();
      if (!/^[0-9]+(\.[0-9]+)?$/.test(value)) {
        replace(
          auctionStatus,
          h('p', { class: 'problem', role: 'alert' }, 'Enter a bid, such as 60 or 60.5.'),
        );
        amount.focus();
        return;
      }
      submit.disabled = true;
      try {
        const body = { wallet, amount: value };
        const result = await guard.run({ id: auction.id, ...body }, async (key) =>
          unwrap(
            await session.api.POST('/api/v1/auctions/{auction_id}/bids', {
              params: { path: { auction_id: auction.id }, header: { 'Idempotency-Key': key } },
              body,
            }),
          ),
        );
        if (result)
          replace(
            auctionStatus,
            h(
              'p',
              { class: 'result good', 'data-testid': 'market-result' },
              `You bid ${value} ${auction.currency} for ${name}; it is reserved in your wallet until you are outbid.`,
            ),
          );
        void loadAuctions();
      } catch (error) {
        replace(auctionStatus, problemBox(problemOf(error), { '/body/amount': 'Your bid' }));
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  }

  async function loadAuctions(): Promise<void> {
    try {
      const page = unwrap(
        await session.api.GET('/api/v1/auctions', {
          params: { query: { collection, status: 'open', limit: 20 } },
          signal,
        }),
      );
      const rows = await Promise.all(
        page.data.map(async (auction) => {
          seenItems.add(auction.assetId);
          const name = await names.name(auction.assetId);
          const mine = session.controls(auction.seller);
          const leading = auction.bestBidder !== null && session.controls(auction.bestBidder);
          return h(
            'li',
            { class: 'auction', 'data-auction-id': auction.id },
            h(
              'span',
              { class: 'market-item' },
              assetLink(auction.assetId, name),
              h(
                'span',
                { class: 'muted small' },
                ` ends ${formatTime(auction.endsAt)} · ${auction.bids} bids`,
                leading ? ' · you lead' : '',
              ),
            ),
            h(
              'strong',
              { class: 'number' },
              auction.bestBid === null
                ? `reserve ${auction.reservePrice} ${auction.currency}`
                : `${auction.bestBid} ${auction.currency}`,
            ),
            !mine && wallet ? bidForm(auction, name) : null,
          );
        }),
      );
      replace(
        auctionsBody,
        rows.length === 0
          ? emptyState('No auction is running in this collection.')
          : h('ul', { class: 'market-rows' }, rows),
      );
    } catch (error) {
      if (!signal.aborted) replace(auctionsBody, problemBox(problemOf(error)));
    }
  }

  function refresh(): void {
    replace(changed);
    void loadFigures();
    void loadListings();
    void loadSales();
    void loadOffers();
  }
  const refreshSoon = debounced(refresh, 300);

  currency.addEventListener('change', () => {
    void loadFigures();
    listingsPager.reset();
    void loadListings();
  });
  offerButton.addEventListener('click', async () => {
    if (!wallet || offerButton.getAttribute('aria-busy')) return;
    offerButton.setAttribute('aria-busy', 'true');
    const traits = await knownTraits().catch(() => []);
    offerButton.removeAttribute('aria-busy');
    openOfferDialog(session, { wallet, collection, name: collection, currencies, traits }, (offer) => {
      replace(
        offerStatus,
        h(
          'p',
          { class: 'result good', 'data-testid': 'market-result' },
          offer.trait
            ? `You offer ${offer.price} ${offer.currency} for any ${offer.trait.type} ${offer.trait.value} item of ${collection}.`
            : `You offer ${offer.price} ${offer.currency} for any item of ${collection}.`,
        ),
      );
      refresh();
    });
  });

  void (async () => {
    try {
      const found = await currencyChoices(session, collection, signal);
      currencies = found.choices;
      replace(
        currency,
        currencies.map(([id, text]) => h('option', { value: id }, text)),
      );
      offerButton.disabled = !wallet || currencies.length === 0 || !found.settings.tradingEnabled;
      if (!found.settings.tradingEnabled)
        replace(
          status,
          h('p', { class: 'muted' }, 'Trading is turned off in this collection by its studio.'),
        );
    } catch (error) {
      if (signal.aborted) return;
      replace(figures, problemBox(problemOf(error)));
    }
    refresh();
    void loadAuctions();
  })();

  // The page refreshes after each of your actions and on demand, not on every event of a busy
  // collection (the list would shift under the pointer): an event says the market changed, and
  // Refresh shows it. A listing gone meanwhile is said at Buy (409).
  refreshButton.addEventListener('click', () => {
    replace(changed);
    refreshSoon();
    void loadAuctions();
  });
  const noteChange = () =>
    replace(changed, 'The market changed since this page was loaded: Refresh to see it.');
  let started = false;
  return ctx.live.subscribe(
    {
      collection,
      events: [
        'listingCreated',
        'listingEnded',
        'sale',
        'offerCreated',
        'offerEnded',
        'auctionCreated',
        'auctionBid',
        'auctionEnded',
      ],
    },
    {
      onEvent: noteChange,
      onFreshStart() {
        if (started) noteChange();
        started = true;
      },
    },
  );
}
