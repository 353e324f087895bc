// oidc-provider's storage on MikroORM: every model (sessions, interactions, grants, codes, refresh
// tokens, ...) is a row of OidcPayload, so a restart or another instance can finish any flow.
// Clients are the exception: they are read from the Application table (see applications.ts).
import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import type { Adapter, AdapterPayload } from 'oidc-provider';
import { OidcPayload } from '../db/entities/OidcPayload.ts';
import { findClientMetadata } from './applications.ts';

/** Models whose rows belong to a grant: `revokeByGrantId` deletes them all at once. */
const GRANT_BOUND = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'Grant',
]);

/**
 * Models whose id is itself the credential a client presents (an opaque refresh token, an
 * authorization code). Their rows are keyed by the id's SHA-256 digest and stored without the `jti`,
 * so someone who reads the database (a backup, an injection) finds no usable token.
 */
const SECRET_IDS = new Set([
  'AccessToken',
  'AuthorizationCode',
  'RefreshToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'ClientCredentials',
]);

function rowId(model: string, id: string): string {
  return SECRET_IDS.has(model)
    ? `${model}:${createHash('sha256').update(id).digest('hex')}`
    : `${model}:${id}`;
}

class OidcPayloadAdapter implements Adapter {
  readonly #em: EntityManager;
  readonly #model: string;

  constructor(em: EntityManager, model: string) {
    this.#em = em;
    this.#model = model;
  }

  async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
    const { jti: _secret, ...withoutId } = payload;
    const data = {
      id: rowId(this.#model, id),
      model: this.#model,
      payload: (SECRET_IDS.has(this.#model) ? withoutId : payload) as Record<string, unknown>,
      grantId: payload.grantId ?? null,
      accountId: payload.accountId ?? null,
      userCode: payload.userCode ?? null,
      uid: payload.uid ?? null,
      expiresAt: expiresIn ? new Date(Date.now() + expiresIn * 1000) : null,
      consumedAt: null,
    };
    await this.#em.fork().upsert(OidcPayload, data);
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    const payload = await this.#read({ id: rowId(this.#model, id) });
    return payload && SECRET_IDS.has(this.#model) ? { ...payload, jti: id } : payload;
  }

  async findByUid(uid: string): Promise<AdapterPayload | undefined> {
    return this.#read({ model: this.#model, uid });
  }

  async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
    return this.#read({ model: this.#model, userCode });
  }

  async consume(id: string): Promise<void> {
    await this.#em
      .fork()
      .nativeUpdate(OidcPayload, { id: rowId(this.#model, id) }, { consumedAt: new Date() });
  }

  async destroy(id: string): Promise<void> {
    await this.#em.fork().nativeDelete(OidcPayload, { id: rowId(this.#model, id) });
  }

  async revokeByGrantId(grantId: string): Promise<void> {
    await this.#em.fork().nativeDelete(OidcPayload, { grantId, model: { $in: [...GRANT_BOUND] } });
  }

  async #read(
    where: Partial<Pick<OidcPayload, 'id' | 'model' | 'uid' | 'userCode'>>,
  ): Promise<AdapterPayload | undefined> {
    const row = await this.#em.fork().findOne(OidcPayload, where);
    if (!row) return undefined;
    if (row.expiresAt && row.expiresAt.getTime() <= Date.now()) return undefined;
    const payload = row.payload as AdapterPayload;
    return row.consumedAt ? { ...payload, consumed: Math.floor(row.consumedAt.getTime() / 1000) } : payload;
  }
}

/** Clients are applications: read-only here (no dynamic registration). */
class ApplicationClientAdapter implements Adapter {
  readonly #em: EntityManager;

  constructor(em: EntityManager) {
    this.#em = em;
  }

  async find(id: string): Promise<AdapterPayload | undefined> {
    return (await findClientMetadata(this.#em.fork(), id)) as AdapterPayload | undefined;
  }

  async upsert(): Promise<void> {
    throw new Error('clients are managed through /api/v1/applications');
  }

  async destroy(): Promise<void> {
    throw new Error('clients are managed through /api/v1/applications');
  }

  async findByUid(): Promise<undefined> {
    return undefined;
  }

  async findByUserCode(): Promise<undefined> {
    return undefined;
  }

  async consume(): Promise<void> {}

  async revokeByGrantId(): Promise<void> {}
}

/** The adapter factory oidc-provider calls once per model name. */
export function createAdapterFactory(em: EntityManager): (model: string) => Adapter {
  return (model) =>
    model === 'Client' ? new ApplicationClientAdapter(em) : new OidcPayloadAdapter(em, model);
}

/** Deletes the oidc-provider rows of every grant of the user (refresh tokens, codes, grants), in `em`'s transaction. */
export async function revokeAccountGrants(em: EntityManager, accountId: string): Promise<void> {
  await em.nativeDelete(OidcPayload, { accountId, model: { $in: [...GRANT_BOUND] } });
}

/** Removes expired rows; run periodically (expired rows are already invisible to `find`). */
export async function purgeExpiredPayloads(em: EntityManager): Promise<number> {
  return em.fork().nativeDelete(OidcPayload, { expiresAt: { $lt: new Date() } });
}
