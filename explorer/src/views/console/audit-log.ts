// The audit trail (GET /api/v1/audit-log): newest first, filtered by actor, object, action and time,
// one cursor page at a time. An admin reads every entry; a studio what concerns its own objects (the
// service decides). Also embedded, with a fixed object, in the item page.
import type { Operations, Schemas } from '../../api/client.ts';
import { problemOf, unwrap } from '../../api/problem.ts';
import type { Session } from '../../auth/session.ts';
import { h, replace, skeleton } from '../../ui/dom.ts';
import { labelled, select, textInput } from '../../ui/field.ts';
import { formatTime } from '../../ui/format.ts';
import { CursorPager } from '../../ui/pager.ts';
import { emptyState, problemBox } from '../../ui/problem-view.ts';
import type { Cleanup, ViewContext } from '../context.ts';
import { consolePage, panel, type Section } from './frame.ts';

type AuditEntry = Schemas['AuditEntry'];
type AuditAction = Schemas['AuditAction'];
export type AuditFilter = Omit<
  NonNullable<Operations['listAuditLog']['parameters']['query']>,
  'limit' | 'cursor'
>;

/** Every action of the contract's AuditAction, in words (the compiler checks none is missing). */
const ACTIONS: Record<AuditAction, string> = {
  'user.created': 'User created',
  'user.roleChanged': 'Role changed',
  'serviceAccount.created': 'Service account created',
  'serviceAccount.deleted': 'Service account deleted',
  'clientSecret.created': 'Client secret created',
  'clientSecret.revoked': 'Client secret revoked',
  'application.created': 'OAuth application registered',
  'application.deleted': 'OAuth application deleted',
  'apiKey.created': 'API key created',
  'apiKey.revoked': 'API key revoked',
  'webhook.created': 'Webhook created',
  'webhook.updated': 'Webhook updated',
  'webhook.secretRotated': 'Webhook secret rotated',
  'webhook.deleted': 'Webhook deleted',
  'currency.created': 'Currency created',
  'asset.minted': 'Minted',
  'asset.burned': 'Burned',
  'asset.frozen': 'Frozen',
  'asset.unfrozen': 'Unfrozen',
  'asset.metadataChanged': 'Metadata changed',
  'collection.created': 'Collection created',
  'collection.marketChanged': 'Trading settings changed',
  'recipe.created': 'Recipe created',
  'storeOffer.created': 'Store offer created',
  'storeOffer.updated': 'Store offer updated',
  'claimCode.created': 'Claim code created',
  'claimCode.updated': 'Claim code updated',
  'dropTable.created': 'Drop table created',
  'lootBox.created': 'Loot box created',
  'chainContract.registered': 'Chain contract registered',
  'chainContract.suspended': 'Chain contract suspended',
  'chainContract.resumed': 'Chain contract resumed',
  'chainContract.unregistered': 'Chain contract unregistered',
  'chainContract.reassigned': 'Chain contract reassigned',
};

function isAction(value: string): value is AuditAction {
  return value in ACTIONS;
}

function actorOf(entry: AuditEntry): HTMLElement {
  const { actor, credential } = entry;
  const who =
    actor.kind === 'service'
      ? 'the service'
      : actor.kind === 'command'
        ? `command ${actor.id ?? ''}`
        : `${actor.kind === 'serviceAccount' ? 'service account ' : ''}${actor.id ?? '?'}${actor.role ? ` (${actor.role})` : ''}`;
  const through =
    credential.kind === 'apiKey'
      ? `with API key ${credential.apiKeyId ?? ''}`
      : credential.kind === 'token' && credential.clientId
        ? `via ${credential.clientId}`
        : null;
  return h('div', {}, who, through ? h('div', { class: 'muted small' }, through) : null);
}

function scalar(value: unknown): boolean {
  return value === null || ['string', 'number', 'boolean'].includes(typeof value);
}

/** Before and after, summed up as the fields that changed (the whole states one click away). */
function changeOf(entry: AuditEntry): HTMLElement {
  const { before, after } = entry;
  const lines: string[] = [];
  if (before && after && typeof before === 'object' && typeof after === 'object') {
    const old = before as Record<string, unknown>;
    const now = after as Record<string, unknown>;
    for (const key of new Set([...Object.keys(old), ...Object.keys(now)])) {
      const was = old[key];
      const is = now[key];
      if (JSON.stringify(was) === JSON.stringify(is)) continue;
      lines.push(
        scalar(was) && scalar(is)
          ? `${key}: ${JSON.stringify(was) ?? '—'} → ${JSON.stringify(is) ?? '—'}`
          : `${key} changed`,
      );
    }
  }
  const summary = lines.length
    ? lines.join('; ')
    : before == null
      ? 'created'
      : after == null
        ? 'removed'
        : 'details';
  return h(
    'details',
    { class: 'audit-change' },
    h('summary', {}, summary.length > 140 ? `${summary.slice(0, 139)}…` : summary),
    h(
      'pre',
      {},
      JSON.stringify(
        { before, after, address: entry.address, requestId: entry.requestId, hash: entry.hash },
        null,
        2,
      ),
    ),
  );
}

export interface AuditList {
  element: HTMLElement;
  /** Shows the first page for these filters. */
  load(filter: AuditFilter): Promise<void>;
}

export function auditList(session: Session, signal: AbortSignal, pageSize = 20): AuditList {
  let filter: AuditFilter = {};
  const body = h(
    'div',
    { class: 'table-scroll', 'aria-live': 'polite', 'data-testid': 'audit-entries' },
    skeleton('row', 3),
  );
  const pager = new CursorPager('audit entries', () => void show());
  async function show(): Promise<void> {
    body.setAttribute('aria-busy', 'true');
    try {
      const page = unwrap(
        await session.api.GET('/api/v1/audit-log', {
          params: { query: { ...filter, limit: pageSize, cursor: pager.cursor } },
          signal,
        }),
      );
      pager.update(page.next_cursor);
      replace(
        body,
        page.data.length === 0
          ? emptyState('No entry matches.')
          : h(
              'table',
              { class: 'audit-table' },
              h('caption', { class: 'visually-hidden' }, 'Audit entries, newest first'),
              h(
                'thead',
                {},
                h(
                  'tr',
                  {},
                  ['When', 'Action', 'Who', 'Object', 'Change'].map((name) =>
                    h('th', { scope: 'col' }, name),
                  ),
                ),
              ),
              h(
                'tbody',
                {},
                page.data.map((entry) =>
                  h(
                    'tr',
                    { 'data-seq': String(entry.seq), 'data-action': entry.action },
                    h('td', {}, h('time', { datetime: entry.at }, formatTime(entry.at))),
                    h('td', {}, h('span', { class: 'badge' }, ACTIONS[entry.action] ?? entry.action)),
                    h('td', {}, actorOf(entry)),
                    h('td', {}, `${entry.object.type} `, h('code', {}, entry.object.id)),
                    h('td', {}, changeOf(entry)),
                  ),
                ),
              ),
            ),
      );
    } catch (error) {
      if (!signal.aborted) replace(body, problemBox(problemOf(error)));
    } finally {
      body.setAttribute('aria-busy', 'false');
    }
  }
  return {
    element: h('div', {}, body, pager.element),
    async load(next) {
      filter = next;
      pager.reset();
      await show();
    },
  };
}

/** datetime-local gives local wall time without a zone; the API wants an instant. */
function instant(local: string): string | undefined {
  return local ? new Date(local).toISOString() : undefined;
}

export function auditLogView(ctx: ViewContext, section: Section): Cleanup {
  const list = auditList(ctx.session, ctx.signal);
  const query = new URLSearchParams(location.search);
  const actor = textInput('actor', {
    value: query.get('actor') ?? '',
    maxlength: 64,
    placeholder: 'usr_… or svc_…',
  });
  const objectType = textInput('objectType', {
    value: query.get('objectType') ?? '',
    maxlength: 64,
    placeholder: 'asset, collection, webhook…',
  });
  const objectId = textInput('objectId', { value: query.get('objectId') ?? '', maxlength: 200 });
  const action = select(
    'action',
    [['', 'Any action'], ...Object.entries(ACTIONS)],
    query.get('action') ?? '',
  );
  const from = textInput('from', { type: 'datetime-local' });
  const to = textInput('to', { type: 'datetime-local' });
  const form = h(
    'form',
    { class: 'filters', role: 'search', 'aria-label': 'Filter the audit log' },
    labelled('Action', action),
    labelled('Actor', actor),
    labelled('Object type', objectType),
    labelled('Object id', objectId),
    labelled('From', from),
    labelled('Before', to),
    h('div', { class: 'filter-actions' }, h('button', { type: 'submit' }, 'Apply filters')),
  );
  const currentFilter = (): AuditFilter => ({
    actor: actor.value.trim() || undefined,
    objectType: objectType.value.trim() || undefined,
    objectId: objectId.value.trim() || undefined,
    action: isAction(action.value) ? action.value : undefined,
    from: instant(from.value),
    to: instant(to.value),
  });
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    void list.load(currentFilter());
  });
  const shown = consolePage(
    ctx,
    section,
    'Audit log',
    h(
      'p',
      { class: 'muted' },
      section === 'admin'
        ? 'Every privileged or sensitive action, newest first, each recorded with its action and chained by hash.'
        : 'What was done to your collections, their items, and your keys, webhooks and service accounts, newest first.',
    ),
    panel('audit-filters', 'Filters', form),
    panel('audit-entries', 'Entries', list.element),
  );
  if (shown) void list.load(currentFilter());
  return () => undefined;
}
