// A studio's collection: its policies and trading settings, minting one NFT into any wallet, an
// airdrop from a pasted list or a CSV file (previewed row by row, sent only when confirmed, as
// POST /api/v1/collections/{id}/mint/batch of up to 100 items each), and the items minted into it
// (read from its newNFT events), each leading to its management page; its currencies and its
// crafting recipes (./currencies.ts, ./recipes.ts); its store offers and loot boxes, read only
// (./store-objects.ts).
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { BASE_PATH } from '../../config.ts';
import { paths } from '../../router.ts';
import { addressField } from '../../ui/address.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace, skeleton, uid } from '../../ui/dom.ts';
import { checkbox, labelled, select, textInput } from '../../ui/field.ts';
import { parseAttributes, shortAddress } from '../../ui/format.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import { SubmissionGuard } from '../../ui/submission.ts';
import { toast } from '../../ui/toast.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { type AirdropKind, type AirdropList, readAirdrop } from './airdrop-rows.ts';
import { allCollections, policySummary } from './collections.ts';
import { currenciesPanel } from './currencies.ts';
import { consolePage, panel } from './frame.ts';
import { recipesPanel } from './recipes.ts';
import { storeObjectsPanel } from './store-objects.ts';

type Asset = Schemas['Asset'];
type MintBatchItem = Schemas['MintBatchItem'];

/** The service takes at most 100 items per batch (one transaction each). */
const BATCH_SIZE = 100;
/** Rows shown in the preview before "and N more". */
const PREVIEW_ROWS = 200;

const MINT_FIELDS: Record<string, string> = {
  '/body/items/0/to': 'Wallet',
  '/body/items/0/nft/name': 'Name',
  '/body/items/0/nft/metadata/image': 'Image URL',
};

export function collectionView(ctx: ViewContext, collectionId: string): Cleanup {
  const facts = h('div', { 'aria-busy': 'true' }, skeleton('line', 3));
  const trading = h('div', {}, skeleton('line', 2));
  const items = h('div', { class: 'table-scroll', 'aria-busy': 'true' }, skeleton('row', 3));
  const recipes = recipesPanel(ctx, collectionId);
  const shown = consolePage(
    ctx,
    'studio',
    `Collection ${collectionId}`,
    h(
      'div',
      { class: 'columns' },
      panel('policies', 'Policies', facts),
      panel('trading', 'Trading', trading),
    ),
    panel(
      'mint-one',
      'Mint one NFT',
      mintOneForm(ctx, collectionId, () => void loadItems()),
    ),
    panel(
      'airdrop',
      'Airdrop',
      airdropForm(ctx, collectionId, () => void loadItems()),
    ),
    panel('currencies', 'Currencies', currenciesPanel(ctx, collectionId, recipes.setCurrencies)),
    panel('recipes', 'Recipes', recipes.element),
    panel('store', 'Store offers and loot boxes', storeObjectsPanel(ctx, collectionId)),
    panel('items', 'Items', items),
  );
  if (!shown) return () => undefined;

  async function loadCollection(): Promise<void> {
    try {
      const found = (await allCollections(ctx.session, ctx.signal)).find((item) => item.id === collectionId);
      if (!found) {
        replace(
          facts,
          problemBox({
            type: '/problems/not-found',
            title: 'Not found',
            status: 404,
            detail: `No collection has the id ${collectionId}.`,
          }),
        );
        return;
      }
      const title = ctx.root.querySelector('h1');
      if (title) title.textContent = found.name;
      replace(
        facts,
        found.description ? h('p', {}, found.description) : null,
        h(
          'ul',
          { class: 'policy-list' },
          policySummary(found).map((line) => h('li', {}, line)),
        ),
        h(
          'p',
          { class: 'muted small' },
          'Id ',
          h('code', {}, found.id),
          ' · owner ',
          h('code', {}, found.owner),
        ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(facts, problemBox(problemOf(error)));
    } finally {
      facts.setAttribute('aria-busy', 'false');
    }
  }

  async function loadTrading(): Promise<void> {
    try {
      const settings = unwrap(
        await ctx.session.api.GET('/api/v1/collections/{collection_id}/market/settings', {
          params: { path: { collection_id: collectionId } },
          signal: ctx.signal,
        }),
      );
      replace(
        trading,
        tradingForm(ctx, settings, () => void loadTrading()),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(trading, problemBox(problemOf(error)));
    }
  }

  async function loadItems(): Promise<void> {
    items.setAttribute('aria-busy', 'true');
    try {
      const minted: Asset[] = [];
      let after: string | undefined;
      // Every NFT minted into the collection, from the oldest retained event; 5 pages of 1000 here.
      for (let page = 0; page < 5; page += 1) {
        const result = unwrap(
          await ctx.session.api.GET('/api/v1/events', {
            params: { query: { types: ['newNFT'], collection: collectionId, after, limit: 1000 } },
            signal: ctx.signal,
          }),
        );
        for (const event of result.data) if (event.type === 'newNFT') minted.push(event.data);
        if (!result.next_cursor) break;
        after = result.next_cursor;
      }
      minted.reverse();
      recipes.setTemplates(minted);
      replace(
        items,
        minted.length === 0
          ? emptyState('Nothing minted into this collection yet.')
          : h(
              'table',
              { class: 'items-table' },
              h('caption', { class: 'visually-hidden' }, 'Items of the collection, newest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Item', 'First owner', ''].map((name) => h('th', { scope: 'col' }, name)),
                ),
              ),
              h(
                'tbody',
                {},
                minted.map((asset) =>
                  h(
                    'tr',
                    { 'data-asset-id': asset.id },
                    h('td', {}, asset.name, ' ', h('code', { class: 'muted small' }, asset.id)),
                    h(
                      'td',
                      {},
                      asset.owner ? h('code', { title: asset.owner }, shortAddress(asset.owner)) : '—',
                    ),
                    h(
                      'td',
                      { class: 'actions' },
                      h(
                        'a',
                        {
                          href: paths.studioItem(asset.id),
                          'aria-label': `Manage ${asset.name} (${asset.id})`,
                        },
                        'Manage',
                      ),
                    ),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(items, problemBox(problemOf(error)));
    } finally {
      items.setAttribute('aria-busy', 'false');
    }
  }

  void loadCollection();
  void loadTrading();
  void loadItems();
  return () => undefined;
}

function tradingForm(
  ctx: ViewContext,
  settings: Schemas['MarketSettings'],
  onSaved: () => void,
): HTMLElement {
  const enabled = checkbox('Players may list and buy its items', 'tradingEnabled', settings.tradingEnabled);
  const royalty = textInput('royaltyBps', {
    type: 'number',
    min: 0,
    max: 10000,
    step: 1,
    value: String(settings.royaltyBps),
    inputmode: 'numeric',
  });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const form = h(
    'form',
    { class: 'stack' },
    enabled.root,
    labelled(
      'Royalty in basis points',
      royalty,
      `${settings.royaltyBps / 100} % of each sale goes to ${settings.royaltyWallet ? shortAddress(settings.royaltyWallet) : "the studio's first wallet"}.`,
    ),
    status,
    h(
      'div',
      { class: 'form-actions' },
      h('button', { type: 'submit', class: 'secondary' }, 'Save trading settings'),
    ),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const stopping = settings.tradingEnabled && !enabled.input.checked;
    if (
      stopping &&
      !(await confirmAction({
        title: 'Stop trading?',
        consequences: h(
          'p',
          {},
          `Every active listing of ${settings.collection} ends now, and players can no longer list or buy its items until trading is turned back on.`,
        ),
        confirmLabel: 'Stop trading',
        danger: true,
      }))
    )
      return;
    try {
      unwrap(
        await ctx.session.api.PUT('/api/v1/collections/{collection_id}/market/settings', {
          params: { path: { collection_id: settings.collection } },
          body: { tradingEnabled: enabled.input.checked, royaltyBps: Number(royalty.value || '0') },
        }),
      );
      toast('Trading settings saved.');
      onSaved();
    } catch (error) {
      replace(status, problemBox(problemOf(error), { '/body/royaltyBps': 'Royalty' }));
    }
  });
  return form;
}

function defaultImage(): string {
  return `${location.origin}${BASE_PATH}demo/sword.svg`;
}

async function sendBatch(
  ctx: ViewContext,
  collectionId: string,
  items: MintBatchItem[],
  key: string,
): Promise<Schemas['MintBatch']> {
  return unwrap(
    await ctx.session.api.POST('/api/v1/collections/{collection_id}/mint/batch', {
      params: { path: { collection_id: collectionId }, header: { 'Idempotency-Key': key } },
      body: { items },
    }),
  );
}

function mintOneForm(ctx: ViewContext, collectionId: string, onMinted: () => void): HTMLElement {
  const guard = new SubmissionGuard();
  const to = addressField({
    label: 'Into wallet',
    name: 'to',
    required: true,
    value: ctx.session.user?.wallets[0],
  });
  const name = textInput('name', { required: true, maxlength: 200 });
  const image = textInput('image', { type: 'url', required: true, value: defaultImage() });
  const attributes = h('textarea', {
    id: uid('attributes'),
    name: 'attributes',
    rows: 2,
    placeholder: 'rarity: common\nlevel: 1',
  });
  const soulbound = checkbox('Soulbound (never transferable)', 'soulbound');
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Mint NFT');
  const form = h(
    'form',
    { class: 'form-grid' },
    to.root,
    labelled('Name', name),
    labelled('Image URL', image, 'An https:, http: or ipfs: address.'),
    labelled('Attributes, one per line', attributes, 'trait: value; numbers and true/false keep their type.'),
    soulbound.root,
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy) return;
    const wallet = to.value();
    if (!wallet) {
      to.input.focus();
      return;
    }
    const item: MintBatchItem = {
      to: wallet,
      nft: {
        name: name.value.trim(),
        metadata: {
          image: image.value.trim(),
          attributes: parseAttributes(attributes.value),
          creator: ctx.session.user?.username ?? collectionId,
        },
        ...(soulbound.input.checked ? { soulbound: true } : {}),
      },
    };
    submit.disabled = true;
    try {
      const batch = await guard.run(item, (key) => sendBatch(ctx, collectionId, [item], key));
      const minted = batch?.nfts[0];
      if (!minted) return;
      toast(
        'Minted ',
        h('a', { href: paths.studioItem(minted.id) }, minted.name),
        ` into ${shortAddress(wallet)}.`,
      );
      name.value = '';
      replace(status);
      onMinted();
    } catch (error) {
      replace(status, problemBox(problemOf(error), MINT_FIELDS));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}

function airdropForm(ctx: ViewContext, collectionId: string, onSent: () => void): HTMLElement {
  const what = select('airdrop-kind', [
    ['nft', 'A new NFT per row (wallet, name, image, description, attributes…)'],
    ['currency', 'An amount of a currency per row (wallet, amount)'],
  ]);
  const image = textInput('airdrop-image', { type: 'url', value: defaultImage() });
  const imageField = labelled('Image when a row has none', image);
  const currency = textInput('airdrop-currency', { maxlength: 200, placeholder: 'gold' });
  const currencyField = labelled('Currency id', currency, 'One of this collection’s currencies.');
  currencyField.hidden = true;
  const file = h('input', { id: uid('airdrop-file'), type: 'file', accept: '.csv,text/csv,text/plain' });
  const list = h('textarea', {
    id: uid('airdrop-list'),
    rows: 6,
    spellcheck: 'false',
    class: 'address-input',
    placeholder: 'wallet,name,rarity\n0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed,Founder’s Badge,rare',
  });
  const preview = h('div', { class: 'airdrop-preview', 'aria-live': 'polite' });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const previewButton = h('button', { type: 'submit', class: 'secondary' }, 'Preview');
  const send = h('button', { type: 'button', hidden: true }, 'Mint');
  let current: { list: AirdropList; items: MintBatchItem[] } | null = null;
  const guards: SubmissionGuard[] = [];

  what.addEventListener('change', () => {
    imageField.hidden = what.value !== 'nft';
    currencyField.hidden = what.value !== 'currency';
    invalidate();
  });
  const invalidate = () => {
    current = null;
    send.hidden = true;
    replace(preview);
  };
  list.addEventListener('input', invalidate);
  file.addEventListener('change', async () => {
    const chosen = file.files?.[0];
    if (!chosen) return;
    // The file's text goes into the list: a bad row can be fixed right there.
    list.value = await chosen.text();
    invalidate();
    await showPreview();
  });

  async function airdropKind(): Promise<AirdropKind | null> {
    if (what.value === 'nft')
      return {
        kind: 'nft',
        defaultImage: image.value.trim(),
        creator: ctx.session.user?.username ?? collectionId,
      };
    const id = currency.value.trim();
    if (!id) {
      replace(
        status,
        problemBox({
          type: 'about:blank',
          title: 'Which currency?',
          status: 0,
          detail: 'Give the id of the currency to airdrop.',
        }),
      );
      currency.focus();
      return null;
    }
    try {
      const asset = unwrap(
        await ctx.session.api.GET('/assets/{asset_id}', {
          params: { path: { asset_id: id } },
          signal: ctx.signal,
        }),
      );
      if (asset.kind !== 'fungible' || asset.collection !== collectionId) {
        replace(
          status,
          problemBox({
            type: 'about:blank',
            title: 'Not a currency of this collection',
            status: 0,
            detail: `${id} is ${asset.kind === 'nft' ? 'an NFT' : `a currency of ${asset.collection}`}.`,
          }),
        );
        return null;
      }
      return { kind: 'currency', currency: asset.id, decimals: asset.decimals ?? 0 };
    } catch (error) {
      replace(status, problemBox(problemOf(error)));
      return null;
    }
  }

  async function showPreview(): Promise<void> {
    replace(status);
    const kind = await airdropKind();
    if (!kind) return;
    const read = readAirdrop(list.value, kind);
    const bad = read.rows.filter((row) => row.error !== null);
    const items = read.rows.flatMap((row) => (row.item ? [row.item] : []));
    current = { list: read, items };
    const wallets = new Set(items.map((item) => item.to)).size;
    const batches = Math.ceil(items.length / BATCH_SIZE);
    replace(
      preview,
      h(
        'p',
        { class: bad.length ? 'problem-title' : '', 'data-testid': 'airdrop-summary' },
        read.rows.length === 0
          ? 'The list is empty.'
          : bad.length
            ? `${bad.length} of ${read.rows.length} rows have a problem: fix them in the list above (or remove them), then preview again. Nothing has been sent.`
            : `${items.length} mints to ${wallets} wallets, ready. Nothing is sent until you confirm.`,
      ),
      bad.length
        ? h(
            'ul',
            { class: 'row-errors', role: 'alert' },
            bad.map((row) =>
              h('li', { 'data-line': String(row.line) }, h('strong', {}, `Line ${row.line}: `), row.error),
            ),
          )
        : null,
      read.rows.length
        ? h(
            'div',
            { class: 'table-scroll' },
            h(
              'table',
              { class: 'preview-table' },
              h('caption', { class: 'visually-hidden' }, 'Preview of the airdrop'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  h('th', { scope: 'col' }, 'Line'),
                  read.columns.map((column) => h('th', { scope: 'col' }, column)),
                  h('th', { scope: 'col' }, 'Check'),
                ),
              ),
              h(
                'tbody',
                {},
                read.rows.slice(0, PREVIEW_ROWS).map((row) =>
                  h(
                    'tr',
                    { class: row.error ? 'bad-row' : '', 'data-line': String(row.line) },
                    h('td', {}, String(row.line)),
                    read.columns.map((_, index) => h('td', {}, row.cells[index] ?? '')),
                    h(
                      'td',
                      {},
                      row.error
                        ? h('span', { class: 'status failed' }, row.error)
                        : h('span', { class: 'status completed' }, 'OK'),
                    ),
                  ),
                ),
              ),
            ),
            read.rows.length > PREVIEW_ROWS
              ? h('p', { class: 'muted small' }, `…and ${read.rows.length - PREVIEW_ROWS} more rows.`)
              : null,
          )
        : null,
    );
    send.hidden = bad.length > 0 || items.length === 0;
    send.textContent = `Mint ${items.length} ${kind.kind === 'nft' ? 'NFTs' : `${kind.currency} amounts`}`;
    if (batches > 1) send.textContent += ` in ${batches} batches`;
    if (bad.length) preview.querySelector<HTMLElement>('.row-errors')?.focus();
  }

  const form = h(
    'form',
    { class: 'stack' },
    labelled('What each row mints', what),
    imageField,
    currencyField,
    labelled('CSV file', file, 'Its text is loaded into the list below, where you can fix it.'),
    labelled(
      'List (one row per line)',
      list,
      'wallet first; a first line naming the columns is optional. Up to 100 rows go in one transaction.',
    ),
    h('div', { class: 'form-actions' }, previewButton, send),
    status,
    preview,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void showPreview();
  });
  send.addEventListener('click', async () => {
    const ready = current;
    if (!ready || ready.items.length === 0) return;
    const wallets = new Set(ready.items.map((item) => item.to)).size;
    const batches = Math.ceil(ready.items.length / BATCH_SIZE);
    const ok = await confirmAction({
      title: 'Send the airdrop?',
      consequences: [
        h(
          'p',
          {},
          `${ready.items.length} mints into ${collectionId}, to ${wallets} wallets. Minted items cannot be taken back (only burned, as the collection's burn policy allows).`,
        ),
        batches > 1
          ? h('p', {}, `They go in ${batches} batches of up to ${BATCH_SIZE}; each batch is all or nothing.`)
          : null,
      ],
      confirmLabel: send.textContent ?? 'Mint',
    });
    if (!ok) return;
    send.disabled = true;
    previewButton.disabled = true;
    let done = 0;
    try {
      for (let index = 0; index < batches; index += 1) {
        const chunk = ready.items.slice(index * BATCH_SIZE, (index + 1) * BATCH_SIZE);
        // One key per batch, kept across a retry of the same list: a batch that did go through is not minted twice.
        guards[index] ??= new SubmissionGuard();
        replace(status, h('p', { class: 'muted' }, `Sending batch ${index + 1} of ${batches}…`));
        await guards[index].run(chunk, (key) => sendBatch(ctx, collectionId, chunk, key));
        done += chunk.length;
      }
      replace(
        status,
        h(
          'p',
          { class: 'status completed', 'data-testid': 'airdrop-done' },
          `Airdrop sent: ${done} mints to ${wallets} wallets.`,
        ),
      );
      toast(`Airdrop sent: ${done} mints.`);
      guards.length = 0;
      current = null;
      send.hidden = true;
      // Sent: the list and its preview go, so nothing reads as still waiting to be sent.
      list.value = '';
      file.value = '';
      replace(preview);
      onSent();
    } catch (error) {
      replace(
        status,
        done
          ? h(
              'p',
              {},
              `${done} mints went through before this failure; the rest were not sent. Sending again resends only what did not go through.`,
            )
          : null,
        problemBox(problemOf(error)),
      );
    } finally {
      send.disabled = false;
      previewButton.disabled = false;
    }
  });
  return form;
}
