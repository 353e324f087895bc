import type { Platform } from '@mikro-orm/core';
import { BasePostgreSqlPlatform, SqlitePlatform } from '@mikro-orm/sql';

/** The two databases the service runs on. Everything that differs between them branches on this. */
export type DatabaseKind = 'postgresql' | 'sqlite';

export function databaseKindOf(platform: Platform): DatabaseKind {
  if (platform instanceof BasePostgreSqlPlatform) {
    return 'postgresql';
  }
  if (platform instanceof SqlitePlatform) {
    return 'sqlite';
  }
  throw new Error(`Unsupported database platform: ${platform.constructor.name}`);
}
