// Applications are OAuth clients owned by users. oidc-provider reads them (through the adapter) as
// client metadata; the first-party client behind POST /api/v1/auth/login and the demo client are
// seeded rows of the same table, so API keys can reference any client.
import type { EntityManager } from '@mikro-orm/core';
import type { EntityManager as SqlEntityManager } from '@mikro-orm/sql';
import { Application, type ApplicationType } from '../db/entities/Application.ts';
import { User } from '../db/entities/User.ts';
import { auditDraft, recordAudit } from '../domain/audit.ts';
import { ownedBy } from '../domain/authorization.ts';
import { ForbiddenError, NotFoundError, ValidationError } from '../domain/errors.ts';
import { ulid } from '../domain/ids.ts';
import { reservedNameProblem } from './application-names.ts';
import { digestSecret, generateSecret } from './client-secrets.ts';
import { lockUser, QuotaExceededError, type Quotas } from './quotas.ts';
import { isServiceAccountId } from './service-account-ids.ts';
import { serviceClientMetadata } from './service-accounts.ts';

export const FIRST_PARTY_CLIENT_ID = 'gats-first-party';
export const DEMO_CLIENT_ID = 'gats-demo';
export const DEMO_REDIRECT_URIS = ['http://localhost:8080/callback', 'http://127.0.0.1:8080/callback'];

export interface ApplicationView {
  clientId: string;
  name: string;
  redirectUris: string[];
  type: ApplicationType;
  createdAt: string;
}

export function applicationView(app: Application): ApplicationView {
  return {
    clientId: app.clientId,
    name: app.name,
    redirectUris: app.redirectUris,
    type: app.type,
    createdAt: app.createdAt.toISOString(),
  };
}

/** https anywhere; http only on the loopback host (native apps, development); never a fragment. */
export function redirectUriProblem(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URI';
  }
  if (url.hash || value.includes('#')) return 'must not contain a fragment';
  if (url.username || url.password) return 'must not contain credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1')) return null;
  return 'must use https (or http on localhost or 127.0.0.1)';
}

/** Run inside a transaction: the owner's row is locked while the applications are counted. */
export async function createApplication(
  em: SqlEntityManager,
  ownerId: string,
  input: { name: string; redirectUris: string[]; type?: ApplicationType },
  quotas: Pick<Quotas, 'applicationsPerUser'>,
): Promise<{ application: Application; clientSecret: string | null }> {
  const errors = input.redirectUris.flatMap((uri, index) => {
    const problem = redirectUriProblem(uri);
    return problem ? [{ pointer: `/body/redirectUris/${index}`, detail: problem }] : [];
  });
  const nameProblem = reservedNameProblem(input.name);
  if (nameProblem) errors.unshift({ pointer: '/body/name', detail: nameProblem });
  if (errors.length > 0) {
    throw new ValidationError(
      nameProblem ? 'The name is reserved for the service.' : 'A redirect URI is not acceptable.',
      errors,
    );
  }
  await lockUser(em, ownerId);
  if ((await em.count(Application, { owner: ownerId, deletedAt: null })) >= quotas.applicationsPerUser) {
    throw new QuotaExceededError(
      'applications',
      quotas.applicationsPerUser,
      'delete one you no longer use first.',
    );
  }
  const type = input.type ?? 'public';
  const clientSecret = type === 'confidential' ? generateSecret() : null;
  const application = em.create(Application, {
    clientId: `app_${ulid()}`,
    owner: em.getReference(User, ownerId),
    name: input.name,
    type,
    clientSecretHash: clientSecret ? digestSecret(clientSecret) : null,
    redirectUris: [...new Set(input.redirectUris)],
    firstParty: false,
    createdAt: new Date(),
    deletedAt: null,
  });
  await em.flush();
  await recordAudit(
    em,
    auditDraft(
      'application.created',
      { type: 'application', id: application.clientId, ownerId },
      { after: { name: application.name, type, redirectUris: application.redirectUris } },
    ),
  );
  return { application, clientSecret };
}

/**
 * Applications and API keys are managed with a token of a first-party client or of one of the
 * caller's own applications. A token the user gave to another user's application is refused (403):
 * a third-party application must never create, list or revoke the user's credentials.
 */
export async function assertMayManageAccount(
  em: EntityManager,
  userId: string,
  clientId: string,
): Promise<void> {
  const app = await em.findOne(Application, { clientId, deletedAt: null });
  if (app && (app.firstParty || app.owner?.id === userId)) return;
  throw new ForbiddenError(
    "This token was issued to another user's application, which may not manage your applications or API keys.",
  );
}

export async function listApplications(em: EntityManager, ownerId: string): Promise<Application[]> {
  // A service account's own client is described by /api/v1/service-accounts, not listed here.
  return em.find(
    Application,
    { owner: ownerId, deletedAt: null, clientId: { $ne: ownerId } },
    { orderBy: { createdAt: 'asc', clientId: 'asc' } },
  );
}

/**
 * Soft-deletes the application: oidc-provider stops finding the client at once (no new grants,
 * no refresh), and its API keys stop authenticating (authenticator checks the application). Run
 * inside a transaction (the audit entry is written with it).
 */
export async function deleteApplication(
  em: SqlEntityManager,
  ownerId: string,
  clientId: string,
): Promise<void> {
  const app = await em.findOne(Application, { clientId, ...ownedBy(ownerId), deletedAt: null });
  if (!app) throw new NotFoundError(`No application with client id ${clientId}.`);
  app.deletedAt = new Date();
  await em.flush();
  await recordAudit(
    em,
    auditDraft(
      'application.deleted',
      { type: 'application', id: clientId, ownerId },
      { before: { name: app.name, type: app.type, redirectUris: app.redirectUris } },
    ),
  );
}

async function ensureClient(
  em: EntityManager,
  data: Pick<Application, 'clientId' | 'name' | 'redirectUris'>,
): Promise<void> {
  const fork = em.fork();
  const existing = await fork.findOne(Application, { clientId: data.clientId });
  if (existing) {
    // Keep the seeded definition authoritative (a restart repairs an edited row).
    Object.assign(existing, { ...data, type: 'public', deletedAt: null, firstParty: true });
  } else {
    fork.create(Application, {
      ...data,
      owner: null,
      type: 'public',
      clientSecretHash: null,
      firstParty: true,
      createdAt: new Date(),
      deletedAt: null,
    });
  }
  await fork.flush();
}

/** The public client POST /api/v1/auth/login issues tokens to. Seeded at every start-up. */
export function ensureFirstPartyClient(em: EntityManager): Promise<void> {
  return ensureClient(em, {
    clientId: FIRST_PARTY_CLIENT_ID,
    name: 'Game Asset Tracking Service',
    redirectUris: [],
  });
}

export const EXPLORER_CLIENT_ID = 'gats-explorer';

/**
 * The explorer's public client (served by this service at /explorer/), with the one redirect URI
 * that matches PUBLIC_URL. Seeded at every start-up so a changed PUBLIC_URL is picked up.
 */
export function ensureExplorerClient(em: EntityManager, publicUrl: string): Promise<void> {
  return ensureClient(em, {
    clientId: EXPLORER_CLIENT_ID,
    name: 'GATS Explorer',
    redirectUris: [`${publicUrl}/explorer/callback`],
  });
}

/** The demo OAuth client (public, loopback callbacks on port 8080), for the demo seed. */
export function ensureDemoClient(em: EntityManager): Promise<void> {
  return ensureClient(em, {
    clientId: DEMO_CLIENT_ID,
    name: 'GATS demo client',
    redirectUris: DEMO_REDIRECT_URIS,
  });
}

/** Client metadata for oidc-provider, or undefined for unknown and deleted applications. */
export async function findClientMetadata(
  em: EntityManager,
  clientId: string,
): Promise<Record<string, unknown> | undefined> {
  const app = await em.findOne(Application, { clientId, deletedAt: null });
  if (!app) return undefined;
  if (isServiceAccountId(app.clientId)) return serviceClientMetadata(em as SqlEntityManager, app);
  if (app.clientId === FIRST_PARTY_CLIENT_ID) {
    // Tokens come from the password login; the token endpoint only refreshes them.
    return {
      client_id: app.clientId,
      client_name: app.name,
      grant_types: ['refresh_token'],
      response_types: [],
      redirect_uris: [],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'EdDSA',
    };
  }
  return {
    client_id: app.clientId,
    client_name: app.name,
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    redirect_uris: app.redirectUris,
    id_token_signed_response_alg: 'EdDSA',
    ...(app.type === 'confidential'
      ? // The stored digest stands in for the secret: compareClientSecret is patched to digest the presented one.
        { token_endpoint_auth_method: 'client_secret_basic', client_secret: app.clientSecretHash }
      : { token_endpoint_auth_method: 'none' }),
  };
}
