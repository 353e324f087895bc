// Service accounts (issue 18): machine clients that use the OAuth 2.0 client credentials grant.
// One id names three rows: the user (role, wallets, API keys, rate limits: everything the API
// already keys on a user), its confidential OAuth client, and the ServiceAccount row (owner, how the
// client authenticates, the scopes it may be granted). A client credentials access token's `sub` is
// its client id (RFC 9068 §2.2), which is therefore the user id the rest of the service sees.

import type { EntityManager } from '@mikro-orm/sql';
import { importJWK, type JWK } from 'jose';
import { ApiKey } from '../db/entities/ApiKey.ts';
import { Application } from '../db/entities/Application.ts';
import { ClientSecret } from '../db/entities/ClientSecret.ts';
import { ServiceAccount, type ServiceAuthMethod } from '../db/entities/ServiceAccount.ts';
import { User, type UserRole } from '../db/entities/User.ts';
import { Wallet } from '../db/entities/Wallet.ts';
import { auditDraft, recordAudit } from '../domain/audit.ts';
import { effectiveServiceRole, ownedBy, serviceRolesAllowedFor } from '../domain/authorization.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../domain/errors.ts';
import { ulid } from '../domain/ids.ts';
import { formatAddress } from '../domain/ledger/addresses.ts';
import { reservedNameProblem } from './application-names.ts';
import { digestSecret, generateSecret } from './client-secrets.ts';
import { lockUser, QuotaExceededError } from './quotas.ts';
import { API_SCOPES, type ApiScope, isApiScope, scopesAllowedFor } from './scopes.ts';
import { isServiceAccountId, SERVICE_ACCOUNT_PREFIX } from './service-account-ids.ts';

/** Client secrets active at once: two, so a rotation never leaves the client without a valid one. */
export const MAX_ACTIVE_CLIENT_SECRETS = 2;
/** A password hash that never verifies: service accounts do not log in with a password. */
const NO_PASSWORD = '!service-account';
const SECRET_PREFIX_LENGTH = 6;
/** Algorithms a `private_key_jwt` client may sign its assertions with. */
// `Ed25519` is the fully specified name (RFC 9864) of `EdDSA` over Ed25519, which openid-client 6 signs with.
export const CLIENT_ASSERTION_ALGORITHMS = ['EdDSA', 'Ed25519', 'ES256', 'ES384', 'PS256', 'RS256'] as const;
const MAX_JWKS_KEYS = 5;
const PRIVATE_JWK_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'k', 'oth'];

export interface ClientSecretView {
  id: string;
  prefix: string;
  createdAt: string;
}

export interface ServiceAccountView {
  id: string;
  name: string;
  role: UserRole;
  scopes: ApiScope[];
  tokenEndpointAuthMethod: ServiceAuthMethod;
  wallets: string[];
  clientSecrets: ClientSecretView[];
  createdAt: string;
}

export interface CreateServiceAccountInput {
  name: string;
  role: UserRole;
  scopes?: string[];
  tokenEndpointAuthMethod?: ServiceAuthMethod;
  jwks?: { keys: JWK[] };
}

function secretView(secret: ClientSecret): ClientSecretView {
  return { id: secret.id, prefix: secret.prefix, createdAt: secret.createdAt.toISOString() };
}

async function view(em: EntityManager, account: ServiceAccount): Promise<ServiceAccountView> {
  const [user, application, wallets, secrets] = await Promise.all([
    em.findOneOrFail(User, { id: account.id }),
    em.findOneOrFail(Application, { clientId: account.id }),
    em.find(Wallet, { user: account.id }, { orderBy: { createdAt: 'asc' } }),
    em.find(ClientSecret, { application: account.id, revokedAt: null }, { orderBy: { createdAt: 'asc' } }),
  ]);
  return {
    id: account.id,
    name: application.name,
    role: user.role,
    // Stored only after the check at creation; an unknown one (none today) is not shown.
    scopes: account.scopes.filter(isApiScope),
    tokenEndpointAuthMethod: account.tokenEndpointAuthMethod as ServiceAuthMethod,
    wallets: wallets.map((wallet) => formatAddress(wallet.address)),
    clientSecrets: secrets.map(secretView),
    createdAt: account.createdAt.toISOString(),
  };
}

/** A public JWK Set for `private_key_jwt`: 1 to 5 public keys of the accepted algorithms. */
async function jwksProblems(jwks: { keys: JWK[] }): Promise<{ pointer: string; detail: string }[]> {
  if (jwks.keys.length < 1 || jwks.keys.length > MAX_JWKS_KEYS)
    return [{ pointer: '/body/jwks/keys', detail: `must hold 1 to ${MAX_JWKS_KEYS} keys` }];
  const problems: { pointer: string; detail: string }[] = [];
  for (const [index, jwk] of jwks.keys.entries()) {
    const pointer = `/body/jwks/keys/${index}`;
    if (PRIVATE_JWK_MEMBERS.some((member) => member in jwk)) {
      problems.push({ pointer, detail: 'must be a public key (it holds private key material)' });
      continue;
    }
    if (!jwk.alg || !(CLIENT_ASSERTION_ALGORITHMS as readonly string[]).includes(jwk.alg)) {
      problems.push({
        pointer: `${pointer}/alg`,
        detail: `must be one of ${CLIENT_ASSERTION_ALGORITHMS.join(', ')}`,
      });
      continue;
    }
    try {
      await importJWK(jwk, jwk.alg);
    } catch {
      problems.push({ pointer, detail: `is not a valid ${jwk.alg} public key` });
    }
  }
  return problems;
}

/** Refuses callers that are themselves service accounts: they do not create or manage others. */
export function assertNotServiceAccount(userId: string): void {
  if (isServiceAccountId(userId))
    throw new ForbiddenError('A service account may not manage service accounts.');
}

/**
 * Run inside a transaction. Creates the user (with its custodial wallet, through the registration
 * hook), the OAuth client and, for the secret methods, the first client secret, returned once.
 */
export async function createServiceAccount(
  em: EntityManager,
  owner: { userId: string; role: UserRole },
  input: CreateServiceAccountInput,
  options: {
    limit: number;
    /** The registration hook (accounts.ts's UserRegisteredHook): the custodial wallet. */
    onUserRegistered?: (em: EntityManager, user: User) => Promise<unknown>;
    /** The demo seed only: a fixed id and a published secret, so the README can show them. */
    demo?: { id: string; clientSecret: string };
  },
): Promise<{ account: ServiceAccountView; clientSecret: string | null }> {
  assertNotServiceAccount(owner.userId);
  const method = input.tokenEndpointAuthMethod ?? 'client_secret_basic';
  const allowedScopes = scopesAllowedFor(input.role);
  const errors: { pointer: string; detail: string }[] = [];
  const nameProblem = reservedNameProblem(input.name);
  if (nameProblem) errors.push({ pointer: '/body/name', detail: nameProblem });
  if (!serviceRolesAllowedFor(owner.role).includes(input.role)) {
    errors.push({
      pointer: '/body/role',
      detail: `a ${owner.role} may create service accounts with the roles ${serviceRolesAllowedFor(owner.role).join(', ')}`,
    });
  }
  const requested = input.scopes ?? API_SCOPES.filter((scope) => allowedScopes.has(scope));
  for (const [index, scope] of requested.entries()) {
    if (!isApiScope(scope) || !allowedScopes.has(scope))
      errors.push({
        pointer: `/body/scopes/${index}`,
        detail: `the ${input.role} role does not allow ${scope}`,
      });
  }
  if (method === 'private_key_jwt' && !input.jwks)
    errors.push({ pointer: '/body/jwks', detail: 'is required with private_key_jwt' });
  if (method !== 'private_key_jwt' && input.jwks)
    errors.push({ pointer: '/body/jwks', detail: 'is only used with private_key_jwt' });
  if (input.jwks) errors.push(...(await jwksProblems(input.jwks)));
  if (errors.length > 0) throw new ValidationError('The service account is not acceptable.', errors);

  await lockUser(em, owner.userId);
  if ((await em.count(ServiceAccount, { owner: owner.userId, deletedAt: null })) >= options.limit) {
    throw new QuotaExceededError('service accounts', options.limit, 'delete one you no longer use first.');
  }
  const id = options.demo?.id ?? `${SERVICE_ACCOUNT_PREFIX}${ulid()}`;
  const now = new Date();
  const user = em.create(User, {
    id,
    username: id,
    usernameNormalized: id.toLowerCase(),
    passwordHash: NO_PASSWORD,
    role: input.role,
    createdAt: now,
  });
  await em.flush();
  await options.onUserRegistered?.(em, user);
  em.create(Application, {
    clientId: id,
    // The account owns its client, so its own tokens may manage its API keys.
    owner: em.getReference(User, id),
    name: input.name,
    type: 'confidential',
    clientSecretHash: null,
    redirectUris: [],
    firstParty: false,
    createdAt: now,
    deletedAt: null,
  });
  const account = em.create(ServiceAccount, {
    id,
    owner: em.getReference(User, owner.userId),
    tokenEndpointAuthMethod: method,
    jwks: (input.jwks as ServiceAccount['jwks']) ?? null,
    scopes: [...new Set(requested)],
    createdAt: now,
    deletedAt: null,
  });
  await em.flush();
  const added = method === 'private_key_jwt' ? null : await addSecret(em, id, options.demo?.clientSecret);
  const created = await view(em, account);
  const object = { type: 'serviceAccount', id, ownerId: owner.userId };
  await recordAudit(
    em,
    auditDraft('serviceAccount.created', object, {
      after: {
        name: created.name,
        role: created.role,
        scopes: created.scopes,
        tokenEndpointAuthMethod: method,
      },
    }),
    ...(added
      ? [
          auditDraft(
            'clientSecret.created',
            { type: 'clientSecret', id: added.row.id, ownerId: owner.userId },
            { after: { serviceAccount: id } },
          ),
        ]
      : []),
  );
  return { account: created, clientSecret: added?.secret ?? null };
}

async function addSecret(em: EntityManager, clientId: string, secret = generateSecret()) {
  const row = em.create(ClientSecret, {
    id: `cs_${ulid()}`,
    application: em.getReference(Application, clientId),
    secretHash: digestSecret(secret),
    prefix: secret.slice(0, SECRET_PREFIX_LENGTH),
    createdAt: new Date(),
    revokedAt: null,
  });
  await em.flush();
  return { row, secret };
}

async function ownedAccount(em: EntityManager, ownerId: string, id: string): Promise<ServiceAccount> {
  const account = await em.findOne(ServiceAccount, { id, ...ownedBy(ownerId), deletedAt: null });
  if (!account) throw new NotFoundError(`No service account with id ${id}.`);
  return account;
}

export async function listServiceAccounts(em: EntityManager, ownerId: string): Promise<ServiceAccountView[]> {
  const accounts = await em.find(
    ServiceAccount,
    { owner: ownerId, deletedAt: null },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  return Promise.all(accounts.map((account) => view(em, account)));
}

export async function getServiceAccount(em: EntityManager, ownerId: string, id: string) {
  return view(em, await ownedAccount(em, ownerId, id));
}

/**
 * Run inside a transaction. The client is deleted (the token endpoint stops finding it at once),
 * its secrets and API keys revoked; returns the revoked API key ids so caches can forget them.
 */
export async function deleteServiceAccount(
  em: EntityManager,
  ownerId: string,
  id: string,
): Promise<string[]> {
  const account = await ownedAccount(em, ownerId, id);
  const now = new Date();
  account.deletedAt = now;
  await em.nativeUpdate(Application, { clientId: id }, { deletedAt: now });
  await em.nativeUpdate(ClientSecret, { application: id, revokedAt: null }, { revokedAt: now });
  const keys = await em.find(ApiKey, { user: id, revokedAt: null }, { fields: ['id'] });
  await em.nativeUpdate(ApiKey, { user: id, revokedAt: null }, { revokedAt: now });
  await em.flush();
  await recordAudit(
    em,
    auditDraft(
      'serviceAccount.deleted',
      { type: 'serviceAccount', id, ownerId },
      {
        before: { scopes: account.scopes },
        after: { deletedAt: now, revokedApiKeys: keys.map((key) => key.id) },
      },
    ),
  );
  return keys.map((key) => key.id);
}

/** Run inside a transaction. A new secret beside the active one (rotation), returned once. */
export async function addClientSecret(
  em: EntityManager,
  ownerId: string,
  id: string,
): Promise<ClientSecretView & { secret: string }> {
  const account = await ownedAccount(em, ownerId, id);
  if (account.tokenEndpointAuthMethod === 'private_key_jwt')
    throw new ValidationError('This service account authenticates with private_key_jwt: it has no secrets.');
  await lockUser(em, ownerId);
  const active = await em.count(ClientSecret, { application: id, revokedAt: null });
  if (active >= MAX_ACTIVE_CLIENT_SECRETS) {
    throw new QuotaExceededError(
      'active client secrets for this service account',
      MAX_ACTIVE_CLIENT_SECRETS,
      'revoke the old one first.',
    );
  }
  const { row, secret } = await addSecret(em, id);
  await recordAudit(
    em,
    auditDraft(
      'clientSecret.created',
      { type: 'clientSecret', id: row.id, ownerId },
      { after: { serviceAccount: id } },
    ),
  );
  return { ...secretView(row), secret };
}

/** Revokes one secret: the token endpoint refuses it from the next request on. Idempotent. */
export async function revokeClientSecret(
  em: EntityManager,
  ownerId: string,
  id: string,
  secretId: string,
): Promise<void> {
  await ownedAccount(em, ownerId, id);
  const secret = await em.findOne(ClientSecret, { id: secretId, application: id });
  if (!secret) throw new NotFoundError(`No client secret with id ${secretId}.`);
  if (secret.revokedAt) return;
  secret.revokedAt = new Date();
  await em.flush();
  await recordAudit(
    em,
    auditDraft(
      'clientSecret.revoked',
      { type: 'clientSecret', id: secretId, ownerId },
      {
        after: { serviceAccount: id, revokedAt: secret.revokedAt },
      },
    ),
  );
}

/**
 * oidc-provider's client metadata for a service account's client, or undefined (deleted, or no way
 * left to authenticate). Active secrets are handed over as their digests, space-separated: the
 * provider's compareClientSecret accepts a presented secret whose digest is any of them.
 */
export async function serviceClientMetadata(
  em: EntityManager,
  application: Application,
): Promise<Record<string, unknown> | undefined> {
  const account = await em.findOne(ServiceAccount, { id: application.clientId, deletedAt: null });
  if (!account) return undefined;
  const base = {
    client_id: application.clientId,
    client_name: application.name,
    grant_types: ['client_credentials'],
    response_types: [],
    redirect_uris: [],
    token_endpoint_auth_method: account.tokenEndpointAuthMethod,
  };
  if (account.tokenEndpointAuthMethod === 'private_key_jwt') {
    return { ...base, jwks: account.jwks };
  }
  const secrets = await em.find(ClientSecret, { application: application.clientId, revokedAt: null });
  if (secrets.length === 0) return undefined;
  return { ...base, client_secret: secrets.map((secret) => secret.secretHash).join(' ') };
}

/** What a client credentials token of this service account carries: user, role and scopes now. */
export async function serviceTokenGrant(
  em: EntityManager,
  clientId: string,
): Promise<{ userId: string; role: UserRole; scopes: string[] } | undefined> {
  if (!isServiceAccountId(clientId)) return undefined;
  const account = await em.findOne(
    ServiceAccount,
    { id: clientId, deletedAt: null },
    { populate: ['owner'] },
  );
  const user = account && (await em.findOne(User, { id: clientId }, { fields: ['role'] }));
  if (!account || !user) return undefined;
  const role = effectiveServiceRole(user.role, account.owner.getEntity().role);
  const allowed = scopesAllowedFor(role);
  return { userId: clientId, role, scopes: account.scopes.filter((scope) => allowed.has(scope)) };
}

/** The owner of a service account and its current role, for the API-key lookup (else null). */
export async function serviceAccountOwner(
  em: EntityManager,
  id: string,
): Promise<{ ownerId: string; ownerRole: UserRole } | null> {
  const account = await em.findOne(ServiceAccount, { id, deletedAt: null }, { populate: ['owner'] });
  return account ? { ownerId: account.owner.id, ownerRole: account.owner.getEntity().role } : null;
}
