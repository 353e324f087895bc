import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/**
 * One version of an asset's metadata (issue 21, living metadata): the name and metadata as they were
 * from `changedAt`, written by the change that made them (`changedBy`: a user id, null for the
 * service itself). Version 0 is the metadata the asset was created with.
 */
export const AssetMetadataVersion = defineEntity({
  name: 'AssetMetadataVersion',
  properties: {
    assetId: p.string().length(32).primary(),
    version: p.integer().primary().autoincrement(false),
    name: p.string(),
    metadata: p.json<Record<string, unknown>>(),
    changedBy: p.string().nullable(),
    changedAt: p.datetime(),
  },
});
export type AssetMetadataVersion = InferEntity<typeof AssetMetadataVersion>;
