// Issuing and revoking the service's verifiable credentials (W3C VC Data Model 2.0), signed by the
// service's did:web as a VC-JOSE JWT and/or with a Data Integrity eddsa-rdfc-2022 proof. What a
// credential attests is checked against the ledger and the user records at issuance, so the service
// never signs something it does not know to be true.
// TODO(issue 17): the ownership check still reads the ledger's Asset, Holding and Wallet rows; a
// ledger reader passed in (as permissionsOfRole is) would finish the separation once the ledger
// module offers one.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import type { DocumentLoader } from 'jsonld-signatures';
import type { components } from '../../../generated/openapi/types.ts';
import { Asset, Holding, Identity, IssuedCredential, User, Wallet } from '../../db/entities/index.ts';
import type { UserRole } from '../../db/entities/User.ts';
import type { Orm } from '../../db/orm.ts';
import { inTransaction } from '../../db/transactions.ts';
import { ownsResource } from '../authorization.ts';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError } from '../errors.ts';
import { decodeCursor, isStringPair, type Page, page } from '../ledger/cursor.ts';
import { addDataIntegrityProof } from './data-integrity.ts';
import { UNDEFINED_TERMS_CONTEXT, VC_V2_CONTEXT } from './data-model.ts';
import type { ServiceIssuer } from './service-issuer.ts';
import { allocateStatusIndex, STATUS_PURPOSE, setStatusBit, statusListUrl } from './status-list.ts';
import { signJose } from './vc-jose.ts';

export type CredentialType = components['schemas']['CredentialType'];
export type CredentialFormat = components['schemas']['CredentialFormat'];

const DAY_MS = 24 * 3600 * 1000;
/** The longest lifetime a credential may have (CREDENTIAL_MAX_VALIDITY_DAYS), and the default one. */
export const DEFAULT_MAX_VALIDITY_DAYS = 365;

export interface Caller {
  userId: string;
  role: UserRole;
}

/**
 * The permissions a PlayerRoleCredential grants for a role: exactly the OAuth scopes the role
 * allows. Passed in (the composition root gives auth's `grantableScopes`) so that identity does not
 * depend on auth (issue 17).
 */
export type PermissionsOfRole = (role: UserRole) => string[];

type Schemas = components['schemas'];

/** What to attest and about whom: the contract's IssueCredentialRequest (one form per type). */
export type IssueRequest = Schemas['IssueCredentialRequest'];

/** A credential as issued, before any proof: the contract's IssuedVerifiableCredential. */
type UnsignedCredential = Omit<Schemas['IssuedVerifiableCredential'], 'proof'>;
type CredentialSubject = UnsignedCredential['credentialSubject'];

export type IssuedCredentialView = Schemas['IssuedCredential'];

export interface CredentialContext {
  orm: Orm;
  issuer: ServiceIssuer;
  publicUrl: string;
  documentLoader: DocumentLoader;
  now: () => Date;
  /** A credential's validUntil is at most this many days after issuance (and is by default). */
  maxValidityDays: number;
  permissionsOfRole: PermissionsOfRole;
}

/** The user whose DID is the subject, when the caller may have a credential issued about it. */
async function authorizeSubject(em: EntityManager, caller: Caller, request: IssueRequest): Promise<User> {
  const identity = await em.findOne(Identity, { did: request.subjectDid }, { populate: ['user'] });
  const owner = identity?.user?.getEntity();
  const mayName =
    owner?.id === caller.userId || (caller.role === 'admin' && request.type === 'PlayerRoleCredential');
  if (!owner || !mayName) {
    throw new ForbiddenError(
      `subjectDid ${request.subjectDid} is not one of your DIDs (create one with POST /identity/create).`,
    );
  }
  return owner;
}

/** Whether the wallet holds the asset now (owns the NFT, or a positive balance); null: no such asset. */
export async function walletHolds(
  em: EntityManager,
  wallet: string,
  assetId: string,
): Promise<boolean | null> {
  const address = wallet.toLowerCase();
  const asset = await em.findOne(Asset, { id: assetId });
  if (!asset) return null;
  return asset.kind === 'nft'
    ? asset.owner === address
    : ((await em.findOne(Holding, { wallet: address, asset: asset.id }))?.balance ?? 0n) > 0n;
}

/** The ownership claim, checked against the ledger now. */
async function ownershipSubject(
  em: EntityManager,
  caller: Caller,
  request: Schemas['AssetOwnershipCredentialRequest'],
): Promise<CredentialSubject> {
  const address = request.wallet.toLowerCase();
  const wallet = await em.findOne(Wallet, { address, user: caller.userId });
  if (!wallet) throw new ForbiddenError(`Wallet ${request.wallet} is not one you control.`);
  const holds = await walletHolds(em, address, request.assetId);
  if (holds === null) throw new NotFoundError(`No asset with id ${request.assetId}.`);
  const asset = { id: request.assetId };
  if (!holds) {
    throw new ConflictError(
      `Wallet ${request.wallet} does not hold ${asset.id}.`,
      '/problems/ownership-not-held',
    );
  }
  return { id: request.subjectDid, wallet: request.wallet, assetId: asset.id };
}

export async function issueCredential(
  context: CredentialContext,
  caller: Caller,
  request: IssueRequest,
): Promise<IssuedCredentialView> {
  const now = context.now();
  const latest = now.getTime() + context.maxValidityDays * DAY_MS;
  const validUntil = request.validUntil ? new Date(request.validUntil) : new Date(latest);
  if (validUntil.getTime() <= now.getTime()) {
    throw new UnprocessableError(
      `validUntil ${validUntil.toISOString()} is not in the future.`,
      '/problems/invalid-validity-period',
    );
  }
  // 13.3: a long-lived credential outlives what it attests; revocation is then the only brake.
  if (validUntil.getTime() > latest) {
    throw new UnprocessableError(
      `validUntil may be at most ${context.maxValidityDays} days after issuance (${new Date(latest).toISOString()}).`,
      '/problems/invalid-validity-period',
    );
  }
  const formats = new Set<CredentialFormat>(request.formats ?? ['vc+jwt', 'data-integrity']);
  const id = `urn:uuid:${randomUUID()}`;

  const { subject, listId, index } = await inTransaction(context.orm, async (em) => {
    const owner = await authorizeSubject(em, caller, request);
    let claims: CredentialSubject;
    if (request.type === 'AssetOwnershipCredential') {
      claims = await ownershipSubject(em, caller, request);
    } else {
      claims = {
        id: request.subjectDid,
        role: owner.role,
        permissions: context.permissionsOfRole(owner.role),
      };
    }
    const { list, index: allocated } = await allocateStatusIndex(em, now);
    em.create(IssuedCredential, {
      id,
      type: request.type,
      subjectDid: request.subjectDid,
      requestedBy: em.getReference(User, caller.userId),
      statusList: list,
      statusListIndex: allocated,
      revokedAt: null,
      issuedAt: now,
      validUntil,
    });
    return { subject: claims, listId: list.id, index: allocated };
  });

  const statusList = statusListUrl(context.publicUrl, listId);
  const credential: UnsignedCredential = {
    '@context': [VC_V2_CONTEXT, UNDEFINED_TERMS_CONTEXT],
    id,
    type: ['VerifiableCredential', request.type],
    issuer: context.issuer.did,
    validFrom: now.toISOString(),
    validUntil: validUntil.toISOString(),
    credentialSubject: subject,
    credentialStatus: {
      id: `${statusList}#${index}`,
      type: 'BitstringStatusListEntry',
      statusPurpose: STATUS_PURPOSE,
      statusListIndex: String(index),
      statusListCredential: statusList,
    },
  };
  const jwt = formats.has('vc+jwt') ? await signJose(credential, 'vc+jwt', context.issuer.signingKey) : null;
  const secured = formats.has('data-integrity')
    ? await addDataIntegrityProof(credential, context.issuer.signingKey.multikey, context.documentLoader, now)
    : credential;
  return {
    id,
    type: request.type,
    jwt,
    credential: secured,
    status: {
      statusListCredential: statusList,
      statusListIndex: String(index),
      statusPurpose: STATUS_PURPOSE,
    },
  };
}

export type RevokedView = components['schemas']['RevokedCredential'];

/** Revokes a credential; only its requester or an admin may (to anyone else it does not exist). */
export async function revokeCredential(
  context: CredentialContext,
  caller: Caller,
  credentialId: string,
): Promise<RevokedView> {
  return inTransaction(context.orm, async (em) => {
    const issued = await em.findOne(IssuedCredential, { id: credentialId });
    if (!issued || !ownsResource(caller, issued.requestedBy.id, { admins: true })) {
      throw new NotFoundError(`No credential with id ${credentialId}.`);
    }
    if (!issued.revokedAt) {
      issued.revokedAt = context.now();
      await setStatusBit(em, issued.statusList.id, issued.statusListIndex, issued.revokedAt);
    }
    return { id: issued.id, status: 'revoked', revokedAt: issued.revokedAt.toISOString() };
  });
}

/**
 * Revokes every unrevoked PlayerRoleCredential about one of the user's DIDs (13.3: a role
 * credential must not outlive the role). Run inside the role change's transaction.
 */
export async function revokeRoleCredentials(
  em: EntityManager,
  userId: string,
  now = new Date(),
): Promise<number> {
  const dids = (await em.find(Identity, { user: userId }, { fields: ['did'] })).map((row) => row.did);
  if (dids.length === 0) return 0;
  const issued = await em.find(IssuedCredential, {
    type: 'PlayerRoleCredential',
    subjectDid: { $in: dids },
    revokedAt: null,
  });
  for (const credential of issued) {
    credential.revokedAt = now;
    await setStatusBit(em, credential.statusList.id, credential.statusListIndex, now);
  }
  await em.flush();
  return issued.length;
}

export type CredentialSummary = components['schemas']['CredentialSummary'];

export interface CredentialListQuery {
  /** Whose credentials (an admin may name anyone; others only themselves). Default: the caller. */
  user?: string;
  limit: number;
  cursor?: string;
}

/**
 * The credentials of a user: those it requested and those about one of its DIDs, oldest first,
 * keyed on (issuedAt, id).
 */
export async function listCredentials(
  context: Pick<CredentialContext, 'orm' | 'publicUrl' | 'now'>,
  caller: Caller,
  query: CredentialListQuery,
): Promise<Page<CredentialSummary>> {
  const userId = query.user ?? caller.userId;
  if (userId !== caller.userId && caller.role !== 'admin')
    throw new ForbiddenError("Only an admin may list another user's credentials.");
  const after = decodeCursor(query.cursor, 'credentials', isStringPair);
  const em = context.orm.em.fork();
  const dids = (await em.find(Identity, { user: userId }, { fields: ['did'] })).map((row) => row.did);
  const whose = { $or: [{ requestedBy: userId }, ...(dids.length ? [{ subjectDid: { $in: dids } }] : [])] };
  const position = after
    ? {
        $or: [
          { issuedAt: { $gt: new Date(after[0]) } },
          { issuedAt: new Date(after[0]), id: { $gt: after[1] } },
        ],
      }
    : {};
  const rows = await em.find(
    IssuedCredential,
    { $and: [whose, position] },
    { orderBy: { issuedAt: 'asc', id: 'asc' }, limit: query.limit + 1 },
  );
  const now = context.now().getTime();
  const result = page(rows, query.limit, 'credentials', (row) => [row.issuedAt.toISOString(), row.id]);
  return {
    next_cursor: result.next_cursor,
    data: result.data.map((row) => ({
      id: row.id,
      type: row.type as CredentialType,
      subjectDid: row.subjectDid,
      requestedBy: row.requestedBy.id,
      issuedAt: row.issuedAt.toISOString(),
      validUntil: row.validUntil?.toISOString() ?? null,
      status: row.revokedAt
        ? 'revoked'
        : row.validUntil && row.validUntil.getTime() < now
          ? 'expired'
          : 'active',
      revokedAt: row.revokedAt?.toISOString() ?? null,
      statusListCredential: statusListUrl(context.publicUrl, row.statusList.id),
      statusListIndex: String(row.statusListIndex),
    })),
  };
}
