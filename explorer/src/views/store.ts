// A collection's store (issue 36): its offers (price, what each grants, the limits left, the sale
// window), buying one (a quantity where more than one unit may be bought; the offer's `version` sent,
// so terms changed since the page read them are refused with 409 offer-version-changed and shown
// again; one Idempotency-Key per submission; an offer priced in items by template lists the buying
// wallet's matching NFTs to tick, the service never picks them), a box to redeem a claim code, and
// the collection's loot boxes with their published odds, opened from the boxes you hold
// (loot-box.ts). The sold and left counts follow the collection's `storePurchase` events live.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import { paths } from '../router.ts';
import { h, replace, skeleton, uid } from '../ui/dom.ts';
import { labelled, select, textInput } from '../ui/field.ts';
import { formatTime, shortAddress } from '../ui/format.ts';
import { emptyState, problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';
import { toast } from '../ui/toast.ts';
import { type Cleanup, debounced, type ViewContext } from './context.ts';
import { oddsTable, openLootBoxDialog, pityText } from './loot-box.ts';

type Offer = Schemas['StoreOffer'];
type Grant = Schemas['StoreGrant'];
type Amount = Schemas['StoreAmount'];
type LootBox = Schemas['LootBox'];
type Holding = Schemas['MyAssetHolding'];
type ItemPrice = Extract<Schemas['StorePrice'], { nft: unknown }>;

const itemPricesOf = (offer: Offer) => offer.price.filter((part): part is ItemPrice => 'nft' in part);

/** The most units one purchase buys (the contract's `quantity` maximum). */
const MAX_QUANTITY = 20;

function amounts(list: readonly { assetId: string; amount: string }[]): string {
  return list.map((item) => `${item.amount} ${item.assetId}`).join(' + ');
}

/** A price: its currency amounts and its items by template ("3 × Iron Ore"); "Free" when empty. */
function priceText(price: readonly Schemas['StorePrice'][]): string {
  if (price.length === 0) return 'Free';
  return price
    .map((item) =>
      'nft' in item ? `${item.nft.quantity} × ${item.nft.name}` : `${item.amount} ${item.assetId}`,
    )
    .join(' + ');
}

/** "1 h", "2 days", "45 min": a rental's length or the time left. */
export function duration(seconds: number): string {
  if (seconds < 3600) return `${Math.max(1, Math.round(seconds / 60))} min`;
  if (seconds < 2 * 86_400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} days`;
}

export function describeGrant(grant: Grant): string {
  if ('assetId' in grant) return `${grant.amount} ${grant.assetId}`;
  const notes = [
    grant.nft.expiresInSeconds ? `for ${duration(grant.nft.expiresInSeconds)}` : null,
    grant.nft.soulbound ? 'soulbound' : null,
  ].filter(Boolean);
  return `${grant.nft.name} (NFT${notes.length > 0 ? `, ${notes.join(', ')}` : ''})`;
}

/** Units still buyable by the wallet (null: no limit), from the offer's limits and counts. */
function unitsLeft(offer: Offer): number | null {
  const total = offer.totalLimit === null ? null : offer.totalLimit - offer.sold;
  const wallet =
    offer.perWalletLimit === null || offer.walletBought === undefined
      ? null
      : offer.perWalletLimit - offer.walletBought;
  if (total === null) return wallet;
  if (wallet === null) return total;
  return Math.min(total, wallet);
}

function windowText(offer: Offer, now: number): string | null {
  if (offer.startsAt && Date.parse(offer.startsAt) > now) return `On sale from ${formatTime(offer.startsAt)}`;
  if (offer.endsAt && Date.parse(offer.endsAt) <= now) return `Ended ${formatTime(offer.endsAt)}`;
  if (offer.endsAt) return `On sale until ${formatTime(offer.endsAt)}`;
  return null;
}

function terms(offer: Offer): HTMLElement {
  const now = Date.now();
  const rows: [string, string][] = [
    ['Price', priceText(offer.price)],
    ['You get', offer.grants.map(describeGrant).join(' + ')],
  ];
  const limits: string[] = [];
  if (offer.totalLimit !== null) limits.push(`${offer.totalLimit - offer.sold} of ${offer.totalLimit} left`);
  if (offer.perWalletLimit !== null)
    limits.push(
      offer.walletBought === undefined
        ? `${offer.perWalletLimit} per wallet`
        : `${Math.max(0, offer.perWalletLimit - offer.walletBought)} of ${offer.perWalletLimit} left for your wallet`,
    );
  if (limits.length > 0) rows.push(['Limits', limits.join('; ')]);
  const window = windowText(offer, now);
  if (window) rows.push(['Window', window]);
  return h(
    'dl',
    { class: 'facts offer-terms' },
    rows.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
  );
}

function receipt(purchase: Schemas['StorePurchaseResult'], offer: Offer): HTMLElement {
  const nftIds = new Set(purchase.nfts.map((nft) => nft.id));
  const currencies: Amount[] = purchase.purchase.granted.filter((item) => !nftIds.has(item.assetId));
  return h(
    'div',
    { class: 'receipt', 'data-testid': 'receipt' },
    h(
      'p',
      { class: 'outcome-title' },
      `Bought ${purchase.purchase.quantity} × ${offer.name}`,
      purchase.purchase.paid.length > 0 ? ` for ${amounts(purchase.purchase.paid)}.` : '.',
    ),
    currencies.length > 0 ? h('p', {}, `Received ${amounts(currencies)}.`) : null,
    purchase.nfts.length > 0
      ? h(
          'p',
          {},
          'Received ',
          purchase.nfts.map((nft, i) => [i > 0 ? ', ' : '', h('a', { href: paths.asset(nft.id) }, nft.name)]),
          '.',
        )
      : null,
  );
}

/** Every collection's store, from the header's "Stores". */
export function storesView(ctx: ViewContext): Cleanup {
  document.title = 'Stores · GATS Explorer';
  const list = h('div', { class: 'collection-grid', 'aria-busy': 'true' }, skeleton('row', 2));
  replace(
    ctx.root,
    h('h1', {}, 'Stores'),
    h(
      'section',
      { class: 'panel', 'aria-label': 'Collections' },
      h('p', { class: 'muted' }, 'Each game sells items, loot boxes and rentals in its own store.'),
      list,
    ),
  );
  void ctx.session.api
    .GET('/api/v1/collections', { params: { query: { limit: 100 } }, signal: ctx.signal })
    .then(unwrap)
    .then((page) =>
      replace(
        list,
        page.data.length === 0
          ? emptyState('No game has a store yet.')
          : page.data.map((collection) =>
              h(
                'article',
                { class: 'collection-card' },
                h('h2', {}, h('a', { href: paths.store(collection.id) }, collection.name)),
                h('p', { class: 'muted small' }, collection.id),
              ),
            ),
      ),
    )
    .catch((error: unknown) => {
      if (!ctx.signal.aborted) replace(list, problemBox(problemOf(error)));
    })
    .finally(() => list.removeAttribute('aria-busy'));
  return () => undefined;
}

export function storeView(ctx: ViewContext, collection: string): Cleanup {
  const { session, signal } = ctx;
  const wallets = session.user?.wallets ?? [];
  document.title = `Store of ${collection} · GATS Explorer`;
  const walletSelect =
    wallets.length > 1
      ? select(
          'wallet',
          wallets.map((w) => [w, shortAddress(w)] as const),
          wallets[0],
        )
      : null;
  const buyer = () => walletSelect?.value ?? wallets[0] ?? null;
  const offerList = h('div', { class: 'offer-list', 'aria-busy': 'true' }, skeleton('row', 3));
  /** The caller's NFTs of the collection (the boxes to open, the items to pay with). */
  let holdings: Holding[] = [];
  const painters = new Set<() => void>();
  const countUpdaters = new Map<string, (offer: Offer) => void>();
  const boxList = h('div', { class: 'box-list', 'aria-busy': 'true' }, skeleton('row', 2));

  replace(
    ctx.root,
    h(
      'div',
      { class: 'page-heading' },
      h('h1', {}, 'Store of ', h('span', { 'data-testid': 'store-collection' }, collection)),
    ),
    wallets.length === 0
      ? h('p', { class: 'warning' }, 'Your account has no wallet: you can look, not buy.')
      : h(
          'p',
          { class: 'muted' },
          walletSelect
            ? labelled('Buy with wallet', walletSelect)
            : [
                'Buying with your wallet ',
                h('a', { href: paths.wallet(wallets[0] ?? '') }, shortAddress(wallets[0] ?? '')),
                '.',
              ],
        ),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'offers-heading' },
      h('h2', { id: 'offers-heading' }, 'Offers'),
      offerList,
    ),
    redeemPanel(ctx, buyer),
    h(
      'section',
      { class: 'panel', 'aria-labelledby': 'boxes-heading' },
      h('h2', { id: 'boxes-heading' }, 'Loot boxes'),
      h(
        'p',
        { class: 'muted small' },
        'The odds of every box are published before anyone opens one. Each opening can be checked afterwards.',
      ),
      boxList,
    ),
  );

  /** Reads the offer (with the buying wallet's count when it has a per-wallet limit). */
  async function readOffer(id: string): Promise<Offer> {
    const wallet = buyer();
    return unwrap(
      await session.api.GET('/api/v1/store-offers/{offer_id}', {
        params: { path: { offer_id: id }, query: wallet ? { wallet } : {} },
        signal,
      }),
    );
  }

  function offerCard(initial: Offer): HTMLElement {
    let offer = initial;
    const guard = new SubmissionGuard();
    const headingId = uid('offer');
    const termsBox = h('div', {}, terms(offer));
    const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
    const quantity = textInput('quantity', {
      type: 'number',
      min: 1,
      max: MAX_QUANTITY,
      value: 1,
      inputmode: 'numeric',
      class: 'quantity-input',
    });
    const quantityField = labelled('Quantity', quantity);
    const submit = h('button', { type: 'submit' }, 'Buy');
    submit.setAttribute('aria-describedby', headingId);
    // Items by template: the buying wallet's matching NFTs, ticked by the buyer.
    const picker = h('fieldset', { class: 'pay-items', 'data-testid': 'pay-items' });
    const form = h('form', { class: 'offer-buy' }, picker, quantityField, submit);
    const card = h(
      'article',
      { class: 'offer-card', 'aria-labelledby': headingId, 'data-offer-id': offer.id },
      h('h3', { id: headingId }, offer.name),
      termsBox,
      wallets.length > 0 ? form : null,
      status,
    );

    const paintPicker = () => {
      const prices = itemPricesOf(offer);
      picker.hidden = prices.length === 0;
      if (prices.length === 0) return;
      const ticked = new Set(
        [...picker.querySelectorAll<HTMLInputElement>('input:checked')].map((input) => input.value),
      );
      const wallet = buyer()?.toLowerCase();
      replace(
        picker,
        h('legend', {}, 'Pay with'),
        prices.map(({ nft }) => {
          const mine = holdings.filter(
            (held) =>
              held.wallet.toLowerCase() === wallet && held.asset.name === nft.name && !held.asset.burned,
          );
          return h(
            'div',
            { class: 'pay-template' },
            h(
              'p',
              { class: 'small' },
              `Tick ${nft.quantity} × ${nft.name} a unit (you hold ${mine.length}).`,
            ),
            mine.map((held) => {
              const box = h('input', { type: 'checkbox', name: 'pay-item', value: held.asset.id });
              box.dataset.template = nft.name;
              box.checked = ticked.has(held.asset.id);
              return h(
                'label',
                { class: 'pay-item' },
                box,
                ` ${held.asset.name} …${held.asset.id.slice(-6)}`,
              );
            }),
          );
        }),
      );
    };
    painters.add(paintPicker);
    countUpdaters.set(offer.id, (next) => {
      // Only the counts follow live: the terms shown stay those the buyer is accepting.
      offer = {
        ...offer,
        sold: next.sold,
        ...(next.walletBought !== undefined && { walletBought: next.walletBought }),
      };
      refresh();
    });

    const refresh = () => {
      paintPicker();
      replace(termsBox, terms(offer));
      const left = unitsLeft(offer);
      const most = Math.min(MAX_QUANTITY, left ?? MAX_QUANTITY);
      // One unit per wallet (or one left): no quantity to choose.
      quantityField.hidden = most <= 1;
      quantity.max = String(Math.max(1, most));
      const now = Date.now();
      const closed =
        offer.status !== 'active' ||
        (offer.startsAt !== null && Date.parse(offer.startsAt) > now) ||
        (offer.endsAt !== null && Date.parse(offer.endsAt) <= now);
      submit.disabled = closed || left === 0;
      submit.textContent = offer.status !== 'active' ? 'Closed' : left === 0 ? 'Sold out' : 'Buy';
    };
    refresh();

    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const wallet = buyer();
      if (guard.busy || !wallet) return;
      const units = quantityField.hidden ? 1 : Number(quantity.value);
      if (!Number.isInteger(units) || units < 1 || units > Number(quantity.max)) {
        replace(
          status,
          h('p', { class: 'problem', role: 'alert' }, `Choose a quantity from 1 to ${quantity.max}.`),
        );
        quantity.focus();
        return;
      }
      const items = [...picker.querySelectorAll<HTMLInputElement>('input:checked')];
      for (const { nft } of itemPricesOf(offer)) {
        const count = items.filter((input) => input.dataset.template === nft.name).length;
        if (count !== nft.quantity * units) {
          replace(
            status,
            h(
              'p',
              { class: 'problem', role: 'alert' },
              `Tick ${nft.quantity * units} × ${nft.name} to pay (${count} ticked).`,
            ),
          );
          return;
        }
      }
      const body: Schemas['PurchaseStoreOfferRequest'] = {
        wallet,
        version: offer.version,
        quantity: units,
        ...(items.length > 0 && { items: items.map((input) => input.value) }),
      };
      submit.disabled = true;
      form.setAttribute('aria-busy', 'true');
      replace(status, h('p', { class: 'muted' }, 'Buying…'));
      try {
        const bought = await guard.run(body, async (key) =>
          unwrap(
            await session.api.POST('/api/v1/store-offers/{offer_id}/purchase', {
              params: { path: { offer_id: offer.id }, header: { 'Idempotency-Key': key } },
              body,
            }),
          ),
        );
        if (!bought) return;
        replace(status, receipt(bought, offer));
        toast(`Bought ${offer.name}.`);
        // A box bought is listed under the loot boxes at once; items paid leave the pickers.
        if (bought.nfts.length > 0 || items.length > 0) void loadBoxes();
        offer = await readOffer(offer.id).catch(() => offer);
      } catch (error) {
        const problem = problemOf(error);
        if (problem.type === '/problems/offer-version-changed') {
          // The studio changed the offer after this page read it: show the new terms, buy again to accept.
          offer = await readOffer(offer.id).catch(() => offer);
          replace(
            status,
            h(
              'div',
              { class: 'problem', role: 'alert', 'data-testid': 'terms-changed' },
              h('p', { class: 'problem-title' }, 'The terms of this offer changed'),
              h(
                'p',
                {},
                `Nothing was bought. It now costs ${offer.price.length > 0 ? priceText(offer.price) : 'nothing'} for ${offer.grants.map(describeGrant).join(' + ')} (version ${offer.version}). Press Buy again to accept the new terms.`,
              ),
            ),
          );
        } else {
          replace(
            status,
            problemBox(problem, {
              '/body/quantity': 'Quantity',
              '/body/wallet': 'Wallet',
              '/body/items': 'Pay with',
            }),
          );
          if (problem.type === '/problems/offer-limit-reached')
            offer = await readOffer(offer.id).catch(() => offer);
        }
      } finally {
        form.removeAttribute('aria-busy');
        refresh();
      }
    });
    return card;
  }

  async function loadOffers(): Promise<void> {
    painters.clear();
    countUpdaters.clear();
    try {
      const page = unwrap(
        await session.api.GET('/api/v1/collections/{collection_id}/store-offers', {
          params: { path: { collection_id: collection }, query: { status: 'active', limit: 100 } },
          signal,
        }),
      );
      // The wallet's own counts matter only where a per-wallet limit applies.
      const offers = await Promise.all(
        page.data.map((offer) => (offer.perWalletLimit !== null && buyer() ? readOffer(offer.id) : offer)),
      );
      replace(
        offerList,
        offers.length === 0
          ? emptyState('Nothing is on sale in this store right now.')
          : offers.map(offerCard),
      );
    } catch (error) {
      if (!signal.aborted) replace(offerList, problemBox(problemOf(error)));
    } finally {
      offerList.removeAttribute('aria-busy');
    }
  }

  function boxCard(box: LootBox, held: Schemas['MyAssetHolding'][]): HTMLElement {
    const headingId = uid('box');
    const mine = held.filter((holding) => holding.asset.name === box.name && !holding.asset.burned);
    const first = mine[0];
    const open = first ? h('button', { type: 'button' }, `Open a ${box.name}`) : null;
    open?.addEventListener('click', () =>
      openLootBoxDialog(session, box, first.asset, first.wallet, () => void loadBoxes()),
    );
    return h(
      'article',
      { class: 'offer-card', 'aria-labelledby': headingId, 'data-box-id': box.id },
      h('h3', { id: headingId }, box.name, box.paid ? h('span', { class: 'badge' }, 'Sold for value') : null),
      oddsTable(box),
      box.pity ? h('p', { class: 'small' }, pityText(box)) : null,
      h(
        'p',
        { class: 'small' },
        mine.length === 0 ? 'You hold none.' : `You hold ${mine.length}.`,
        ' ',
        open,
      ),
    );
  }

  async function loadBoxes(): Promise<void> {
    try {
      const [boxes, held] = await Promise.all([
        session.api
          .GET('/api/v1/collections/{collection_id}/loot-boxes', {
            params: { path: { collection_id: collection }, query: { limit: 100 } },
            signal,
          })
          .then(unwrap),
        wallets.length === 0
          ? Promise.resolve({ data: [] as Schemas['MyAssetHolding'][] })
          : session.api
              .GET('/api/v1/assets', { params: { query: { kind: 'nft', collection, limit: 100 } }, signal })
              .then(unwrap),
      ]);
      holdings = held.data;
      for (const paint of painters) paint();
      replace(
        boxList,
        boxes.data.length === 0
          ? emptyState('This collection has no loot box.')
          : boxes.data.map((box) => boxCard(box, held.data)),
      );
    } catch (error) {
      if (!signal.aborted) replace(boxList, problemBox(problemOf(error)));
    } finally {
      boxList.removeAttribute('aria-busy');
    }
  }

  /** Re-reads the offers whose units sold changed (live), keeping each card's form as it is. */
  const stale = new Set<string>();
  const recount = debounced(() => {
    const ids = stale.size > 0 ? [...stale] : [...countUpdaters.keys()];
    stale.clear();
    for (const id of ids)
      void readOffer(id)
        .then((offer) => countUpdaters.get(id)?.(offer))
        .catch(() => undefined);
  });
  const unsubscribe = ctx.live.subscribe(
    { collection, events: ['storePurchase'] },
    {
      onEvent(event) {
        if (event.type !== 'storePurchase' || !countUpdaters.has(event.data.offerId)) return;
        stale.add(event.data.offerId);
        recount();
      },
      onFreshStart: recount,
    },
  );

  walletSelect?.addEventListener('change', () => void loadOffers());
  void loadOffers();
  void loadBoxes();
  return unsubscribe;
}

/** A claim code redeemed into the buying wallet. */
function redeemPanel(ctx: ViewContext, buyer: () => string | null): HTMLElement {
  const guard = new SubmissionGuard();
  const code = textInput('claim-code', {
    required: true,
    maxlength: 64,
    spellcheck: 'false',
    autocapitalize: 'characters',
  });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Redeem');
  const form = h('form', { class: 'address-form redeem-form' }, labelled('Claim code', code), submit);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const wallet = buyer();
    if (guard.busy || !wallet) return;
    const body: Schemas['RedeemClaimCodeRequest'] = { wallet, code: code.value.trim() };
    if (body.code === '') {
      code.focus();
      return;
    }
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    replace(status, h('p', { class: 'muted' }, 'Redeeming…'));
    try {
      const redeemed = await guard.run(body, async (key) =>
        unwrap(
          await ctx.session.api.POST('/api/v1/claim-codes/redeem', {
            params: { header: { 'Idempotency-Key': key } },
            body,
          }),
        ),
      );
      if (!redeemed) return;
      const nftIds = new Set(redeemed.nfts.map((nft) => nft.id));
      const currencies = redeemed.purchase.granted.filter((item) => !nftIds.has(item.assetId));
      replace(
        status,
        h(
          'p',
          { class: 'outcome-title', 'data-testid': 'redeemed' },
          'Redeemed: ',
          [
            currencies.length > 0 ? amounts(currencies) : null,
            ...redeemed.nfts.map((nft) => h('a', { href: paths.asset(nft.id) }, nft.name)),
          ]
            .filter((part) => part !== null)
            .flatMap((part, i) => (i > 0 ? [' + ', part] : [part])),
          '.',
        ),
      );
      code.value = '';
    } catch (error) {
      replace(status, problemBox(problemOf(error), { '/body/code': 'Claim code' }));
    } finally {
      submit.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
  return h(
    'section',
    { class: 'panel', 'aria-labelledby': 'redeem-heading' },
    h('h2', { id: 'redeem-heading' }, 'Redeem a code'),
    h('p', { class: 'muted small' }, 'A claim code from the studio gives its items to your wallet, once.'),
    form,
    status,
  );
}
