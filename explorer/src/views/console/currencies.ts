// A collection's currencies (found in the audit log's `currency.created` entries of the studio's
// slice, each read for its supply): a new one (POST /api/v1/currencies) and new supply minted into a
// wallet (POST /api/v1/currencies/{id}/mint). Airdrops of a currency go through the airdrop form.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { BASE_PATH } from '../../config.ts';
import { addressField } from '../../ui/address.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { labelled, select, textInput } from '../../ui/field.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import { SubmissionGuard } from '../../ui/submission.ts';
import { toast } from '../../ui/toast.ts';
import type { ViewContext } from '../context.ts';

type Asset = Schemas['Asset'];

const FIELDS: Record<string, string> = {
  '/body/id': 'Id',
  '/body/name': 'Name',
  '/body/symbol': 'Symbol',
  '/body/decimals': 'Decimals',
  '/body/maxSupply': 'Maximum supply',
  '/body/to': 'Into wallet',
  '/body/amount': 'Amount',
};

async function collectionCurrencies(ctx: ViewContext, collectionId: string): Promise<Asset[]> {
  const entries = unwrap(
    await ctx.session.api.GET('/api/v1/audit-log', {
      params: { query: { action: 'currency.created', limit: 100 } },
      signal: ctx.signal,
    }),
  ).data.filter((entry) => entry.object.collectionId === collectionId);
  return Promise.all(
    entries.map(async (entry) =>
      unwrap(
        await ctx.session.api.GET('/assets/{asset_id}', {
          params: { path: { asset_id: entry.object.id } },
          signal: ctx.signal,
          headers: { 'Cache-Control': 'no-cache' },
        }),
      ),
    ),
  );
}

/** `onLoaded` hears of the currencies each time they are read (the recipes' form offers them). */
export function currenciesPanel(
  ctx: ViewContext,
  collectionId: string,
  onLoaded: (currencies: Asset[]) => void = () => undefined,
): HTMLElement {
  const list = h('div', { class: 'table-scroll', 'data-testid': 'currencies' }, skeleton('row', 2));
  const mintArea = h('div');

  async function load(): Promise<void> {
    try {
      const currencies = await collectionCurrencies(ctx, collectionId);
      onLoaded(currencies);
      replace(
        list,
        currencies.length === 0
          ? emptyState('No currency in this collection yet.')
          : h(
              'table',
              {},
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Currency', 'Decimals', 'Supply', 'Cap'].map((name) => h('th', { scope: 'col' }, name)),
                ),
              ),
              h(
                'tbody',
                {},
                currencies.map((currency) =>
                  h(
                    'tr',
                    { 'data-currency-id': currency.id },
                    h(
                      'td',
                      {},
                      `${currency.name} (${currency.symbol ?? ''}) `,
                      h('code', { class: 'muted small' }, currency.id),
                    ),
                    h('td', { class: 'number' }, String(currency.decimals ?? 0)),
                    h('td', { class: 'number' }, currency.totalSupply ?? '0'),
                    h('td', { class: 'number' }, currency.maxSupply ?? 'none'),
                  ),
                ),
              ),
            ),
      );
      replace(mintArea, currencies.length ? mintForm(currencies) : null);
    } catch (error) {
      if (!ctx.signal.aborted) replace(list, problemBox(problemOf(error)));
    }
  }

  function mintForm(currencies: Asset[]): HTMLElement {
    const guard = new SubmissionGuard();
    const currency = select(
      'mint-currency',
      currencies.map((item) => [item.id, `${item.name} (${item.id})`] as const),
    );
    const to = addressField({
      label: 'Into wallet',
      name: 'to',
      required: true,
      value: ctx.session.user?.wallets[0],
    });
    const amount = textInput('mint-amount', {
      required: true,
      inputmode: 'decimal',
      pattern: '(0|[1-9][0-9]*)(\\.[0-9]+)?',
    });
    const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
    const form = h(
      'form',
      { class: 'form-grid' },
      labelled('Currency', currency),
      to.root,
      labelled('Amount', amount),
      status,
      h('div', { class: 'form-actions' }, h('button', { type: 'submit', class: 'secondary' }, 'Mint supply')),
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const wallet = to.value();
      if (!wallet || guard.busy) return;
      const body = { to: wallet, amount: amount.value.trim() };
      try {
        const minted = await guard.run({ id: currency.value, ...body }, async (key) =>
          unwrap(
            await ctx.session.api.POST('/api/v1/currencies/{asset_id}/mint', {
              params: { path: { asset_id: currency.value }, header: { 'Idempotency-Key': key } },
              body,
            }),
          ),
        );
        if (!minted) return;
        toast(`Minted ${minted.amount} ${currency.value}.`);
        replace(status);
        amount.value = '';
        void load();
      } catch (error) {
        replace(status, problemBox(problemOf(error), FIELDS));
      }
    });
    return h('div', {}, h('h3', {}, 'Mint supply'), form);
  }

  function createForm(): HTMLElement {
    const id = textInput('currency-id', {
      required: true,
      maxlength: 32,
      pattern: '[a-z][a-z0-9\\-]{1,31}',
      placeholder: 'gold',
      spellcheck: 'false',
    });
    const name = textInput('currency-name', { required: true, maxlength: 200 });
    const symbol = textInput('currency-symbol', {
      required: true,
      maxlength: 12,
      pattern: '[A-Z0-9]{1,12}',
      placeholder: 'GOLD',
    });
    const decimals = textInput('currency-decimals', {
      type: 'number',
      min: 0,
      max: 18,
      step: 1,
      value: '2',
      required: true,
    });
    const cap = textInput('currency-cap', { inputmode: 'decimal', placeholder: 'uncapped' });
    const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
    const form = h(
      'form',
      { class: 'form-grid' },
      labelled('Id', id, 'Permanent: 2 to 32 lower-case letters, digits and dashes.'),
      labelled('Name', name),
      labelled('Symbol', symbol, 'Up to 12 capital letters or digits.'),
      labelled('Decimals', decimals, '0 makes it indivisible.'),
      labelled('Maximum supply (optional)', cap),
      status,
      h(
        'div',
        { class: 'form-actions' },
        h('button', { type: 'submit', class: 'secondary' }, 'Create currency'),
      ),
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const body: Schemas['CreateCurrencyRequest'] = {
        id: id.value.trim(),
        name: name.value.trim(),
        symbol: symbol.value.trim(),
        decimals: Number(decimals.value),
        collection: collectionId,
        metadata: {
          image: `${location.origin}${BASE_PATH}demo/gold.svg`,
          attributes: [],
          creator: ctx.session.user?.username ?? collectionId,
        },
        ...(cap.value.trim() ? { maxSupply: cap.value.trim() } : {}),
      };
      try {
        const created = unwrap(await ctx.session.api.POST('/api/v1/currencies', { body }));
        toast(`Currency ${created.name} created.`);
        form.reset();
        replace(status);
        void load();
      } catch (error) {
        replace(status, problemBox(problemOf(error), FIELDS));
      }
    });
    return h('details', { class: 'create-currency' }, h('summary', {}, 'New currency'), form);
  }

  void load();
  return h('div', {}, list, mintArea, createForm());
}
