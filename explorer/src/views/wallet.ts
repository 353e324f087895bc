// The wallet view: an address (checked as EIP-55 while typed), its currency balances and its NFTs,
// and its transfer history, each list paged with the API's cursors, kept current by newNFT/newTransfer
// events for the wallet. A currency's timed part (issue 36, timed grants: `expiring`) is shown under
// its balance: "of which 5 end in 3 h".
// In your own wallet you can also mint and transfer.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import { PAGE_SIZE } from '../config.ts';
import type { LiveEvent } from '../live/connection.ts';
import { paths } from '../router.ts';
import { addressField, checkAddress } from '../ui/address.ts';
import { h, replace, skeleton } from '../ui/dom.ts';
import { formatTime, shortAddress, ZERO_ADDRESS } from '../ui/format.ts';
import { CursorPager } from '../ui/pager.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { toast } from '../ui/toast.ts';
import { chainBadge, endsIn, isOnChain, nftCard } from './asset-card.ts';
import { type Cleanup, debounced, type ViewContext } from './context.ts';
import { openLootBoxDialog } from './loot-box.ts';
import { openMintDialog } from './mint-form.ts';
import { openTradeDialog } from './trade-form.ts';
import { openTransferDialog } from './transfer-form.ts';
import { transferHistory } from './transfer-history.ts';

type Holding = Schemas['WalletAssetHolding'];

const ACTIVITY_KEPT = 8;

/**
 * The timed part of a currency balance, by end time (issue 36): "of which 5 end in 3 h, 2 in 2 days";
 * units past their end count in the balance until the sweep burns them. Null when none ends.
 */
function expiringNote(holding: Holding): HTMLElement | null {
  const parts = holding.expiring ?? [];
  if (parts.length === 0) return null;
  return h(
    'div',
    { class: 'muted small', 'data-testid': 'expiring' },
    'of which ',
    parts.map((part, index) => {
      const ended = Date.parse(part.expiresAt) <= Date.now();
      return [
        index > 0 ? ', ' : null,
        `${part.amount} `,
        h(
          'time',
          { datetime: part.expiresAt, title: formatTime(part.expiresAt) },
          ended ? 'ended, being removed' : `${index === 0 ? 'end ' : ''}${endsIn(part.expiresAt)}`,
        ),
      ];
    }),
  );
}

/** The form at the top of the wallet view (and the home page): go to any wallet. */
export function walletSearch(ctx: ViewContext, current = ''): HTMLFormElement {
  const field = addressField({ label: 'Wallet address', name: 'address', value: current, required: true });
  const form = h(
    'form',
    { class: 'address-form', role: 'search' },
    field.root,
    h('button', { type: 'submit' }, 'Show wallet'),
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const address = field.value();
    if (address) ctx.navigate(paths.wallet(address));
    else field.input.focus();
  });
  return form;
}

export function walletView(ctx: ViewContext, rawAddress: string): Cleanup {
  const check = checkAddress(rawAddress);
  if (check.state !== 'valid') {
    replace(
      ctx.root,
      h('h1', {}, 'Wallet'),
      walletSearch(ctx, rawAddress),
      problemBox({
        type: 'about:blank',
        title: 'Not a wallet address',
        status: 0,
        detail: check.state === 'invalid' ? check.message : 'Enter an address.',
      }),
    );
    return () => undefined;
  }
  const address = check.address;
  if (address !== rawAddress) {
    // One URL per wallet: the EIP-55 form.
    ctx.navigate(paths.wallet(address), { replace: true });
    return () => undefined;
  }
  const mine = ctx.session.controls(address);

  const currencyBody = h('div', { class: 'currency-list', 'aria-busy': 'true' });
  const nftGrid = h('div', { class: 'nft-grid', 'aria-busy': 'true' });
  const activity = h('ol', { class: 'activity', 'aria-live': 'polite' });
  const activitySection = h(
    'section',
    { class: 'panel', 'aria-labelledby': 'activity-heading', hidden: true },
    h('h2', { id: 'activity-heading' }, 'Live activity'),
    activity,
  );
  const history = transferHistory(
    ctx.session,
    { wallet: address, nameOf: (id) => assetName(id) },
    ctx.signal,
  );
  const currencyPager = new CursorPager('currencies', () => void loadCurrencies());
  const nftPager = new CursorPager('NFTs', () => void loadNfts());
  const mintButton = mine ? h('button', { type: 'button' }, 'Mint an NFT') : null;
  // Signed in, on someone else's wallet: propose a trade from your own (the first you control).
  const ownWallet = ctx.session.user?.wallets[0];
  const tradeButton =
    !mine && ownWallet && address !== ZERO_ADDRESS
      ? h('button', { type: 'button' }, 'Propose a trade')
      : null;

  replace(
    ctx.root,
    walletSearch(ctx, address),
    h(
      'div',
      { class: 'page-heading' },
      h('h1', {}, 'Wallet ', h('code', { class: 'address', 'data-testid': 'wallet-address' }, address)),
      mine ? h('span', { class: 'badge' }, 'Yours') : null,
      mintButton,
      tradeButton,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'currencies-heading' },
      h('h2', { id: 'currencies-heading' }, 'Currencies'),
      currencyBody,
      currencyPager.element,
    ),
    // Live activity before the NFTs: in view when something happens, not below a long grid.
    activitySection,
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'nfts-heading' },
      h('h2', { id: 'nfts-heading' }, 'NFTs'),
      nftGrid,
      nftPager.element,
    ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'wallet-transfers-heading' },
      h('h2', { id: 'wallet-transfers-heading' }, 'Transfer history'),
      history.list,
      history.pager,
    ),
  );
  currencyBody.append(...skeleton('row', 2));
  nftGrid.append(...skeleton('card', 4));

  let seenNfts: Set<string> | null = null;
  let seenCurrencies: Map<string, string> | null = null;

  async function page(kind: 'nft' | 'fungible', cursor: string | undefined) {
    return unwrap(
      await ctx.session.api.GET('/wallets/{wallet_id}/assets', {
        params: {
          path: { wallet_id: address },
          query: { kind, cursor, limit: kind === 'nft' ? PAGE_SIZE.nfts : PAGE_SIZE.currencies },
        },
        signal: ctx.signal,
      }),
    );
  }

  const transferButton = (holding: Holding) => {
    // A borrowed item moves only back to its lender, at its end (409 item-lent otherwise).
    if (!mine || isOnChain(holding.asset) || holding.asset.lender) return null;
    const button = h('button', { type: 'button', class: 'secondary small' }, 'Transfer');
    button.setAttribute('aria-label', `Transfer ${holding.asset.name}`);
    button.addEventListener('click', () =>
      openTransferDialog(
        ctx.session,
        { asset: holding.asset, from: address, balance: holding.balance },
        (transfer) => {
          toast(`Sent ${transfer.amount} of ${holding.asset.name} to ${shortAddress(transfer.to)}.`);
          reload();
        },
      ),
    );
    return button;
  };

  async function loadCurrencies(): Promise<void> {
    try {
      const result = await page('fungible', currencyPager.cursor);
      const previous = seenCurrencies;
      seenCurrencies = new Map(result.data.map((holding) => [holding.asset.id, holding.balance]));
      for (const holding of result.data) names.set(holding.asset.id, holding.asset.name);
      currencyPager.update(result.next_cursor);
      if (result.data.length === 0) {
        replace(currencyBody, emptyState('This wallet holds no game currency.'));
      } else {
        replace(
          currencyBody,
          h(
            'table',
            {},
            h('caption', { class: 'visually-hidden' }, 'Currency balances'),
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', { scope: 'col' }, 'Currency'),
                h('th', { scope: 'col', class: 'number' }, 'Balance'),
                mine ? h('th', { scope: 'col' }, h('span', { class: 'visually-hidden' }, 'Actions')) : null,
              ),
            ),
            h(
              'tbody',
              {},
              result.data.map((holding) => {
                const changed = previous !== null && previous.get(holding.asset.id) !== holding.balance;
                return h(
                  'tr',
                  { class: changed ? 'arrived' : '', 'data-asset-id': holding.asset.id },
                  h(
                    'td',
                    {},
                    h('a', { href: paths.asset(holding.asset.id) }, holding.asset.name),
                    ' ',
                    h('span', { class: 'muted' }, holding.asset.symbol ?? ''),
                    chainBadge(holding.asset) ? ' ' : null,
                    chainBadge(holding.asset),
                  ),
                  h('td', { class: 'number' }, holding.balance, expiringNote(holding)),
                  mine ? h('td', { class: 'actions' }, transferButton(holding)) : null,
                );
              }),
            ),
          ),
        );
      }
    } catch (error) {
      if (!ctx.signal.aborted) replace(currencyBody, problemBox(problemOf(error)));
    } finally {
      currencyBody.removeAttribute('aria-busy');
    }
  }

  async function loadNfts(): Promise<void> {
    try {
      const result = await page('nft', nftPager.cursor);
      const previous = seenNfts;
      seenNfts = new Set(result.data.map((holding) => holding.asset.id));
      for (const holding of result.data) names.set(holding.asset.id, holding.asset.name);
      nftPager.update(result.next_cursor);
      if (result.data.length === 0) {
        replace(nftGrid, emptyState(mine ? 'You hold no NFT yet: mint one.' : 'This wallet holds no NFT.'));
      } else {
        replace(
          nftGrid,
          result.data.map((holding) => {
            const card = nftCard(holding.asset, transferButton(holding));
            if (previous !== null && !previous.has(holding.asset.id)) card.classList.add('arrived');
            return card;
          }),
        );
        if (mine) void addOpenButtons(result.data);
      }
    } catch (error) {
      if (!ctx.signal.aborted) replace(nftGrid, problemBox(problemOf(error)));
    } finally {
      nftGrid.removeAttribute('aria-busy');
    }
  }

  /** The loot boxes of each collection seen (issue 36): a box you hold opens from its card. */
  const boxesOf = new Map<string, Promise<Schemas['LootBox'][]>>();
  async function addOpenButtons(holdings: Holding[]): Promise<void> {
    for (const holding of holdings) {
      const { asset } = holding;
      let boxes = boxesOf.get(asset.collection);
      if (!boxes) {
        boxes = ctx.session.api
          .GET('/api/v1/collections/{collection_id}/loot-boxes', {
            params: { path: { collection_id: asset.collection }, query: { limit: 100 } },
            signal: ctx.signal,
          })
          .then((answer) => answer.data?.data ?? [])
          .catch(() => []);
        boxesOf.set(asset.collection, boxes);
      }
      const box = (await boxes).find((candidate) => candidate.name === asset.name);
      const card = nftGrid.querySelector(`[data-asset-id="${CSS.escape(asset.id)}"]`);
      if (!box || !card || card.querySelector('.open-box')) continue;
      const button = h('button', { type: 'button', class: 'small open-box' }, 'Open');
      button.setAttribute('aria-label', `Open ${asset.name}`);
      button.addEventListener('click', () =>
        openLootBoxDialog(ctx.session, box, asset, address, () => {
          toast(`Opened ${asset.name}.`);
          reload();
        }),
      );
      card.append(button);
    }
  }

  const reload = debounced(() => {
    void loadCurrencies();
    void loadNfts();
    void history.reload();
  });

  /** Asset names seen so far; a transfer event names its asset by id only. */
  const names = new Map<string, string>();
  async function assetName(id: string): Promise<string> {
    const known = names.get(id);
    if (known) return known;
    const result = await ctx.session.api
      .GET('/assets/{asset_id}', { params: { path: { asset_id: id } }, signal: ctx.signal })
      .catch(() => null);
    const name = result?.data?.name ?? id;
    names.set(id, name);
    return name;
  }

  async function describe(event: LiveEvent): Promise<string> {
    if (event.type === 'newNFT') return `${event.data.name} was minted into this wallet.`;
    if (event.type === 'priceUpdate') return `New price for ${await assetName(event.data.assetId)}.`;
    if (event.type === 'assetUpdated') return `${event.data.name} was updated.`;
    // The wallet's subscription asks for newNFT and newTransfer only.
    if (event.type !== 'newTransfer') return `${event.type}.`;
    const transfer = event.data;
    const what = `${transfer.amount} × ${await assetName(transfer.assetId)}`;
    if (transfer.from === ZERO_ADDRESS) return `${what} minted into this wallet.`;
    return transfer.to.toLowerCase() === address.toLowerCase()
      ? `Received ${what} from ${shortAddress(transfer.from)}.`
      : `Sent ${what} to ${shortAddress(transfer.to)}.`;
  }

  function addActivity(event: LiveEvent): void {
    const item = h('li', {}, h('time', { datetime: event.occurredAt }, formatTime(event.occurredAt)), ' …');
    activitySection.hidden = false;
    activity.prepend(item);
    while (activity.children.length > ACTIVITY_KEPT) activity.lastElementChild?.remove();
    void describe(event).then((text) => item.lastChild?.replaceWith(` ${text}`));
  }

  const unsubscribe = ctx.live.subscribe(
    { walletId: address, events: ['newNFT', 'newTransfer'] },
    {
      onEvent(event) {
        addActivity(event);
        reload();
      },
      onFreshStart: reload,
    },
  );

  tradeButton?.addEventListener('click', () => {
    if (!ownWallet) return;
    openTradeDialog(ctx.session, ownWallet, address, () =>
      toast('Trade proposed: it waits for their answer in ', h('a', { href: paths.trades() }, 'Trades'), '.'),
    );
  });

  mintButton?.addEventListener('click', () =>
    openMintDialog(ctx.session, address, (asset) => {
      toast('Minted ', h('a', { href: paths.asset(asset.id) }, asset.name), '.');
      reload();
    }),
  );

  void loadCurrencies();
  void loadNfts();
  void history.reload();
  return unsubscribe;
}
