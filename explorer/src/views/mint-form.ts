// Mint an NFT into one of your wallets (POST /api/v1/nft/create), into your personal collection or
// one of the collections you own (from GET /api/v1/collections), with display metadata and attributes.
// Only a collection's owner (or an admin) may mint into it, so other users' collections are not offered.
import type { Schemas } from '../api/client.ts';
import { problemOf, unwrap } from '../api/problem.ts';
import type { Session } from '../auth/session.ts';
import { BASE_PATH } from '../config.ts';
import { openDialog } from '../ui/dialog.ts';
import { h, replace, uid } from '../ui/dom.ts';
import { labelled } from '../ui/field.ts';
import { attributeValue } from '../ui/format.ts';
import { problemBox } from '../ui/problem-view.ts';
import { SubmissionGuard } from '../ui/submission.ts';

type Asset = Schemas['Asset'];

/** Pictures the explorer ships, so a fresh mint has an image that loads without any other host. */
const PICTURES = ['sword', 'shield', 'potion'] as const;

const FIELD_LABELS: Record<string, string> = {
  '/body/name': 'Name',
  '/body/description': 'Description',
  '/body/collection': 'Collection',
  '/body/metadata/image': 'Image URL',
  '/body/metadata/creator': 'Creator',
  '/body/to': 'Mint into wallet',
};

export function openMintDialog(session: Session, to: string, onMinted: (asset: Asset) => void): void {
  const guard = new SubmissionGuard();
  const collection = h(
    'select',
    { id: uid('mint-collection'), name: 'collection' },
    h('option', { value: '' }, 'Your personal collection'),
  );
  const name = h('input', {
    id: uid('mint-name'),
    name: 'name',
    required: true,
    maxlength: 200,
    autocomplete: 'off',
  });
  const description = h('textarea', {
    id: uid('mint-description'),
    name: 'description',
    rows: 2,
    maxlength: 2000,
  });
  const picture = `${PICTURES[Math.floor(Math.random() * PICTURES.length)]}`;
  const image = h('input', {
    id: uid('mint-image'),
    name: 'image',
    type: 'url',
    required: true,
    value: `${location.origin}${BASE_PATH}demo/${picture}.svg`,
  });
  const creator = h('input', {
    id: uid('mint-creator'),
    name: 'creator',
    required: true,
    maxlength: 200,
    value: session.user?.username ?? '',
  });
  const attributes = h('fieldset', { class: 'attribute-rows' }, h('legend', {}, 'Attributes'));
  const addAttribute = (trait = '', value = '') => {
    const index = attributes.querySelectorAll('.attribute-row').length + 1;
    const traitInput = h('input', {
      id: uid('trait'),
      'data-role': 'trait',
      value: trait,
      maxlength: 100,
      'aria-label': `Attribute ${index} name`,
    });
    const valueInput = h('input', {
      id: uid('value'),
      'data-role': 'value',
      value,
      maxlength: 200,
      'aria-label': `Attribute ${index} value`,
    });
    const remove = h(
      'button',
      { type: 'button', class: 'icon-button', 'aria-label': `Remove attribute ${index}` },
      '×',
    );
    const row = h('div', { class: 'attribute-row' }, traitInput, valueInput, remove);
    remove.addEventListener('click', () => row.remove());
    addButton.before(row);
  };
  const addButton = h('button', { type: 'button', class: 'secondary' }, '+ Add attribute');
  addButton.addEventListener('click', () => addAttribute());
  attributes.append(addButton);
  addAttribute('rarity', 'common');
  addAttribute('power', '10');

  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Mint NFT');
  const form = h(
    'form',
    { class: 'stack' },
    h('p', { class: 'muted' }, `Into your wallet ${to}.`),
    labelled('Collection', collection),
    labelled('Name', name),
    labelled('Description (optional)', description),
    labelled('Image URL', image, 'An https:, http: or ipfs: address of the picture.'),
    labelled('Creator', creator),
    attributes,
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  const dialog = openDialog('Mint an NFT', form);
  name.focus();

  void session.api
    .GET('/api/v1/collections', { params: { query: { limit: 100 } } })
    .then(unwrap)
    .then((page) => {
      const user = session.user;
      const mine = page.data.filter((item) => user && (user.role === 'admin' || item.owner === user.id));
      collection.append(...mine.map((item) => h('option', { value: item.id }, `${item.name} (${item.id})`)));
    })
    .catch((error: unknown) => replace(status, problemBox(problemOf(error))));

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy) return; // a second click or Enter while the first submission is in flight
    const body: Schemas['CreateNftRequest'] = {
      name: name.value.trim(),
      to,
      metadata: {
        image: image.value.trim(),
        creator: creator.value.trim(),
        attributes: [...attributes.querySelectorAll('.attribute-row')].flatMap((row) => {
          const trait = (row.querySelector('[data-role=trait]') as HTMLInputElement).value.trim();
          const value = (row.querySelector('[data-role=value]') as HTMLInputElement).value.trim();
          return trait ? [{ trait_type: trait, value: attributeValue(value) }] : [];
        }),
      },
    };
    if (description.value.trim()) body.description = description.value.trim();
    if (collection.value) body.collection = collection.value;
    submit.disabled = true;
    form.setAttribute('aria-busy', 'true');
    replace(status, h('p', { class: 'muted' }, 'Minting…'));
    try {
      const asset = await guard.run(body, async (key) =>
        unwrap(
          await session.api.POST('/api/v1/nft/create', {
            params: { header: { 'Idempotency-Key': key } },
            body,
          }),
        ),
      );
      if (!asset) return;
      dialog.close();
      onMinted(asset);
    } catch (error) {
      replace(status, problemBox(problemOf(error), FIELD_LABELS));
    } finally {
      submit.disabled = false;
      form.removeAttribute('aria-busy');
    }
  });
}
