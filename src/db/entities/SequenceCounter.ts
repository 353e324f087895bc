import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

/** Named counters behind the `seq` columns; see ../sequences.ts. */
export const SequenceCounter = defineEntity({
  name: 'SequenceCounter',
  properties: {
    name: p.string().primary(),
    value: p.bigint('number'),
  },
});
export type SequenceCounter = InferEntity<typeof SequenceCounter>;
