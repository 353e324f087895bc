// What the market page and the asset page share: the currencies a collection accepts, asset names,
// price order, buying a listing (one Idempotency-Key per submission; a listing sold meanwhile
// answers 409 listing-not-active, said in words), and the dialogs that list an item for sale, start
// an auction, and make an offer (for an item, any item of a collection, or a trait's items).
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { openDialog } from '../ui/dialog.ts';
import { h, replace } from '../ui/dom.ts';
import { labelled, select, textInput } from '../ui/field.ts';
import { shortAddress } from '../ui/format.ts';
import { problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';

type Listing = Schemas['Listing'];
type Offer = Schemas['Offer'];

export const EXPIRIES = [
  ['', 'no end'],
  ['3600', 'an hour'],
  ['86400', 'a day'],
  ['604800', 'a week'],
] as const;

const FIELD_LABELS: Record<string, string> = {
  '/body/price': 'Price',
  '/body/amount': 'Amount',
  '/body/currency': 'Currency',
  '/body/expiresIn': 'Open for',
  '/body/reservePrice': 'Reserve price',
  '/body/minIncrement': 'Minimum increment',
  '/body/duration': 'Ends in',
};

/** Compares two non-negative decimal strings exactly ("9.5" < "10"). */
export function compareAmounts(a: string, b: string): number {
  const [ai = '0', af = ''] = a.split('.');
  const [bi = '0', bf = ''] = b.split('.');
  const ia = ai.replace(/^0+/, '');
  const ib = bi.replace(/^0+/, '');
  if (ia.length !== ib.length) return ia.length - ib.length;
  if (ia !== ib) return ia < ib ? -1 : 1;
  const width = Math.max(af.length, bf.length);
  const fa = af.padEnd(width, '0');
  const fb = bf.padEnd(width, '0');
  return fa === fb ? 0 : fa < fb ? -1 : 1;
}

/** Names of assets by id, each read once per page. */
export function assetNames(session: Session, signal: AbortSignal) {
  const cache = new Map<string, Promise<Schemas['Asset'] | null>>();
  const get = (id: string) => {
    let entry = cache.get(id);
    if (!entry) {
      entry = session.api
        .GET('/assets/{asset_id}', { params: { path: { asset_id: id } }, signal })
        .then((result) => (result.data ? result.data : null))
        .catch(() => null);
      cache.set(id, entry);
    }
    return entry;
  };
  return {
    get,
    async name(id: string): Promise<string> {
      return (await get(id))?.name ?? id;
    },
  };
}

/**
 * The currencies to price in: the collection's accepted ones when it restricts them, else the
 * currencies the player holds (what they can pay with), the collection's own first.
 */
export async function currencyChoices(
  session: Session,
  collection: string,
  signal: AbortSignal,
): Promise<{ choices: [string, string][]; settings: Schemas['MarketSettings'] }> {
  const [settings, holdings] = await Promise.all([
    session.api
      .GET('/api/v1/collections/{collection_id}/market/settings', {
        params: { path: { collection_id: collection } },
        signal,
      })
      .then(unwrap),
    session.api
      .GET('/api/v1/assets', { params: { query: { kind: 'fungible', limit: 100 } }, signal })
      .then(unwrap),
  ]);
  const held = holdings.data
    .map((holding) => holding.asset)
    .sort((a, b) => Number(b.collection === collection) - Number(a.collection === collection));
  const label = (id: string) => {
    const asset = held.find((candidate) => candidate.id === id);
    return asset ? `${asset.name}${asset.symbol ? ` (${asset.symbol})` : ''}` : id;
  };
  const ids = settings.currencies ?? held.map((asset) => asset.id);
  return { choices: ids.map((id) => [id, label(id)]), settings };
}

/** Reads a decimal amount typed by the user; null when it is not one. */
function decimal(input: HTMLInputElement): string | null {
  const value = input.value.trim();
  return /^[0-9]+(\.[0-9]+)?$/.test(value) && Number(value) > 0 ? value : null;
}

function priceInput(): HTMLInputElement {
  return textInput('price', {
    inputmode: 'decimal',
    pattern: '[0-9]+([.][0-9]+)?',
    required: true,
    placeholder: '0',
  });
}

interface FormParts {
  title: string;
  fields: HTMLElement[];
  submitLabel: string;
  currencies: [string, string][];
  /** Builds the request body; a string is a mistake to show instead. */
  body(price: string, currency: string, expiresIn: number | undefined): unknown;
  send(body: unknown, key: string): Promise<void>;
}

/**
 * A dialog around `fields` whose submission builds a body (a string is a mistake to show instead) and
 * sends it with one Idempotency-Key per submission (a double click sends once); closed when sent.
 */
function submitDialog(
  title: string,
  fields: (HTMLElement | null)[],
  submitLabel: string,
  build: () => unknown,
  send: (body: unknown, key: string) => Promise<void>,
): { status: HTMLElement } {
  const guard = new SubmissionGuard();
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, submitLabel);
  const form = h(
    'form',
    { class: 'stack' },
    fields.filter((field): field is HTMLElement => field !== null),
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  const dialog = openDialog(title, form);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy) return;
    const body = build();
    if (typeof body === 'string') {
      replace(status, h('p', { class: 'problem', role: 'alert' }, body));
      return;
    }
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    replace(status, h('p', { class: 'muted' }, 'Sending…'));
    try {
      const done = await guard.run(body, async (key) => {
        await send(body, key);
        return true;
      });
      if (done) dialog.close();
    } catch (error) {
      replace(status, problemBox(problemOf(error), FIELD_LABELS));
    } finally {
      submit.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
  return { status };
}

/** A dialog with a price, a currency and an expiry. */
function priceDialog(parts: FormParts): void {
  const price = priceInput();
  const currency = select('currency', parts.currencies);
  const expiry = select('expires', EXPIRIES, '');
  const { status } = submitDialog(
    parts.title,
    [
      ...parts.fields,
      labelled('Price', price, 'The whole price, in the currency below.'),
      labelled('Currency', currency),
      labelled('Open for', expiry),
    ],
    parts.submitLabel,
    () => {
      const amount = decimal(price);
      if (amount === null) {
        price.focus();
        return 'Enter a price above 0, such as 12 or 12.5.';
      }
      return parts.body(amount, currency.value, expiry.value ? Number(expiry.value) : undefined);
    },
    parts.send,
  );
  noCurrency(status, parts.currencies);
  price.focus();
}

function noCurrency(status: HTMLElement, currencies: [string, string][]): void {
  if (currencies.length === 0)
    replace(
      status,
      h('p', { class: 'problem', role: 'alert' }, 'You hold no currency this collection accepts.'),
    );
}

/** How long an auction runs, in seconds. */
export const AUCTION_DURATIONS = [
  ['600', '10 minutes'],
  ['3600', 'an hour'],
  ['86400', 'a day'],
  ['259200', 'three days'],
  ['604800', 'a week'],
] as const;

/**
 * Starts an English auction of the NFT `asset` held by `wallet`: a reserve price, a minimum
 * increment, a currency and an end. The item is escrowed at once; a bid in the last 5 minutes
 * pushes the end (the API's default extension).
 */
export function openAuctionDialog(
  session: Session,
  target: { asset: Schemas['Asset']; wallet: string; currencies: [string, string][] },
  onCreated: (auction: Schemas['Auction']) => void,
): void {
  const { asset, wallet } = target;
  const reserve = priceInput();
  const increment = textInput('increment', {
    inputmode: 'decimal',
    pattern: '[0-9]+([.][0-9]+)?',
    required: true,
    placeholder: '1',
  });
  const currency = select('auction-currency', target.currencies);
  const duration = select('auction-duration', AUCTION_DURATIONS, '86400');
  const { status } = submitDialog(
    `Auction ${asset.name}`,
    [
      h(
        'p',
        { class: 'muted small' },
        `From your wallet ${shortAddress(wallet)}. It is held for the auction at once and goes to the best bidder at the end; without a bid it comes back. You can cancel only before the first bid.`,
      ),
      labelled('Reserve price', reserve, 'The lowest bid accepted.'),
      labelled('Minimum increment', increment, 'How much each bid must beat the best bid by.'),
      labelled('Currency', currency),
      labelled('Ends in', duration, 'A bid in the last 5 minutes pushes the end 5 minutes on.'),
    ],
    'Start auction',
    () => {
      const reservePrice = decimal(reserve);
      if (reservePrice === null) {
        reserve.focus();
        return 'Enter a reserve price above 0, such as 50.';
      }
      const minIncrement = decimal(increment);
      if (minIncrement === null) {
        increment.focus();
        return 'Enter a minimum increment above 0, such as 5.';
      }
      return {
        wallet,
        assetId: asset.id,
        currency: currency.value,
        reservePrice,
        minIncrement,
        duration: Number(duration.value),
      };
    },
    async (body, key) => {
      onCreated(
        unwrap(
          await session.api.POST('/api/v1/auctions', {
            params: { header: { 'Idempotency-Key': key } },
            body: body as Schemas['CreateAuctionRequest'],
          }),
        ),
      );
    },
  );
  noCurrency(status, target.currencies);
  reserve.focus();
}

/** Lists `asset` from `wallet` (an amount for a currency, 1 for an NFT). */
export function openListDialog(
  session: Session,
  target: { asset: Schemas['Asset']; wallet: string; balance: string; currencies: [string, string][] },
  onListed: (listing: Listing) => void,
): void {
  const { asset, wallet } = target;
  const amount =
    asset.kind === 'fungible'
      ? textInput('amount', { inputmode: 'decimal', pattern: '[0-9]+([.][0-9]+)?', required: true })
      : null;
  priceDialog({
    title: `List ${asset.name} for sale`,
    submitLabel: 'List for sale',
    currencies: target.currencies.filter(([id]) => id !== asset.id),
    fields: [
      h(
        'p',
        { class: 'muted small' },
        `From your wallet ${shortAddress(wallet)}. It stays yours until bought.`,
      ),
      amount ? labelled(`Amount (of ${target.balance})`, amount) : null,
    ].filter((field): field is HTMLElement => field !== null),
    body(price, currency, expiresIn) {
      let listed: string | undefined;
      if (amount) {
        const value = decimal(amount);
        if (value === null) return 'Enter the amount to sell.';
        listed = value;
      }
      return {
        wallet,
        assetId: asset.id,
        currency,
        price,
        ...(listed ? { amount: listed } : {}),
        ...(expiresIn ? { expiresIn } : {}),
      };
    },
    async send(body, key) {
      onListed(
        unwrap(
          await session.api.POST('/api/v1/listings', {
            params: { header: { 'Idempotency-Key': key } },
            body: body as Schemas['CreateListingRequest'],
          }),
        ),
      );
    },
  });
}

/** A trait an offer can ask for: an attribute type and its value as text. */
export interface Trait {
  type: string;
  value: string;
}

/**
 * Offers a price for one NFT (`assetId`), any NFT of a collection, or (with `traits` to choose from)
 * any NFT of the collection with one attribute value: a trait offer.
 */
export function openOfferDialog(
  session: Session,
  target: {
    wallet: string;
    assetId?: string;
    collection?: string;
    name: string;
    currencies: [string, string][];
    traits?: Trait[];
  },
  onOffered: (offer: Offer) => void,
): void {
  const traits = target.traits ?? [];
  const which = select('offer-for', [
    ['', 'Any item'],
    ...traits.map((trait, index): [string, string] => [String(index), `${trait.type}: ${trait.value}`]),
  ]);
  priceDialog({
    title: target.assetId
      ? `Make an offer for ${target.name}`
      : `Make an offer for any item of ${target.name}`,
    submitLabel: 'Make offer',
    currencies: target.currencies,
    fields: [
      h(
        'p',
        { class: 'muted small' },
        `The price is reserved in your wallet ${shortAddress(target.wallet)} until the offer is accepted, cancelled or ends.`,
      ),
      !target.assetId && traits.length > 0
        ? labelled('For', which, 'Any item of the collection, or only items with this trait.')
        : null,
    ].filter((field): field is HTMLElement => field !== null),
    body(price, currency, expiresIn) {
      const trait = which.value === '' ? undefined : traits[Number(which.value)];
      return {
        wallet: target.wallet,
        ...(target.assetId ? { assetId: target.assetId } : { collection: target.collection }),
        ...(trait ? { trait } : {}),
        currency,
        price,
        ...(expiresIn ? { expiresIn } : {}),
      };
    },
    async send(body, key) {
      onOffered(
        unwrap(
          await session.api.POST('/api/v1/offers', {
            params: { header: { 'Idempotency-Key': key } },
            body: body as Schemas['CreateOfferRequest'],
          }),
        ),
      );
    },
  });
}

/**
 * Shows what an action did in `status` and moves the focus there: the button pressed is usually gone
 * after the refresh that follows, and the keyboard position must not fall back to the page's top.
 */
function report(status: HTMLElement, ...content: (Node | string)[]): void {
  replace(status, ...content);
  status.setAttribute('tabindex', '-1');
  status.focus();
}

/**
 * A "Buy" button for a listing, paid from `wallet`: one purchase however often it is clicked. A
 * listing closed meanwhile (409 listing-not-active) is said plainly in `status`, then `onDone` refreshes.
 */
export function buyButton(
  session: Session,
  listing: Listing,
  name: string,
  wallet: string,
  status: HTMLElement,
  onDone: () => void,
): HTMLButtonElement {
  const guard = new SubmissionGuard();
  const button = h(
    'button',
    { type: 'button', class: 'small', 'aria-label': `Buy ${name} for ${listing.price} ${listing.currency}` },
    'Buy',
  );
  button.addEventListener('click', async () => {
    if (guard.busy) return;
    button.disabled = true;
    replace(status, h('p', { class: 'muted' }, `Buying ${name}…`));
    try {
      const body = { wallet };
      const sale = await guard.run({ id: listing.id, ...body }, async (key) =>
        unwrap(
          await session.api.POST('/api/v1/listings/{listing_id}/buy', {
            params: { path: { listing_id: listing.id }, header: { 'Idempotency-Key': key } },
            body,
          }),
        ),
      );
      if (!sale) return;
      report(
        status,
        h(
          'p',
          { class: 'result good', 'data-testid': 'market-result' },
          `Bought ${name} for ${listing.price} ${listing.currency}.`,
        ),
      );
      onDone();
    } catch (error) {
      const problem = problemOf(error);
      if (problem.type === '/problems/listing-not-active') {
        report(
          status,
          h(
            'div',
            { class: 'problem', role: 'alert', 'data-testid': 'market-result' },
            h('p', { class: 'problem-title' }, `${name} is no longer for sale`),
            h(
              'p',
              {},
              'It was bought, cancelled or ended before your purchase: nothing was paid. The list below is refreshed.',
            ),
          ),
        );
        onDone();
      } else {
        replace(status, problemBox(problem));
        button.disabled = false;
      }
    }
  });
  return button;
}

/**
 * A small button running one request (cancel a listing or an offer, accept an offer), what it did or
 * its problem said in `status`; `run` answering null changed nothing (a confirmation declined).
 */
export function actionButton(
  label: string,
  ariaLabel: string,
  status: HTMLElement,
  run: () => Promise<string | null>,
  onDone: () => void,
  primary = false,
): HTMLButtonElement {
  const button = h(
    'button',
    { type: 'button', class: primary ? 'small' : 'secondary small', 'aria-label': ariaLabel },
    label,
  );
  button.addEventListener('click', async () => {
    if (button.disabled) return;
    button.disabled = true;
    try {
      const said = await run();
      if (said === null) {
        button.disabled = false;
        return;
      }
      report(status, h('p', { class: 'result good', 'data-testid': 'market-result' }, said));
      onDone();
    } catch (error) {
      replace(status, problemBox(problemOf(error)));
      button.disabled = false;
    }
  });
  return button;
}
