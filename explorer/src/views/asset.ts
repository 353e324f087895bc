// The asset view: metadata (and its version history), owners, transfer history, the current price
// and its OHLC chart, kept current by the asset's newTransfer/newNFT/priceUpdate/assetUpdated events.
// If you hold it, you can transfer it (unless it is frozen or soulbound).
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import { PAGE_SIZE } from '../config.ts';
import { paths } from '../router.ts';
import { h, replace, skeleton } from '../ui/dom.ts';
import { formatTime, shortAddress } from '../ui/format.ts';
import { CursorPager } from '../ui/pager.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { toast } from '../ui/toast.ts';
import { assetImage, attributeList, chainBadge, endsIn, isOnChain, rentalNote } from './asset-card.ts';
import { assetMarket } from './asset-market.ts';
import { type Cleanup, debounced, type ViewContext } from './context.ts';
import { metadataHistory } from './metadata-history.ts';
import { priceChart } from './price-chart.ts';
import { openTransferDialog } from './transfer-form.ts';
import { transferHistory, walletLink } from './transfer-history.ts';

type Asset = Schemas['Asset'];
type Price = Schemas['Price'];

const QUOTE_CURRENCY = 'USD';

function facts(asset: Asset): HTMLElement {
  const rows: [string, string | HTMLElement][] = [
    ['Id', h('code', {}, asset.id)],
    ['Kind', asset.kind === 'nft' ? 'NFT' : 'Game currency'],
    [
      'Collection',
      h('span', {}, asset.collection, ' · ', h('a', { href: paths.store(asset.collection) }, 'its store')),
    ],
    ['Creator', asset.metadata.creator],
    ['Created', formatTime(asset.createdAt)],
  ];
  if (asset.kind === 'fungible') {
    rows.push(
      ['Symbol', asset.symbol ?? '—'],
      ['Decimals', String(asset.decimals ?? 0)],
      ['Total supply', asset.totalSupply ?? '0'],
      ['Maximum supply', asset.maxSupply ?? 'Uncapped'],
    );
  } else if (asset.burned) {
    // A burned NFT (POST /api/v1/assets/{id}/burn) stays readable, with no owner.
    rows.push(['Owner', 'None: burned']);
  } else if (asset.owner) {
    rows.push(['Owner', walletLink(asset.owner)]);
  }
  if (asset.expiresAt) {
    // Issue 36: a loan returns to its lender at its end, a timed grant is burned.
    rows.push([
      'Ends',
      `${formatTime(asset.expiresAt)} (${Date.parse(asset.expiresAt) <= Date.now() ? 'ended' : endsIn(asset.expiresAt)})`,
    ]);
  }
  const source = asset.source;
  if (source?.type === 'chain') {
    rows.push(
      ['Chain', String(source.chainId)],
      [
        'Contract',
        h(
          'code',
          { title: source.contract },
          `${source.standard.toUpperCase()} ${shortAddress(source.contract)}`,
        ),
      ],
      ['Token id', source.tokenId === null ? '—' : h('code', {}, source.tokenId)],
      ['CAIP-19', h('code', { class: 'small' }, source.caip19)],
    );
  }
  return h(
    'dl',
    { class: 'facts' },
    rows.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
  );
}

export function assetView(ctx: ViewContext, assetId: string): Cleanup {
  const { session, signal } = ctx;
  const header = h(
    'div',
    { class: 'asset-header', 'aria-busy': 'true' },
    skeleton('asset-image'),
    h('div', { class: 'asset-summary' }, skeleton('line', 4)),
  );
  const actions = h('div', { class: 'asset-actions' });
  const priceValue = h(
    'p',
    { class: 'price-value', 'aria-live': 'polite' },
    h('span', { class: 'skeleton line short' }),
  );
  const ownersList = h('div', { class: 'owners' }, skeleton('row', 2));
  const transfers = transferHistory(session, { assetId }, signal);
  const history = metadataHistory(session, assetId, signal);
  const ownersPager = new CursorPager('owners', () => void loadOwners());
  const chart = priceChart(session, assetId, () => QUOTE_CURRENCY, signal);
  const market = assetMarket(session, signal);

  replace(
    ctx.root,
    header,
    h(
      'div',
      { class: 'columns' },
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'price-heading' },
        h('h2', { id: 'price-heading' }, 'Price'),
        priceValue,
        chart.element,
      ),
      h(
        'section',
        { class: 'panel', 'aria-labelledby': 'owners-heading' },
        h('h2', { id: 'owners-heading' }, 'Owners'),
        ownersList,
        ownersPager.element,
      ),
    ),
    market.element,
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'transfers-heading' },
      h('h2', { id: 'transfers-heading' }, 'Transfer history'),
      transfers.list,
      transfers.pager,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'history-heading' },
      h('h2', { id: 'history-heading' }, 'Metadata history'),
      history.elements,
    ),
  );

  let asset: Asset | null = null;

  async function loadAsset(): Promise<void> {
    try {
      asset = unwrap(
        await session.api.GET('/assets/{asset_id}', { params: { path: { asset_id: assetId } }, signal }),
      );
      document.title = `${asset.name} · GATS Explorer`;
      replace(
        header,
        assetImage(asset, 'asset-image'),
        h(
          'div',
          { class: 'asset-summary' },
          h(
            'h1',
            {},
            asset.name,
            ' ',
            h('span', { class: 'badge' }, asset.kind === 'nft' ? 'NFT' : (asset.symbol ?? 'Currency')),
            chainBadge(asset) ? ' ' : null,
            chainBadge(asset),
            asset.burned ? h('span', { class: 'badge' }, 'Burned') : null,
            asset.soulbound ? h('span', { class: 'badge', title: 'Non-transferable' }, 'Soulbound') : null,
            asset.frozen ? h('span', { class: 'badge', title: 'Frozen by its studio' }, 'Frozen') : null,
          ),
          asset.description ? h('p', {}, asset.description) : null,
          rentalNote(asset),
          facts(asset),
          attributeList(asset),
          // Inside the header, whose reserved height absorbs it: nothing below moves.
          actions,
        ),
      );
      void market.load(asset);
      await loadMyHolding(asset);
    } catch (error) {
      if (signal.aborted) return;
      const problem = problemOf(error);
      replace(header, h('h1', {}, 'Asset ', h('code', {}, assetId)), problemBox(problem));
    } finally {
      header.removeAttribute('aria-busy');
    }
  }

  /** Offers "Transfer" from each of your wallets that holds the asset. */
  async function loadMyHolding(current: Asset): Promise<void> {
    // Neither moves (409 asset-frozen, asset-soulbound), nor a borrowed item (409 item-lent).
    if (current.frozen || current.soulbound || current.lender) {
      replace(actions);
      return;
    }
    // An on-chain token moves on its chain: the ledger refuses to transfer it (409 asset-on-chain).
    if (isOnChain(current)) {
      replace(actions, h('p', { class: 'muted small' }, 'Moves on chain: transfer it with your wallet app.'));
      return;
    }
    const holdings = unwrap(
      await session.api.GET('/api/v1/assets', {
        params: { query: { kind: current.kind, collection: current.collection, limit: 100 } },
        signal,
      }),
    ).data.filter((holding) => holding.asset.id === current.id);
    replace(
      actions,
      holdings.map((holding) => {
        const button = h(
          'button',
          { type: 'button' },
          holdings.length > 1 ? `Transfer from ${shortAddress(holding.wallet)}` : 'Transfer',
        );
        button.addEventListener('click', () =>
          openTransferDialog(
            session,
            { asset: holding.asset, from: holding.wallet, balance: holding.balance },
            (transfer) => {
              toast(`Sent ${transfer.amount} of ${current.name} to ${shortAddress(transfer.to)}.`);
              reload();
            },
          ),
        );
        return button;
      }),
    );
  }

  async function loadPrice(): Promise<void> {
    const result = await session.api.GET('/api/v1/price/{id}', {
      params: { path: { id: assetId }, query: { currency: QUOTE_CURRENCY } },
      signal,
    });
    if (result.response.status === 404) {
      replace(priceValue, h('span', { class: 'muted' }, `No ${QUOTE_CURRENCY} price yet.`));
      return;
    }
    showPrice(unwrap(result));
  }

  function showPrice(price: Price): void {
    replace(
      priceValue,
      h('strong', { 'data-testid': 'price' }, `${price.price} ${price.currency}`),
      ' ',
      h('span', { class: 'muted small' }, `by ${price.source}, ${formatTime(price.observedAt)}`),
    );
  }

  async function loadOwners(): Promise<void> {
    try {
      const page = unwrap(
        await session.api.GET('/assets/{asset_id}/owners', {
          params: {
            path: { asset_id: assetId },
            query: { cursor: ownersPager.cursor, limit: PAGE_SIZE.owners },
          },
          signal,
        }),
      );
      ownersPager.update(page.next_cursor);
      replace(
        ownersList,
        page.data.length === 0
          ? emptyState('Nobody holds this asset.')
          : h(
              'ul',
              { class: 'owner-list' },
              page.data.map((owner) =>
                h('li', {}, walletLink(owner.wallet), h('span', { class: 'number' }, owner.balance)),
              ),
            ),
      );
    } catch (error) {
      if (!signal.aborted) replace(ownersList, problemBox(problemOf(error)));
    }
  }

  const reload = debounced(() => {
    void loadAsset();
    void loadOwners();
    void transfers.reload();
    void history.reload();
    void loadPrice().catch(() => undefined); // the last shown price stays; the next event retries
    chart.reload();
  });
  const reloadPrices = debounced(() => chart.reload(), 500);

  const unsubscribe = ctx.live.subscribe(
    { assetId },
    {
      onEvent(event) {
        if (event.type === 'priceUpdate') {
          if (event.data.currency === QUOTE_CURRENCY) showPrice(event.data);
          reloadPrices();
        } else {
          reload();
        }
      },
      onFreshStart: reload,
    },
  );

  void loadAsset();
  void loadOwners();
  void transfers.reload();
  void history.reload();
  void loadPrice().catch((error: unknown) => {
    if (!signal.aborted) replace(priceValue, problemBox(problemOf(error)));
  });
  return () => {
    unsubscribe();
    chart.destroy();
  };
}
