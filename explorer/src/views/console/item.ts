// One item of a studio's collection: its state, freeze and unfreeze (each confirmed, saying what
// happens), a metadata edit limited to what the collection's policy lets change (PATCH
// .../metadata with the version it was decided against), its metadata history, and its audit entries.
import type { Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import { paths } from '../../router.ts';
import { confirmAction } from '../../ui/confirm.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { labelled, textInput } from '../../ui/field.ts';
import { attributeValue, shortAddress } from '../../ui/format.ts';
import { problemBox } from '../../ui/problem-view.ts';
import { SubmissionGuard } from '../../ui/submission.ts';
import { toast } from '../../ui/toast.ts';
import { assetImage, attributeList } from '../asset-card.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { metadataHistory } from '../metadata-history.ts';
import { auditList } from './audit-log.ts';
import { allCollections } from './collections.ts';
import { consolePage, panel } from './frame.ts';

type Asset = Schemas['Asset'];
type Collection = Schemas['Collection'];

const EDIT_FIELDS: Record<string, string> = {
  '/body/name': 'Name',
  '/body/image': 'Image URL',
  '/body/description': 'Description',
  '/body/attributes': 'Attributes',
};

export function itemView(ctx: ViewContext, assetId: string): Cleanup {
  const summary = h(
    'div',
    { class: 'asset-header', 'aria-busy': 'true' },
    skeleton('asset-image'),
    h('div', {}, skeleton('line', 4)),
  );
  const edit = h('div', {}, skeleton('row', 2));
  const history = metadataHistory(ctx.session, assetId, ctx.signal, { showAuthor: true });
  const audit = auditList(ctx.session, ctx.signal, 10);
  const shown = consolePage(
    ctx,
    'studio',
    'Item',
    summary,
    panel('edit', 'Edit metadata', edit),
    panel('history', 'Metadata history', history.elements),
    panel('item-audit', 'Audit entries', audit.element),
  );
  if (!shown) return () => undefined;

  async function load(): Promise<void> {
    try {
      const [asset, collections] = await Promise.all([
        ctx.session.api
          .GET('/assets/{asset_id}', {
            params: { path: { asset_id: assetId } },
            signal: ctx.signal,
            headers: { 'Cache-Control': 'no-cache' },
          })
          .then(unwrap),
        allCollections(ctx.session, ctx.signal),
      ]);
      const collection = collections.find((item) => item.id === asset.collection);
      const title = ctx.root.querySelector('h1');
      if (title) title.textContent = asset.name;
      replace(
        summary,
        assetImage(asset, 'asset-image'),
        h('div', { class: 'asset-summary' }, stateOf(asset), actions(asset), attributeList(asset)),
      );
      replace(
        edit,
        collection
          ? editForm(asset, collection)
          : h('p', { class: 'muted' }, 'Its collection was not found.'),
      );
    } catch (error) {
      if (!ctx.signal.aborted) replace(summary, problemBox(problemOf(error)));
    } finally {
      summary.setAttribute('aria-busy', 'false');
    }
  }

  function stateOf(asset: Asset): HTMLElement {
    const facts: [string, string | HTMLElement][] = [
      [
        'State',
        asset.burned
          ? 'Burned'
          : asset.frozen
            ? `Frozen${asset.frozenBy ? ` by ${asset.frozenBy}` : ''}`
            : 'Active',
      ],
      ['Collection', h('a', { href: paths.studioCollection(asset.collection) }, asset.collection)],
      [
        'Owner',
        asset.owner
          ? h(
              'a',
              { href: paths.wallet(asset.owner), title: asset.owner },
              h('code', {}, shortAddress(asset.owner)),
            )
          : '—',
      ],
      ['Metadata version', `v${asset.metadataVersion ?? 0}`],
      ['Id', h('code', {}, asset.id)],
      ['Public page', h('a', { href: paths.asset(asset.id) }, 'In the explorer')],
    ];
    return h(
      'dl',
      { class: 'facts', 'data-testid': 'item-state', 'data-frozen': String(asset.frozen === true) },
      facts.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
    );
  }

  function actions(asset: Asset): HTMLElement | null {
    if (asset.burned) return null;
    const frozen = asset.frozen === true;
    const button = h(
      'button',
      { type: 'button', class: frozen ? 'secondary' : 'danger' },
      frozen ? 'Unfreeze' : 'Freeze',
    );
    const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
    button.addEventListener('click', async () => {
      const ok = await confirmAction(
        frozen
          ? {
              title: `Unfreeze ${asset.name}?`,
              consequences: h(
                'p',
                {},
                `${asset.name} can move, trade and burn again as its collection allows.`,
              ),
              confirmLabel: `Unfreeze ${asset.name}`,
            }
          : {
              title: `Freeze ${asset.name}?`,
              consequences: [
                h(
                  'p',
                  {},
                  `${asset.name} stops moving: transfers, trades, crafts and burns of it are refused until it is unfrozen. Its holder keeps it.`,
                ),
                h('p', { class: 'muted' }, 'The freeze is recorded in the audit log with your name.'),
              ],
              confirmLabel: `Freeze ${asset.name}`,
              danger: true,
            },
      );
      if (!ok) return;
      button.disabled = true;
      try {
        const path = { params: { path: { asset_id: asset.id } } };
        unwrap(
          frozen
            ? await ctx.session.api.POST('/api/v1/assets/{asset_id}/unfreeze', path)
            : await ctx.session.api.POST('/api/v1/assets/{asset_id}/freeze', path),
        );
        toast(`${asset.name} ${frozen ? 'unfrozen' : 'frozen'}.`);
        refresh();
      } catch (error) {
        replace(status, problemBox(problemOf(error)));
        button.disabled = false;
      }
    });
    return h('div', { class: 'asset-actions' }, button, status);
  }

  function editForm(asset: Asset, collection: Collection): HTMLElement {
    const policy = collection.metadataPolicy;
    const current = new Map(
      asset.metadata.attributes.map((attribute) => [attribute.trait_type, String(attribute.value)]),
    );
    const name = policy.name
      ? textInput('name', { value: asset.name, maxlength: 200, required: true })
      : null;
    const image = policy.image
      ? textInput('image', { type: 'url', value: asset.metadata.image, maxlength: 2048 })
      : null;
    const description = policy.description
      ? h(
          'textarea',
          { id: `edit-description-${asset.id}`, rows: 2, maxlength: 5000 },
          asset.description ?? '',
        )
      : null;
    const traits = collection.mutableAttributes.map((trait) => ({
      trait,
      input: textInput(`attribute-${trait}`, { value: current.get(trait) ?? '', maxlength: 200 }),
    }));
    if (!name && !image && !description && traits.length === 0) {
      return h(
        'p',
        { class: 'muted' },
        `The policy of ${collection.name} lets nothing change after minting.`,
      );
    }
    const guard = new SubmissionGuard();
    const status = h('div', { class: 'form-status', 'aria-live': 'polite' });
    const form = h(
      'form',
      { class: 'form-grid' },
      name ? labelled('Name', name) : null,
      image ? labelled('Image URL', image) : null,
      description ? labelled('Description', description) : null,
      traits.map(({ trait, input }) => labelled(`Attribute “${trait}”`, input)),
      status,
      h('div', { class: 'form-actions' }, h('button', { type: 'submit' }, 'Save metadata')),
    );
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (guard.busy) return;
      const body: Schemas['AssetMetadataUpdate'] = { version: asset.metadataVersion ?? 0 };
      if (name && name.value.trim() !== asset.name) body.name = name.value.trim();
      if (image && image.value.trim() !== asset.metadata.image) body.image = image.value.trim();
      if (description && description.value.trim() !== (asset.description ?? ''))
        body.description = description.value.trim() || null;
      const changed = traits.filter(
        ({ trait, input }) => input.value.trim() !== '' && input.value.trim() !== (current.get(trait) ?? ''),
      );
      if (changed.length)
        body.attributes = changed.map(({ trait, input }) => ({
          trait_type: trait,
          value: attributeValue(input.value.trim()),
        }));
      if (Object.keys(body).length === 1) {
        replace(status, h('p', { class: 'muted' }, 'Nothing changed.'));
        return;
      }
      try {
        const updated = await guard.run(body, async (key) =>
          unwrap(
            await ctx.session.api.PATCH('/api/v1/assets/{asset_id}/metadata', {
              params: { path: { asset_id: asset.id }, header: { 'Idempotency-Key': key } },
              body,
            }),
          ),
        );
        if (!updated) return;
        toast(`${updated.name}: metadata v${updated.metadataVersion ?? ''} saved.`);
        refresh();
      } catch (error) {
        const problem = problemOf(error);
        replace(
          status,
          problemBox(problem, EDIT_FIELDS),
          problem.type === '/problems/version-mismatch'
            ? h('p', {}, 'Someone changed it meanwhile: the page now shows the current version.')
            : null,
        );
        if (problem.type === '/problems/version-mismatch') void load();
      }
    });
    return form;
  }

  function refresh(): void {
    void load();
    void history.reload();
    void audit.load({ objectId: assetId });
  }

  refresh();
  return () => undefined;
}
