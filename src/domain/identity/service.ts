// The identity module's entry point: builds the service issuer, the DID resolver and the offline
// document loader once, and offers the operations the HTTP handlers call.
import type { SecretBox } from '../../crypto/secret-box.ts';
import { StatusList } from '../../db/entities/index.ts';
import type { Orm } from '../../db/orm.ts';
import { NotFoundError } from '../errors.ts';
import {
  type Caller,
  type IssuedCredentialView,
  type IssueRequest,
  issueCredential,
  type RevokedView,
  revokeCredential,
} from './credentials.ts';
import { addDataIntegrityProof } from './data-integrity.ts';
import type { DidDocument } from './did-document.ts';
import { createDidResolver, type DidResolver } from './did-resolver.ts';
import { offlineDocumentLoader } from './document-loader.ts';
import { createIdentity, type IdentityView } from './identities.ts';
import { didWebFromPublicUrl, loadServiceIssuer, type ServiceIssuer } from './service-issuer.ts';
import { isRevoked, ownStatusListId, statusListCredential } from './status-list.ts';
import { signJose } from './vc-jose.ts';
import { type StatusAnswer, type VerifyRequest, type VerifyResult, verify } from './verify.ts';

export interface IdentityServiceOptions {
  orm: Orm;
  secretBox: SecretBox;
  /** The service's public base URL (no trailing slash): its did:web and status list URLs derive from it. */
  publicUrl: string;
  /** JSON-LD contexts to accept besides the bundled ones (URL → context document). */
  extraContexts?: ReadonlyMap<string, unknown>;
  now?: () => Date;
}

export interface IdentityService {
  /** This service's did:web. */
  serviceDid: string;
  serviceDidDocument(): Promise<DidDocument>;
  resolver: DidResolver;
  createIdentity(userId: string, publicKeyMultibase?: string): Promise<IdentityView>;
  resolveDid(did: string): Promise<DidDocument>;
  issueCredential(caller: Caller, request: IssueRequest): Promise<IssuedCredentialView>;
  revokeCredential(caller: Caller, credentialId: string): Promise<RevokedView>;
  /** The status list credential, as a vc+jwt or as JSON-LD with a Data Integrity proof. */
  statusListCredential(
    listId: string,
    form: 'jwt' | 'json',
  ): Promise<{ body: string | Record<string, unknown>; updatedAt: Date }>;
  verify(request: VerifyRequest): Promise<VerifyResult>;
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
  const documentLoader = offlineDocumentLoader((did) => resolver.resolve(did), options.extraContexts);
  const credentialContext = async () => ({ orm, issuer: await issuer(), publicUrl, documentLoader, now });

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
    createIdentity: (userId, publicKeyMultibase) =>
      createIdentity(orm, secretBox, userId, publicKeyMultibase),
    resolveDid: (did) => resolver.resolve(did),
    issueCredential: async (caller, request) => issueCredential(await credentialContext(), caller, request),
    revokeCredential: async (caller, credentialId) =>
      revokeCredential(await credentialContext(), caller, credentialId),
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
    verify: (request) => verify(request, { resolver, documentLoader, serviceDid, readStatus, now }),
  };
}
