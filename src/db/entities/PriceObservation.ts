import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { bigintAutoincrementId } from '../columns.ts';
import { Uint256Type } from '../types/uint256.ts';
import { Asset } from './Asset.ts';
import { User } from './User.ts';

/** One posted price of an asset; the current price is the latest, candles aggregate the history. */
export const PriceObservation = defineEntity({
  name: 'PriceObservation',
  properties: {
    id: bigintAutoincrementId(),
    asset: () => p.manyToOne(Asset).ref(),
    /** The decimal price exactly as posted. */
    price: p.string(),
    /** price × 10^18 as an integer, for ordering and min/max in SQL. */
    priceScaled: p.type(Uint256Type),
    currency: p.string(),
    source: p.string(),
    observedAt: p.datetime().index(),
    postedBy: () => p.manyToOne(User).ref().nullable(),
    createdAt: p.datetime(),
  },
  indexes: [{ properties: ['asset', 'currency', 'observedAt'] }],
});
export type PriceObservation = InferEntity<typeof PriceObservation>;
