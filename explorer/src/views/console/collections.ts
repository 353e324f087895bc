// The studio's collections (GET /api/v1/collections, kept to the caller's own; an admin sees every
// studio's) and a new collection with its policies (POST /api/v1/collections), then its trading
// settings (PUT .../market/settings) when they differ from the defaults.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import type { Session } from '../../auth/session.ts';
import { paths } from '../../router.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { checkbox, labelled, select, textInput } from '../../ui/field.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import { SubmissionGuard } from '../../ui/submission.ts';
import { toast } from '../../ui/toast.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { consolePage, panel } from './frame.ts';

type Collection = Schemas['Collection'];
type BurnPolicy = Schemas['BurnPolicy'];

export const BURN_POLICIES: Record<BurnPolicy, string> = {
  holder: 'Only the holder may burn',
  holder_or_studio: 'The holder or the studio may burn',
  none: 'Nobody may burn',
};

const FIELD_LABELS: Record<string, string> = {
  '/body/id': 'Id',
  '/body/name': 'Name',
  '/body/description': 'Description',
  '/body/mutableAttributes': 'Attributes the studio may change',
  '/body/royaltyBps': 'Royalty',
};

/** The service's catalogue of collections (the API has no single-collection read). */
export async function allCollections(session: Session, signal: AbortSignal): Promise<Collection[]> {
  const all: Collection[] = [];
  let cursor: string | undefined;
  // Collections are few (a studio's games); ten pages of 100 is far beyond any deployment seen.
  for (let page = 0; page < 10; page += 1) {
    const result = unwrap(
      await session.api.GET('/api/v1/collections', { params: { query: { limit: 100, cursor } }, signal }),
    );
    all.push(...result.data);
    if (!result.next_cursor) break;
    cursor = result.next_cursor;
  }
  return all;
}

/** Every collection the signed-in user may run: their own, or every one for an admin. */
export async function myCollections(session: Session, signal: AbortSignal): Promise<Collection[]> {
  const user = session.user;
  return (await allCollections(session, signal)).filter(
    (item) => user?.role === 'admin' || item.owner === user?.id,
  );
}

/** The collection's policies in words. */
export function policySummary(collection: Collection): string[] {
  const changeable = Object.entries(collection.metadataPolicy)
    .filter(([, allowed]) => allowed)
    .map(([field]) => field);
  return [
    collection.soulbound ? 'Soulbound: its NFTs never move' : 'Transferable',
    BURN_POLICIES[collection.burnPolicy],
    changeable.length
      ? `The studio may change: ${changeable.join(', ')}`
      : 'Name, image and description fixed',
    collection.mutableAttributes.length
      ? `Changeable attributes: ${collection.mutableAttributes.join(', ')}`
      : 'No changeable attribute',
  ];
}

function collectionCard(collection: Collection, mine: boolean): HTMLElement {
  return h(
    'article',
    { class: 'collection-card', 'data-collection-id': collection.id },
    h('h3', {}, h('a', { href: paths.studioCollection(collection.id) }, collection.name)),
    h(
      'p',
      { class: 'muted small' },
      h('code', {}, collection.id),
      mine ? null : ` · owner ${collection.owner}`,
    ),
    h(
      'ul',
      { class: 'policy-list' },
      policySummary(collection).map((line) => h('li', {}, line)),
    ),
  );
}

export function collectionsView(ctx: ViewContext): Cleanup {
  const list = h('div', { class: 'collection-grid', 'aria-busy': 'true' }, skeleton('row', 3));
  const shown = consolePage(
    ctx,
    'studio',
    'Your collections',
    panel('collections', 'Collections', list),
    panel(
      'new-collection',
      'New collection',
      createForm(ctx, () => void load()),
    ),
  );
  async function load(): Promise<void> {
    try {
      const collections = await myCollections(ctx.session, ctx.signal);
      replace(
        list,
        collections.length
          ? collections.map((item) => collectionCard(item, item.owner === ctx.session.user?.id))
          : emptyState('No collection yet: create the first one below.'),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(list, problemBox(problemOf(error)));
    } finally {
      list.setAttribute('aria-busy', 'false');
    }
  }
  if (shown) void load();
  return () => undefined;
}

function createForm(ctx: ViewContext, onCreated: () => void): HTMLElement {
  const guard = new SubmissionGuard();
  const id = textInput('collection-id', {
    required: true,
    maxlength: 64,
    pattern: '[a-z][a-z0-9\\-]{1,63}',
    placeholder: 'dawn-quest',
    spellcheck: 'false',
  });
  const name = textInput('collection-name', { required: true, maxlength: 200 });
  const description = h('textarea', {
    id: `${id.id}-description`,
    name: 'description',
    rows: 2,
    maxlength: 5000,
  });
  const soulbound = checkbox('Soulbound: its NFTs can never be transferred (permanent)', 'soulbound');
  const burn = select('burnPolicy', Object.entries(BURN_POLICIES), 'holder');
  const canName = checkbox('The name', 'metadata-name');
  const canImage = checkbox('The image', 'metadata-image');
  const canDescription = checkbox('The description', 'metadata-description');
  const attributes = textInput('mutableAttributes', { maxlength: 2000, placeholder: 'level, durability' });
  const trading = checkbox('Players may trade its items on the market', 'tradingEnabled', true);
  const royalty = textInput('royaltyBps', {
    type: 'number',
    min: 0,
    max: 10000,
    step: 1,
    value: '0',
    inputmode: 'numeric',
  });
  const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Create collection');
  const form = h(
    'form',
    { class: 'form-grid' },
    labelled('Id', id, 'Permanent: 2 to 64 lower-case letters, digits and dashes, starting with a letter.'),
    labelled('Name', name),
    labelled('Description (optional)', description),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Policies (permanent)'),
      soulbound.root,
      labelled('Burning', burn),
      h('p', { class: 'field-hint' }, 'After minting, the studio may change:'),
      h('div', { class: 'checks' }, canName.root, canImage.root, canDescription.root),
      labelled(
        'Attributes the studio may change (comma separated)',
        attributes,
        'A level that rises, a durability that wears down…',
      ),
    ),
    h(
      'fieldset',
      {},
      h('legend', {}, 'Trading (can change later)'),
      trading.root,
      labelled('Royalty to the studio on each sale, in basis points', royalty, '100 = 1 %.'),
    ),
    status,
    h('div', { class: 'form-actions' }, submit),
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (guard.busy) return;
    const body: Schemas['CreateCollectionRequest'] = {
      id: id.value.trim(),
      name: name.value.trim(),
      soulbound: soulbound.input.checked,
      burnPolicy: burn.value as BurnPolicy,
      metadataPolicy: {
        name: canName.input.checked,
        image: canImage.input.checked,
        description: canDescription.input.checked,
      },
      mutableAttributes: [
        ...new Set(
          attributes.value
            .split(',')
            .map((item) => item.trim())
            .filter(Boolean),
        ),
      ],
    };
    if (description.value.trim()) body.description = description.value.trim();
    submit.disabled = true;
    replace(status, h('p', { class: 'muted' }, 'Creating…'));
    try {
      // The client gives the call an Idempotency-Key of its own; the guard stops a double submit.
      const created = await guard.run(body, async () =>
        unwrap(await ctx.session.api.POST('/api/v1/collections', { body })),
      );
      if (!created) return;
      const royaltyBps = Number(royalty.value || '0');
      if (!trading.input.checked || royaltyBps !== 0) {
        unwrap(
          await ctx.session.api.PUT('/api/v1/collections/{collection_id}/market/settings', {
            params: { path: { collection_id: created.id } },
            body: { tradingEnabled: trading.input.checked, royaltyBps },
          }),
        );
      }
      toast('Collection ', h('a', { href: paths.studioCollection(created.id) }, created.name), ' created.');
      form.reset();
      replace(status);
      onCreated();
    } catch (error) {
      replace(status, problemBox(problemOf(error), FIELD_LABELS));
    } finally {
      submit.disabled = false;
    }
  });
  return form;
}
