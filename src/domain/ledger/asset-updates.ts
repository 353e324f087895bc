// Changes to an asset other than moves (issue 21): freezing and unfreezing, and living metadata (the
// studio updates an NFT's attributes, name, image or description as its collection allows). Each is
// one plan through the ledger store: the asset's columns set (`assetUpdates`), and for metadata a new
// version (`metadataVersions`, guarded by `assetVersion` so two updates of one version never both
// apply), with one `assetUpdated` event carrying the asset as it is after the change.

import type { Database } from '../../db/database.ts';
import { AssetMetadataVersion } from '../../db/entities/AssetMetadataVersion.ts';
import type { MetadataPolicy } from '../../db/entities/Collection.ts';
import type { ReadStatements } from '../../db/read-statements.ts';
import { auditDraft } from '../audit.ts';
import { assertCollectionPowers, assertMayUnfreeze } from '../authorization.ts';
import { AppError, ConflictError, ValidationError } from '../errors.ts';
import type { Actor } from './actor.ts';
import { ASSET_COLUMNS, type AssetRow, assetFieldsOf } from './asset-rows.ts';
import { assetNotFound } from './assets.ts';
import { AssetOnChainError, isChainAssetId } from './chain-assets.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import type { Idempotency, IdempotencyKey, WriteResult } from './idempotency.ts';
import { endListingsOf, listingDecimalsFrom } from './listings.ts';
import { assetUpdatedEvent } from './outbox.ts';
import type { LedgerDatabase } from './store/index.ts';
import type { AssetUpdate, LedgerStore, NewMetadataVersion, Plan } from './store/plan.ts';
import { type AssetFields, type AssetMetadataView, type AssetView, assetView } from './views.ts';
import { earlierAnswerOr } from './writes.ts';

type Attribute = AssetMetadataView['attributes'][number];

/** `PATCH /api/v1/assets/{asset_id}/metadata`: what to change, merged into the current metadata. */
export interface MetadataUpdateInput {
  /** The version the change was decided against (optimistic concurrency). */
  version?: number;
  attributes?: Attribute[];
  name?: string;
  image?: string;
  description?: string | null;
}

/** One entry of `GET /api/v1/assets/{asset_id}/metadata/history`. */
export interface MetadataVersionView {
  version: number;
  name: string;
  metadata: AssetMetadataView;
  changedBy: string | null;
  changedAt: string;
}

export interface AssetUpdateService {
  /** Freezes (`true`) or unfreezes an asset; idempotent (no change, no event). */
  setFrozen(actor: Actor, assetId: string, frozen: boolean): Promise<AssetView>;
  updateMetadata(
    actor: Actor,
    assetId: string,
    input: MetadataUpdateInput,
    idempotencyKey?: string,
  ): Promise<WriteResult<AssetView>>;
  history(assetId: string, options: { limit: number; cursor?: string }): Promise<Page<MetadataVersionView>>;
}

/** The most attributes an asset's metadata holds (the contract's `AssetMetadata.attributes.maxItems`). */
const MAX_ATTRIBUTES = 64;
/** Rounds of read-decide-apply when another update of the same asset commits in between. */
const ATTEMPTS = 5;

class VersionMismatchError extends AppError {
  constructor(found: bigint | number, sent: number) {
    super(409, '/problems/version-mismatch', {
      detail: `The asset is at version ${found}, not ${sent}.`,
      errors: [{ pointer: '/body/version', detail: `the current version is ${found}` }],
    });
  }
}

/** The asset with what its updates need of its collection. */
interface Current {
  fields: AssetFields & { metadataVersion: number };
  creatorId: string;
  collectionOwner: string;
  /** Who froze it; null while it is not frozen. */
  frozenBy: string | null;
  mutableAttributes: ReadonlySet<string>;
  policy: MetadataPolicy;
}

const READ_CURRENT =
  `select ${ASSET_COLUMNS}, a.creator_id, c.owner_id as collection_owner, c.mutable_attributes, ` +
  'c.metadata_policy from asset a join collection c on c.id = a.collection_id where a.id = ?';
/** A row of READ_CURRENT: the asset's columns (./asset-rows.ts reads them) and its collection's rules. */
type CurrentRow = AssetRow & {
  creator_id: string;
  collection_owner: string;
  /** JSON: the attribute names that stay mutable, or null. */
  mutable_attributes: unknown;
  /** JSON: the collection's MetadataPolicy, or null. */
  metadata_policy: unknown;
};

/** JSON with object keys sorted: PostgreSQL's jsonb hands keys back in its own order. */
function sorted(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sorted);
  if (value && typeof value === 'object')
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>)
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([k, v]) => [k, sorted(v)]),
    );
  return value;
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

/** The asset as it is now, with its collection's rules; undefined when no asset has the id. */
async function readCurrent(statements: ReadStatements, assetId: string): Promise<Current | undefined> {
  const [row] = await statements.all<CurrentRow>(READ_CURRENT, [assetId]);
  if (!row) return undefined;
  const fields = assetFieldsOf(row, statements);
  return {
    fields: { ...fields, metadataVersion: fields.metadataVersion ?? 0 },
    creatorId: row.creator_id,
    collectionOwner: row.collection_owner,
    frozenBy: row.frozen_by ?? null,
    mutableAttributes: new Set((statements.json(row.mutable_attributes) as string[] | null) ?? []),
    policy: (statements.json(row.metadata_policy) as MetadataPolicy | null) ?? {},
  };
}

/** The audit trail's object of a change of the asset: in its collection, its studio's. */
function auditedAsset(current: Current) {
  return {
    type: 'asset',
    id: current.fields.id,
    ownerId: current.collectionOwner,
    collectionId: current.fields.collection.id,
  };
}

/**
 * A new version of the asset's name, description and metadata, decided against the version read
 * (`assetVersion` guard): the columns set, the version row (the first change also keeps version 0,
 * the asset as created), and one `assetUpdated` event with the asset after it.
 */
function versionPlan(
  current: Current,
  next: { name: string; description: string | null; metadata: Record<string, unknown> },
  changedBy: string | null,
  at: Date,
): { plan: Omit<Plan, 'idempotency'>; view: AssetView } {
  const before = current.fields;
  const assetId = before.id;
  const version = before.metadataVersion + 1;
  const versions: NewMetadataVersion[] = [];
  if (before.metadataVersion === 0)
    versions.push({
      assetId,
      version: 0,
      name: before.name,
      metadata: before.metadata,
      changedBy: current.creatorId,
      changedAt: before.createdAt,
    });
  versions.push({ assetId, version, name: next.name, metadata: next.metadata, changedBy, changedAt: at });
  const update: AssetUpdate = { assetId, ...next, metadataVersion: version };
  const view = assetView({ ...before, ...next, metadataVersion: version });
  return {
    plan: {
      at,
      // The frozen state and owner read too: the event's asset is the asset as it is after the plan
      // (and reaches its owner's subscribers).
      guards: [
        {
          kind: 'assetVersion',
          assetId,
          version: before.metadataVersion,
          frozen: before.frozen ?? false,
          owner: before.owner ?? null,
        },
      ],
      assetUpdates: [update],
      metadataVersions: versions,
      events: [assetUpdatedEvent(view, at)],
    },
    view,
  };
}

/**
 * Late metadata of an on-chain token (issue 20): what the fetcher read (src/chain/metadata.ts: the
 * asset metadata shape plus `name`, `description`), written into the token's ledger asset once it
 * exists, as a new version by the service (`changedBy` null) with its `assetUpdated` event. False
 * when there is no asset yet (its creation takes the metadata) or nothing changes.
 */
export async function applyFetchedMetadata(
  { reads: statements, store }: LedgerDatabase,
  assetId: string,
  fetched: Record<string, unknown>,
): Promise<boolean> {
  const text = (value: unknown) => (typeof value === 'string' && value ? value : null);
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    const current = await readCurrent(statements, assetId);
    if (!current) return false;
    const before = current.fields;
    const metadata = {
      ...before.metadata,
      image: text(fetched.image) ?? before.metadata.image,
      attributes: Array.isArray(fetched.attributes) ? fetched.attributes : [],
    };
    const next = {
      name: text(fetched.name) ?? before.name,
      description: text(fetched.description) ?? before.description ?? null,
      metadata,
    };
    if (
      next.name === before.name &&
      next.description === before.description &&
      sameJson(metadata, before.metadata)
    )
      return false;
    const { plan } = versionPlan(current, next, null, new Date());
    if ((await store.apply(plan)).outcome === 'applied') return true;
  }
  return false;
}

export function createAssetUpdateService(
  { orm, reads: statements }: Database,
  idempotency: Idempotency,
  store: LedgerStore,
): AssetUpdateService {
  async function read(assetId: string): Promise<Current> {
    const current = await readCurrent(statements, assetId);
    if (!current) throw assetNotFound(assetId);
    return current;
  }

  /**
   * Only the collection's studio (with the studio role) or an admin changes its assets, and an
   * unfreeze needs the role level of who froze it (src/domain/authorization.ts); never a chain token.
   */
  function authorize(actor: Actor, current: Current, what: 'freeze' | 'unfreeze' | 'update'): void {
    const { id, collection } = current.fields;
    const ref = { id: collection.id, ownerId: current.collectionOwner };
    if (what === 'unfreeze') assertMayUnfreeze(actor, ref, current.frozenBy);
    else assertCollectionPowers(actor, ref, `${what} its assets`);
    if (isChainAssetId(id)) throw new AssetOnChainError(id);
  }

  /** The plan's event: the asset after the change. */
  function changed(current: Current, update: Partial<AssetFields>, at: Date) {
    const view = assetView({ ...current.fields, ...update });
    return { view, event: assetUpdatedEvent(view, at) };
  }

  /** Refuses what the collection does not let change; every refused field is named. */
  function checkMutable(current: Current, input: MetadataUpdateInput): void {
    const errors: { pointer: string; detail: string }[] = [];
    const refused: string[] = [];
    input.attributes?.forEach((attribute, i) => {
      if (current.mutableAttributes.has(attribute.trait_type)) return;
      refused.push(`attribute ${attribute.trait_type}`);
      errors.push({
        pointer: `/body/attributes/${i}/trait_type`,
        detail: `${attribute.trait_type} is not a mutable attribute of the collection`,
      });
    });
    for (const field of ['name', 'image', 'description'] as const) {
      if (input[field] === undefined || current.policy[field] === true) continue;
      refused.push(field);
      errors.push({
        pointer: `/body/${field}`,
        detail: `the collection's metadataPolicy does not allow changing ${field}`,
      });
    }
    if (errors.length === 0) return;
    throw new AppError(409, '/problems/metadata-not-mutable', {
      detail: `The collection ${current.fields.collection.id} does not allow changing: ${refused.join(', ')}.`,
      errors,
    });
  }

  /** The metadata after the change: each attribute given replaces its trait's value, or is added. */
  function merged(current: AssetMetadataView, input: MetadataUpdateInput): AssetMetadataView {
    const attributes = current.attributes.map((attribute) => ({ ...attribute }));
    for (const change of input.attributes ?? []) {
      const existing = attributes.find((attribute) => attribute.trait_type === change.trait_type);
      if (existing) existing.value = change.value;
      else attributes.push({ trait_type: change.trait_type, value: change.value });
    }
    if (attributes.length > MAX_ATTRIBUTES)
      throw new ValidationError(`The metadata would hold more than ${MAX_ATTRIBUTES} attributes.`, [
        { pointer: '/body/attributes', detail: `would bring the asset past ${MAX_ATTRIBUTES} attributes` },
      ]);
    return { ...current, attributes, ...(input.image !== undefined && { image: input.image }) };
  }

  return {
    async setFrozen(actor, assetId, frozen) {
      for (let attempt = 1; ; attempt++) {
        const current = await read(assetId);
        authorize(actor, current, frozen ? 'freeze' : 'unfreeze');
        if (current.fields.frozen === frozen) return assetView(current.fields);
        const at = new Date();
        const frozenBy = frozen ? actor.userId : null;
        const { view, event } = changed(current, { frozen, frozenBy }, at);
        // Issue 35: a freeze ends the NFT's active listings in the same plan.
        const ended = frozen
          ? await endListingsOf(
              statements,
              listingDecimalsFrom(statements),
              [{ assetId, reason: 'frozen' }],
              at,
            )
          : { listingStatuses: [], events: [] };
        // The version guard keeps the event's asset exact: a metadata update in between re-reads.
        const outcome = await store.apply({
          at,
          // Decided on the state read: a concurrent freeze, unfreeze or update makes this one re-read
          // (two freezes at once: the second finds it frozen and changes nothing, no second event).
          guards: [
            {
              kind: 'assetVersion',
              assetId,
              version: current.fields.metadataVersion,
              frozen: current.fields.frozen ?? false,
              owner: current.fields.owner ?? null,
            },
          ],
          assetUpdates: [{ assetId, frozen, frozenBy }],
          listingStatuses: ended.listingStatuses,
          events: [event, ...ended.events],
          audit: [
            auditDraft(
              frozen ? 'asset.frozen' : 'asset.unfrozen',
              auditedAsset(current),
              { before: { frozen: !frozen, frozenBy: current.frozenBy }, after: { frozen, frozenBy } },
              at,
            ),
          ],
        });
        if (outcome.outcome === 'applied') return view;
        if (attempt >= ATTEMPTS) throw new ConflictError(`${assetId} kept changing; try again.`);
      }
    },

    async updateMetadata(actor, assetId, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'updateAssetMetadata',
        key: idempotencyKey,
        request: { assetId, ...input },
      });
      for (let attempt = 1; ; attempt++) {
        let current: Current;
        let metadata: AssetMetadataView;
        try {
          current = await read(assetId);
          authorize(actor, current, 'update');
          checkMutable(current, input);
          const found = current.fields.metadataVersion;
          if (input.version !== undefined && input.version !== found)
            throw new VersionMismatchError(found, input.version);
          metadata = merged(current.fields.metadata as unknown as AssetMetadataView, input);
        } catch (error) {
          return earlierAnswerOr(idempotency, key, error);
        }
        const before = current.fields;
        const name = input.name ?? before.name;
        const description =
          (input.description === undefined ? before.description : input.description) ?? null;
        const unchanged =
          name === before.name && description === before.description && sameJson(metadata, before.metadata);
        if (unchanged) return { status: 200, body: assetView(before), headers: {}, replayed: false };
        const at = new Date();
        const next = { name, description, metadata: metadata as unknown as Record<string, unknown> };
        const { plan: changes, view } = versionPlan(current, next, actor.userId, at);
        const response = { status: 200, body: view, headers: {} };
        const change = {
          before: {
            version: before.metadataVersion,
            name: before.name,
            description: before.description,
            metadata: before.metadata,
          },
          after: { version: before.metadataVersion + 1, name, description, metadata: next.metadata },
        };
        const plan: Plan = {
          ...changes,
          idempotency: key && { key, response },
          audit: [auditDraft('asset.metadataChanged', auditedAsset(current), change, at)],
        };
        const outcome = await store.apply(plan);
        if (outcome.outcome === 'applied') return { ...response, replayed: false };
        if (outcome.outcome === 'replay')
          return idempotency.replay<AssetView>(outcome.record, key as IdempotencyKey);
        // Another change of this asset committed since the read: a new version answers the
        // conditional update; a freeze or unfreeze (same version) makes it read again.
        const found = outcome.found ?? 0n;
        if (input.version !== undefined && found !== BigInt(input.version))
          throw new VersionMismatchError(found, input.version);
        if (attempt >= ATTEMPTS) throw new ConflictError(`${assetId} kept changing; try again.`);
      }
    },

    async history(assetId, { limit, cursor }) {
      const before = decodeCursor(cursor, 'metadata-history', isInteger);
      const current = await read(assetId);
      const rows = await orm.em
        .fork()
        .find(
          AssetMetadataVersion,
          before === undefined ? { assetId } : { assetId, version: { $lt: before } },
          { orderBy: { version: 'desc' }, limit: limit + 1 },
        );
      const result = page(rows, limit, 'metadata-history', (row) => row.version);
      const data = result.data.map((row) => ({
        version: row.version,
        name: row.name,
        metadata: row.metadata as unknown as AssetMetadataView,
        changedBy: row.changedBy ?? null,
        changedAt: row.changedAt.toISOString(),
      }));
      // Never updated: its one version is the asset as created.
      if (rows.length === 0 && before === undefined)
        data.push({
          version: 0,
          name: current.fields.name,
          metadata: current.fields.metadata as unknown as AssetMetadataView,
          changedBy: current.creatorId,
          changedAt: current.fields.createdAt.toISOString(),
        });
      return { data, next_cursor: result.next_cursor };
    },
  };
}
