// A collection's crafting recipes (GET /api/v1/collections/{id}/recipes) and a new one (POST, same
// path): inputs burned from the crafter's wallet (an amount of any currency, or an NFT matched by
// collection and name) and outputs minted into it (an amount of one of the collection's currencies,
// or a new NFT from a template: an item of the collection to start from, or typed in). The page
// checks what it can before sending (the service checks everything again, and its problems are
// shown by field). The contract has no operation that changes or removes a recipe, so creating one
// asks first and says so.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { BASE_PATH } from '../../config.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace, skeleton, uid } from '../../ui/dom.ts';
import { labelled, select, textInput } from '../../ui/field.ts';
import { formatTime, parseAttributes } from '../../ui/format.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import { toast } from '../../ui/toast.ts';
import type { ViewContext } from '../context.ts';

type Asset = Schemas['Asset'];
type Recipe = Schemas['Recipe'];
type RecipeInput = Schemas['RecipeInput'];
type RecipeOutput = Schemas['RecipeOutput'];

/** The contract's bounds (CreateRecipeRequest). */
const MAX_PARTS = 10;
const AMOUNT = /^(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** Pages of 100 recipes read for the list. */
const PAGES = 5;

/** What a recipe burns or mints, in words. */
export function partText(part: RecipeInput | RecipeOutput, side: 'input' | 'output'): string {
  if ('assetId' in part) return `${part.amount} ${part.assetId}`;
  if (side === 'input' && 'collection' in part.nft) return `1 “${part.nft.name}” of ${part.nft.collection}`;
  return `a new “${part.nft.name}”`;
}

/** A problem found on the page: the control to fix, and what is wrong with it. */
interface Mistake {
  control: HTMLInputElement | HTMLSelectElement;
  label: string;
  detail: string;
}

function amountMistake(text: string, decimals: number | undefined): string | null {
  if (!AMOUNT.test(text)) return 'must be a number such as 2 or 1.5';
  if (!/[1-9]/.test(text)) return 'must be more than 0';
  const fraction = text.split('.')[1] ?? '';
  if (decimals !== undefined && fraction.length > decimals)
    return decimals === 0 ? 'must be a whole number' : `has at most ${decimals} decimals`;
  return null;
}

function isImageUrl(text: string): boolean {
  try {
    return ['https:', 'http:', 'ipfs:'].includes(new URL(text).protocol);
  } catch {
    return false;
  }
}

/** One row of the form: its element, what it reads into (or the mistakes it has), and its focus. */
interface Row<T> {
  element: HTMLElement;
  read(mistakes: Mistake[]): T | null;
  focus(): void;
  renumber(index: number): void;
}

export function recipesPanel(
  ctx: ViewContext,
  collectionId: string,
): {
  element: HTMLElement;
  setCurrencies(currencies: Asset[]): void;
  setTemplates(items: Asset[]): void;
} {
  const list = h(
    'div',
    { class: 'table-scroll', 'data-testid': 'recipes', 'aria-busy': 'true' },
    skeleton('row', 2),
  );
  let currencies: Asset[] = [];
  /** One item per name, newest first: a template to start an NFT output from. */
  let templates: Asset[] = [];
  const currencyList = h('datalist', { id: uid('recipe-currencies') });
  const nameList = h('datalist', { id: uid('recipe-names') });

  async function load(): Promise<void> {
    list.setAttribute('aria-busy', 'true');
    try {
      const recipes: Recipe[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < PAGES; page += 1) {
        const result = unwrap(
          await ctx.session.api.GET('/api/v1/collections/{collection_id}/recipes', {
            params: { path: { collection_id: collectionId }, query: { limit: 100, cursor } },
            signal: ctx.signal,
          }),
        );
        recipes.push(...result.data);
        if (!result.next_cursor) break;
        cursor = result.next_cursor;
      }
      replace(
        list,
        recipes.length === 0
          ? emptyState('No recipe yet: players have nothing to craft in this collection.')
          : h(
              'table',
              { class: 'recipes-table' },
              h('caption', { class: 'visually-hidden' }, 'Recipes of the collection, oldest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['Recipe', 'Burns', 'Mints', 'Created'].map((name) => h('th', { scope: 'col' }, name)),
                ),
              ),
              h(
                'tbody',
                {},
                recipes.map((recipe) =>
                  h(
                    'tr',
                    { 'data-recipe-id': recipe.id },
                    h(
                      'td',
                      {},
                      h('strong', {}, recipe.name),
                      h('br'),
                      h('code', { class: 'muted small' }, recipe.id),
                    ),
                    h(
                      'td',
                      {},
                      h(
                        'ul',
                        { class: 'part-list' },
                        recipe.inputs.map((part) => h('li', {}, partText(part, 'input'))),
                      ),
                    ),
                    h(
                      'td',
                      {},
                      h(
                        'ul',
                        { class: 'part-list' },
                        recipe.outputs.map((part) => h('li', {}, partText(part, 'output'))),
                      ),
                    ),
                    h('td', {}, h('time', { datetime: recipe.createdAt }, formatTime(recipe.createdAt))),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(list, problemBox(problemOf(error)));
    } finally {
      list.setAttribute('aria-busy', 'false');
    }
  }

  // ---- The form ----

  const decimalsOf = (id: string) => currencies.find((currency) => currency.id === id)?.decimals ?? undefined;

  /**
   * One input or output: its legend ("Input 2"), a kind (a currency amount or an NFT) showing that
   * kind's fields, a remove button, and `read` of the fields shown (`place` names the row).
   */
  function partRow<T>(
    side: 'Input' | 'Output',
    kinds: readonly (readonly ['currency' | 'nft', string])[],
    fields: { currency: HTMLElement; nft: HTMLElement },
    read: (kind: string, place: string, mistakes: Mistake[]) => T,
    onRemove: (row: Row<T>) => void,
  ): Row<T> {
    const legend = h('legend', {});
    const kind = select(`${side.toLowerCase()}-kind`, kinds);
    const show = () => {
      fields.currency.hidden = kind.value !== 'currency';
      fields.nft.hidden = kind.value !== 'nft';
    };
    kind.addEventListener('change', show);
    show();
    const remove = h('button', { type: 'button', class: 'secondary small' }, 'Remove');
    const row: Row<T> = {
      element: h(
        'fieldset',
        { class: 'recipe-part' },
        legend,
        labelled('Kind', kind),
        fields.currency,
        fields.nft,
        remove,
      ),
      focus: () => kind.focus(),
      renumber(index) {
        legend.textContent = `${side} ${index + 1}`;
        remove.setAttribute('aria-label', `Remove ${side.toLowerCase()} ${index + 1}`);
      },
      read: (mistakes) => read(kind.value, legend.textContent ?? side, mistakes),
    };
    remove.addEventListener('click', () => onRemove(row));
    return row;
  }

  function amountOf(control: HTMLInputElement, currency: string, place: string, mistakes: Mistake[]): string {
    const text = control.value.trim();
    const wrong = amountMistake(text, decimalsOf(currency));
    if (wrong) mistakes.push({ control, label: `${place}, amount`, detail: wrong });
    return text;
  }

  function required(control: HTMLInputElement, label: string, mistakes: Mistake[]): string {
    const text = control.value.trim();
    if (!text) mistakes.push({ control, label, detail: 'is required' });
    return text;
  }

  function inputRow(onRemove: (row: Row<RecipeInput>) => void): Row<RecipeInput> {
    const currency = textInput('input-currency', {
      list: currencyList.id,
      spellcheck: 'false',
      placeholder: 'gold',
    });
    const amount = textInput('input-amount', { inputmode: 'decimal', placeholder: '1' });
    const collection = textInput('input-collection', { value: collectionId, spellcheck: 'false' });
    const name = textInput('input-name', { list: nameList.id, maxlength: 200 });
    const fields = {
      currency: h(
        'div',
        { class: 'form-grid' },
        labelled('Currency', currency, 'Any collection’s currency.'),
        labelled('Amount', amount),
      ),
      nft: h(
        'div',
        { class: 'form-grid' },
        labelled('Collection', collection),
        labelled('NFT name', name, 'The consumed NFT must have exactly this name.'),
      ),
    };
    return partRow<RecipeInput>(
      'Input',
      [
        ['currency', 'A currency amount'],
        ['nft', 'An NFT, by its name'],
      ],
      fields,
      (kind, place, mistakes) => {
        if (kind === 'nft')
          return {
            nft: {
              collection: required(collection, `${place}, collection`, mistakes),
              name: required(name, `${place}, NFT name`, mistakes),
            },
          };
        const id = required(currency, `${place}, currency`, mistakes);
        return { assetId: id, amount: amountOf(amount, id, place, mistakes) };
      },
      onRemove,
    );
  }

  function outputRow(onRemove: (row: Row<RecipeOutput>) => void): Row<RecipeOutput> {
    const currency = select(
      'output-currency',
      currencies.map((item) => [item.id, `${item.name} (${item.id})`] as const),
    );
    const amount = textInput('output-amount', { inputmode: 'decimal', placeholder: '1' });
    const template = select('output-template', [
      ['', 'None: type it below'],
      ...templates.map((item) => [item.id, item.name] as const),
    ]);
    const name = textInput('output-name', { maxlength: 200 });
    const image = textInput('output-image', {
      type: 'url',
      value: `${location.origin}${BASE_PATH}demo/sword.svg`,
    });
    const attributes = h('textarea', { id: uid('output-attributes'), rows: 2, placeholder: 'rarity: rare' });
    template.addEventListener('change', () => {
      const item = templates.find((candidate) => candidate.id === template.value);
      if (!item) return;
      name.value = item.name;
      image.value = item.metadata.image;
      attributes.value = item.metadata.attributes.map((a) => `${a.trait_type}: ${a.value}`).join('\n');
    });
    const fields = {
      currency: h(
        'div',
        { class: 'form-grid' },
        labelled(
          'Currency',
          currency,
          currencies.length ? undefined : 'This collection has no currency yet.',
        ),
        labelled('Amount', amount),
      ),
      nft: h(
        'div',
        { class: 'form-grid' },
        labelled('Start from an item', template, 'Copies its name, image and attributes.'),
        labelled('Name', name),
        labelled('Image URL', image),
        labelled('Attributes, one per line', attributes, 'trait: value'),
      ),
    };
    return partRow<RecipeOutput>(
      'Output',
      [
        ['nft', 'A new NFT'],
        ['currency', 'A currency amount'],
      ],
      fields,
      (kind, place, mistakes) => {
        if (kind === 'currency') {
          if (!currency.value)
            mistakes.push({
              control: currency,
              label: `${place}, currency`,
              detail: 'create a currency first',
            });
          return { assetId: currency.value, amount: amountOf(amount, currency.value, place, mistakes) };
        }
        const nftName = required(name, `${place}, name`, mistakes);
        if (!isImageUrl(image.value.trim()))
          mistakes.push({
            control: image,
            label: `${place}, image URL`,
            detail: 'must be an https:, http: or ipfs: address',
          });
        return {
          nft: {
            name: nftName,
            metadata: {
              image: image.value.trim(),
              attributes: parseAttributes(attributes.value),
              creator: ctx.session.user?.username ?? collectionId,
            },
          },
        };
      },
      onRemove,
    );
  }

  /** A growing list of rows (1 to MAX_PARTS) with its add button. */
  function rows<T>(what: 'input' | 'output', make: (onRemove: (row: Row<T>) => void) => Row<T>) {
    const items: Row<T>[] = [];
    const box = h('div', { class: 'stack' });
    const add = h('button', { type: 'button', class: 'secondary' }, `Add an ${what}`);
    const sync = () => {
      items.forEach((row, index) => {
        row.renumber(index);
        const remove = row.element.querySelector<HTMLButtonElement>(':scope > button');
        if (remove) remove.disabled = items.length === 1;
      });
      add.disabled = items.length >= MAX_PARTS;
      replace(
        box,
        items.map((row) => row.element),
      );
    };
    const remove = (row: Row<T>) => {
      items.splice(items.indexOf(row), 1);
      sync();
      add.focus();
    };
    const push = () => {
      const row = make(remove);
      items.push(row);
      sync();
      return row;
    };
    add.addEventListener('click', () => push().focus());
    return {
      box,
      add,
      reset() {
        items.length = 0;
        push();
      },
      read: (mistakes: Mistake[]) =>
        items.map((row) => row.read(mistakes)).filter((part): part is T => part !== null),
    };
  }

  function createForm(): HTMLElement {
    const name = textInput('recipe-name', { maxlength: 200 });
    const inputs = rows<RecipeInput>('input', inputRow);
    const outputs = rows<RecipeOutput>('output', outputRow);
    const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
    const submit = h('button', { type: 'submit' }, 'Create recipe');
    inputs.reset();
    outputs.reset();
    const form = h(
      'form',
      { class: 'stack', novalidate: true },
      labelled('Recipe name', name, 'What players see, such as “Crown a hero”.'),
      h(
        'fieldset',
        {},
        h('legend', {}, 'Inputs: burned from the crafter’s wallet'),
        inputs.box,
        h('div', { class: 'form-actions' }, inputs.add),
      ),
      h(
        'fieldset',
        {},
        h('legend', {}, 'Outputs: minted into the crafter’s wallet'),
        outputs.box,
        h('div', { class: 'form-actions' }, outputs.add),
      ),
      status,
      h('div', { class: 'form-actions' }, submit),
      currencyList,
      nameList,
    );
    let busy = false;
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (busy) return;
      for (const marked of form.querySelectorAll('[aria-invalid="true"]'))
        marked.removeAttribute('aria-invalid');
      const mistakes: Mistake[] = [];
      if (!name.value.trim()) mistakes.push({ control: name, label: 'Recipe name', detail: 'is required' });
      const body: Schemas['CreateRecipeRequest'] = {
        name: name.value.trim(),
        inputs: inputs.read(mistakes),
        outputs: outputs.read(mistakes),
      };
      if (mistakes.length) {
        for (const mistake of mistakes) mistake.control.setAttribute('aria-invalid', 'true');
        replace(
          status,
          h(
            'div',
            { class: 'problem', role: 'alert', 'data-testid': 'recipe-mistakes' },
            h(
              'p',
              { class: 'problem-title' },
              `Fix ${mistakes.length === 1 ? 'this' : `these ${mistakes.length}`} before creating the recipe (nothing was sent):`,
            ),
            h(
              'ul',
              {},
              mistakes.map((mistake) => h('li', {}, h('strong', {}, `${mistake.label}: `), mistake.detail)),
            ),
          ),
        );
        mistakes[0].control.focus();
        return;
      }
      const ok = await confirmAction({
        title: `Create the recipe “${body.name}”?`,
        consequences: [
          h(
            'p',
            {},
            `Players can craft it as soon as it exists: each craft burns ${body.inputs.map((part) => partText(part, 'input')).join(', ')} from the crafter’s wallet and mints ${body.outputs.map((part) => partText(part, 'output')).join(', ')} into it.`,
          ),
          h(
            'p',
            {},
            'A recipe cannot be changed or removed afterwards: the service has no operation for it.',
          ),
        ],
        confirmLabel: 'Create recipe',
      });
      if (!ok) return;
      busy = true;
      submit.disabled = true;
      try {
        const created = unwrap(
          await ctx.session.api.POST('/api/v1/collections/{collection_id}/recipes', {
            params: { path: { collection_id: collectionId } },
            body,
          }),
        );
        toast(`Recipe ${created.name} created.`);
        name.value = '';
        inputs.reset();
        outputs.reset();
        replace(status);
        void load();
      } catch (error) {
        const labels: Record<string, string> = { '/body/name': 'Recipe name' };
        body.inputs.forEach((_, i) => {
          for (const field of ['', '/assetId', '/amount', '/nft/collection', '/nft/name'])
            labels[`/body/inputs/${i}${field}`] =
              `Input ${i + 1}${field ? `, ${field.split('/').pop()}` : ''}`;
        });
        body.outputs.forEach((_, i) => {
          for (const field of ['', '/assetId', '/amount', '/nft/name', '/nft/metadata/image'])
            labels[`/body/outputs/${i}${field}`] =
              `Output ${i + 1}${field ? `, ${field.split('/').pop()}` : ''}`;
        });
        replace(status, problemBox(problemOf(error), labels));
      } finally {
        busy = false;
        submit.disabled = false;
      }
    });
    return h('details', { class: 'create-recipe' }, h('summary', {}, 'New recipe'), form);
  }

  const form = createForm();
  void load();
  return {
    element: h('div', {}, list, form),
    setCurrencies(found) {
      currencies = found;
      replace(
        currencyList,
        found.map((currency) => h('option', { value: currency.id }, currency.name)),
      );
      // Rows made from now on offer them; an open output row's currency list is refreshed too.
      for (const choice of form.querySelectorAll<HTMLSelectElement>('select[name="output-currency"]')) {
        const chosen = choice.value;
        replace(
          choice,
          found.map((currency) => h('option', { value: currency.id }, `${currency.name} (${currency.id})`)),
        );
        if (chosen) choice.value = chosen;
      }
    },
    setTemplates(items) {
      const seen = new Set<string>();
      templates = items.filter((item) => !seen.has(item.name) && seen.add(item.name));
      replace(
        nameList,
        templates.map((item) => h('option', { value: item.name })),
      );
      for (const choice of form.querySelectorAll<HTMLSelectElement>('select[name="output-template"]')) {
        const chosen = choice.value;
        replace(
          choice,
          h('option', { value: '' }, 'None: type it below'),
          templates.map((item) => h('option', { value: item.id }, item.name)),
        );
        choice.value = chosen;
      }
    },
  };
}
