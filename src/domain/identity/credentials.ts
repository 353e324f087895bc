// Issuing and revoking the service's verifiable credentials (W3C VC Data Model 2.0), signed by the
// service's did:web as a VC-JOSE JWT and/or with a Data Integrity eddsa-rdfc-2022 proof. What a
// credential attests is checked against the ledger and the user records at issuance, so the service
// never signs something it does not know to be true.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/sql';
import type { DocumentLoader } from 'jsonld-signatures';
import { grantableScopes } from '../../auth/scopes.ts';
import { Asset, Holding, Identity, IssuedCredential, User, Wallet } from '../../db/entities/index.ts';
import type { Orm } from '../../db/orm.ts';
import type { Role } from '../../http/security.ts';
import { ConflictError, ForbiddenError, NotFoundError, UnprocessableError } from '../errors.ts';
import { addDataIntegrityProof } from './data-integrity.ts';
import { UNDEFINED_TERMS_CONTEXT, VC_V2_CONTEXT } from './data-model.ts';
import type { ServiceIssuer } from './service-issuer.ts';
import { allocateStatusIndex, STATUS_PURPOSE, setStatusBit, statusListUrl } from './status-list.ts';
import { signJose } from './vc-jose.ts';

export type CredentialType = 'AssetOwnershipCredential' | 'PlayerRoleCredential';
export type CredentialFormat = 'vc+jwt' | 'data-integrity';

/** Lifetime of a credential whose request names no `validUntil`. */
export const DEFAULT_CREDENTIAL_LIFETIME_MS = 365 * 24 * 3600 * 1000;

export interface Caller {
  userId: string;
  role: Role;
}

export interface IssueRequest {
  type: CredentialType;
  subjectDid: string;
  wallet?: string;
  assetId?: string;
  validUntil?: string;
  formats?: CredentialFormat[];
}

export interface IssuedCredentialView {
  id: string;
  type: CredentialType;
  jwt: string | null;
  credential: Record<string, unknown>;
  status: { statusListCredential: string; statusListIndex: string; statusPurpose: string };
}

export interface CredentialContext {
  orm: Orm;
  issuer: ServiceIssuer;
  publicUrl: string;
  documentLoader: DocumentLoader;
  now: () => Date;
}

/** The permissions a PlayerRoleCredential grants: exactly the scopes the role allows. */
export function permissionsOfRole(role: Role): string[] {
  return grantableScopes(role);
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

/** The ownership claim, checked against the ledger now. */
async function ownershipSubject(
  em: EntityManager,
  caller: Caller,
  request: IssueRequest,
): Promise<Record<string, unknown>> {
  const address = (request.wallet as string).toLowerCase();
  const wallet = await em.findOne(Wallet, { address, user: caller.userId });
  if (!wallet) throw new ForbiddenError(`Wallet ${request.wallet} is not one you control.`);
  const asset = await em.findOne(Asset, { id: request.assetId as string });
  if (!asset) throw new NotFoundError(`No asset with id ${request.assetId}.`);
  const holds =
    asset.kind === 'nft'
      ? asset.owner === address
      : ((await em.findOne(Holding, { wallet: address, asset: asset.id }))?.balance ?? 0n) > 0n;
  if (!holds) {
    throw new ConflictError(
      `Wallet ${request.wallet} does not hold ${asset.id}.`,
      '/problems/ownership-not-held',
      'Ownership not held',
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
  const validUntil = request.validUntil
    ? new Date(request.validUntil)
    : new Date(now.getTime() + DEFAULT_CREDENTIAL_LIFETIME_MS);
  if (validUntil.getTime() <= now.getTime()) {
    throw new UnprocessableError(
      `validUntil ${validUntil.toISOString()} is not in the future.`,
      '/problems/invalid-validity-period',
      'Invalid validity period',
    );
  }
  const formats = new Set<CredentialFormat>(request.formats ?? ['vc+jwt', 'data-integrity']);
  const id = `urn:uuid:${randomUUID()}`;

  const { subject, listId, index } = await context.orm.em.fork().transactional(async (em) => {
    const owner = await authorizeSubject(em, caller, request);
    let claims: Record<string, unknown>;
    if (request.type === 'AssetOwnershipCredential') {
      claims = await ownershipSubject(em, caller, request);
    } else {
      claims = { id: request.subjectDid, role: owner.role, permissions: permissionsOfRole(owner.role) };
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
  const credential: Record<string, unknown> = {
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

export interface RevokedView {
  id: string;
  status: 'revoked';
  revokedAt: string;
}

/** Revokes a credential; only its requester or an admin may (to anyone else it does not exist). */
export async function revokeCredential(
  context: CredentialContext,
  caller: Caller,
  credentialId: string,
): Promise<RevokedView> {
  return context.orm.em.fork().transactional(async (em) => {
    const issued = await em.findOne(IssuedCredential, { id: credentialId });
    if (!issued || (issued.requestedBy.id !== caller.userId && caller.role !== 'admin')) {
      throw new NotFoundError(`No credential with id ${credentialId}.`);
    }
    if (!issued.revokedAt) {
      issued.revokedAt = context.now();
      await setStatusBit(em, issued.statusList.id, issued.statusListIndex, issued.revokedAt);
    }
    return { id: issued.id, status: 'revoked', revokedAt: issued.revokedAt.toISOString() };
  });
}
