// The identity module's entry point: builds the service issuer, the DID resolver and the offline
// document loader once, and offers the operations the HTTP handlers call.
import type { SecretBox } from '../../crypto/secret-box.ts';
import { StatusList } from '../../db/entities/index.ts';
import type { Orm } from '../../db/orm.ts';
import { NotFoundError } from '../errors.ts';
import type { Page } from '../ledger/cursor.ts';
import {
  type Caller,
  type CredentialListQuery,
  type CredentialSummary,
  DEFAULT_MAX_VALIDITY_DAYS,
  type IssuedCredentialView,
  type IssueRequest,
  issueCredential,
  listCredentials,
  type PermissionsOfRole,
  type RevokedView,
  revokeCredential,
  walletHolds,
} from './credentials.ts';
import { addDataIntegrityProof } from './data-integrity.ts';
import type { DidDocument } from './did-document.ts';
import { createDidResolver, type DidResolver } from './did-resolver.ts';
import { offlineDocumentLoader } from './document-loader.ts';
import {
  createIdentity,
  createKeyChallenge,
  type IdentityView,
  type KeyChallenge,
  type KeyPossessionProof,
} from './identities.ts';
import { createJsonLdPool, type JsonLdPool } from './jsonld-pool.ts';
import { processJsonLd } from './jsonld-work.ts';
import { didWebFromPublicUrl, loadServiceIssuer, type ServiceIssuer } from './service-issuer.ts';
import { isRevoked, ownStatusListId, statusListCredential } from './status-list.ts';
import { signJose } from './vc-jose.ts';
import { verify } from './verify.ts';
import type { StatusAnswer, VerifierContext, VerifyRequest, VerifyResult } from './verify-checks.ts';

export interface IdentityServiceOptions {
  orm: Orm;
  secretBox: SecretBox;
  /** The service's public base URL (no trailing slash): its did:web and status list URLs derive from it. */
  publicUrl: string;
  now?: () => Date;
  /** CREDENTIAL_MAX_VALIDITY_DAYS: the longest (and default) credential lifetime. */
  maxValidityDays?: number;
  /** What a PlayerRoleCredential grants for a role (the app passes auth's `grantableScopes`). */
  permissionsOfRole: PermissionsOfRole;
  /** VERIFY_WORKERS: worker threads for the JSON-LD work of verification; 0 (default here) runs it inline. */
  verifyWorkers?: number;
}

export interface IdentityService {
  /** This service's did:web. */
  serviceDid: string;
  serviceDidDocument(): Promise<DidDocument>;
  resolver: DidResolver;
  /** With `publicKeyMultibase`, `proof` must answer a challenge from createKeyChallenge. */
  createIdentity(
    userId: string,
    publicKeyMultibase?: string,
    proof?: KeyPossessionProof,
  ): Promise<IdentityView>;
  createKeyChallenge(userId: string, publicKeyMultibase: string): KeyChallenge;
  resolveDid(did: string): Promise<DidDocument>;
  issueCredential(caller: Caller, request: IssueRequest): Promise<IssuedCredentialView>;
  revokeCredential(caller: Caller, credentialId: string): Promise<RevokedView>;
  /** The caller's credentials (an admin's: any user's), a page at a time. */
  listCredentials(caller: Caller, query: CredentialListQuery): Promise<Page<CredentialSummary>>;
  /** The status list credential, as a vc+jwt or as JSON-LD with a Data Integrity proof. */
  statusListCredential(
    listId: string,
    form: 'jwt' | 'json',
  ): Promise<{ body: string | Record<string, unknown>; updatedAt: Date }>;
  verify(request: VerifyRequest): Promise<VerifyResult>;
  /** Stops the verification workers. */
  close(): Promise<void>;
}

export async function createIdentityService(options: IdentityServiceOptions): Promise<IdentityService> {
  const { orm, secretBox, publicUrl } = options;
  const now = options.now ?? (() => new Date());
  const serviceDid = didWebFromPublicUrl(publicUrl);
  // The signing key is loaded (or generated) on first use, and retried if that fails.
  let loading: Promise<ServiceIssuer> | null = null;
  const issuer = (): Promise<ServiceIssuer> => {
    loading ??= loadServiceIssuer(orm, secretBox, publicUrl).catch((error: unknown) => {
      loading = null;
      throw error;
    });
    return loading;
  };
  const resolver = createDidResolver(serviceDid, async () => (await issuer()).didDocument);
  const documentLoader = offlineDocumentLoader((did) => resolver.resolve(did));
  const maxValidityDays = options.maxValidityDays ?? DEFAULT_MAX_VALIDITY_DAYS;
  const pool: JsonLdPool | null = options.verifyWorkers ? createJsonLdPool(options.verifyWorkers) : null;
  const jsonLd: VerifierContext['jsonLd'] = async (task) => {
    if (!pool) return processJsonLd({ ...task, serviceDid, serviceDidDocument: null }, documentLoader);
    const serviceDidDocument = await issuer()
      .then((loaded) => loaded.didDocument)
      .catch(() => null);
    return pool.run({ ...task, serviceDid, serviceDidDocument });
  };
  const credentialContext = async () => ({
    orm,
    issuer: await issuer(),
    publicUrl,
    documentLoader,
    now,
    maxValidityDays,
    permissionsOfRole: options.permissionsOfRole,
  });

  async function findList(listId: string): Promise<StatusList | null> {
    return orm.em.fork().findOne(StatusList, { id: listId });
  }

  async function readStatus(url: string, index: number, purpose: string): Promise<StatusAnswer> {
    const listId = ownStatusListId(publicUrl, url);
    if (!listId)
      return {
        known: false,
        reason: `The status list ${url} is not this service's; only this service's lists are read (none is fetched).`,
      };
    const list = await findList(listId);
    if (!list || list.purpose !== purpose)
      return { known: false, reason: `There is no ${purpose} status list at ${url}.` };
    return { known: true, set: isRevoked(list, index), listId };
  }

  return {
    serviceDid,
    serviceDidDocument: async () => (await issuer()).didDocument,
    resolver,
    createIdentity: (userId, publicKeyMultibase, proof) =>
      createIdentity(orm, secretBox, userId, publicKeyMultibase, proof, now()),
    createKeyChallenge: (userId, publicKeyMultibase) =>
      createKeyChallenge(secretBox, userId, publicKeyMultibase, now()),
    resolveDid: (did) => resolver.resolve(did),
    issueCredential: async (caller, request) => issueCredential(await credentialContext(), caller, request),
    revokeCredential: async (caller, credentialId) =>
      revokeCredential(await credentialContext(), caller, credentialId),
    listCredentials: (caller, query) => listCredentials({ orm, publicUrl, now }, caller, query),
    async statusListCredential(listId, form) {
      const list = await findList(listId);
      if (!list) throw new NotFoundError(`No status list with id ${listId}.`);
      const { signingKey } = await issuer();
      const credential = statusListCredential(list, serviceDid, publicUrl);
      const body =
        form === 'jwt'
          ? await signJose(credential, 'vc+jwt', signingKey)
          : await addDataIntegrityProof(credential, signingKey.multikey, documentLoader, list.updatedAt);
      return { body, updatedAt: list.updatedAt };
    },
    verify: (request) =>
      verify(request, {
        resolver,
        documentLoader,
        serviceDid,
        readStatus,
        holds: (wallet, assetId) => walletHolds(orm.em.fork(), wallet, assetId),
        jsonLd,
        now,
      }),
    close: async () => pool?.close(),
  };
}
