// The checks of start-up that refuse to run a misconfigured instance or warn about a risky one: the
// same PUBLIC_URL (issuer) on every instance, a SECRET_KEY that opens the stored keys, Redis
// answering when REDIS_URL is set, and demo accounts with published passwords kept off the network
// (src/app.ts runs them while it builds the application).
import { EXPLORER_CLIENT_ID } from './auth/applications.ts';
import { type Config, ConfigError } from './config/index.ts';
import { Application } from './db/entities/Application.ts';
import type { Orm } from './db/orm.ts';
import type { Logger } from './observability/logger.ts';
import type { RedisLink } from './redis/link.ts';
import { activeDemoAccounts } from './seed/demo.ts';

/**
 * 14.6: every instance must be the same issuer. The explorer's client, rewritten at each start from
 * PUBLIC_URL, records the URL the service was last started with; another one is refused unless the
 * operator moves the service on purpose (PUBLIC_URL_CHANGE=allow).
 */
export async function checkPublicUrl(orm: Orm, config: Config): Promise<void> {
  if (config.publicUrlChange === 'allow') return;
  const explorer = await orm.em.fork().findOne(Application, { clientId: EXPLORER_CLIENT_ID });
  const recorded = explorer?.redirectUris[0]?.replace(/\/explorer\/callback$/, '');
  if (recorded && recorded !== config.publicUrl)
    throw new ConfigError(
      `PUBLIC_URL is ${config.publicUrl} but this database's service runs at ${recorded}: every instance must use the same PUBLIC_URL (the OAuth issuer); to move the service, start once with PUBLIC_URL_CHANGE=allow`,
    );
}

/** AES-GCM's answer when a sealed value is opened with another key than the one that sealed it. */
function sealedWithAnotherKey(error: unknown): boolean {
  return error instanceof Error && /unable to authenticate data/i.test(error.message);
}

/**
 * A failure to open the stored keys, as the operator must read it: another SECRET_KEY sealed them
 * (a configuration error); any other error as it is.
 */
export function secretKeyFailure(error: unknown): unknown {
  return sealedWithAnotherKey(error)
    ? new ConfigError(
        'SECRET_KEY does not open the keys stored in this database (they were sealed with another SECRET_KEY); start with the SECRET_KEY the other instances use',
      )
    : error;
}

/** How long start-up waits for Redis (REDIS_URL) to answer before failing. */
const REDIS_STARTUP_TIMEOUT_MS = 5_000;

/** Every Redis client exists now; an unreachable Redis at start-up is a configuration error. */
export async function redisAnswers(redis: RedisLink): Promise<void> {
  await redis.ready(REDIS_STARTUP_TIMEOUT_MS).catch((error: unknown) => {
    throw new ConfigError(
      `REDIS_URL: Redis did not answer at start-up (${error instanceof Error ? error.message : String(error)})`,
    );
  });
}

/** 15.3: published passwords must not be reachable from the network by default. */
export async function demoGuard(orm: Orm, config: Config, logger: Logger) {
  const demoAccounts = await activeDemoAccounts(orm);
  const listenHost = config.host ?? (demoAccounts.length > 0 ? '127.0.0.1' : '0.0.0.0');
  if (demoAccounts.length > 0) {
    logger.warn(
      { demoAccounts, host: listenHost },
      config.host === undefined
        ? `demo accounts with published passwords exist (${demoAccounts.join(', ')}): listening on loopback only; set HOST to listen elsewhere, after changing their passwords or starting on an empty database with SEED_DEMO=never`
        : `demo accounts with published passwords exist (${demoAccounts.join(', ')}) and HOST=${config.host} is set: anyone who reaches this address can sign in as them`,
    );
  }
  return { demoAccounts, listenHost };
}
