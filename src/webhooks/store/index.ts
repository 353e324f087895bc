// The delivery store of a database (./port.ts): the only place webhook delivery looks at the kind.
import type { Orm } from '../../db/orm.ts';
import { databaseKindOf } from '../../db/platform.ts';
import type { Logger } from '../../observability/logger.ts';
import type { DeliveryStore } from './port.ts';
import { createPostgresDeliveryStore } from './postgres.ts';
import { createSqliteDeliveryStore } from './sqlite.ts';

export function createDeliveryStore(orm: Orm, logger: Logger): DeliveryStore {
  return databaseKindOf(orm.em.getPlatform()) === 'postgresql'
    ? createPostgresDeliveryStore(orm)
    : createSqliteDeliveryStore(orm, logger);
}

export type { DeliveryRow, DeliveryStore } from './port.ts';
