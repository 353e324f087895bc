// Stores (issue 36): a price paid with items by template ("3 Iron Ore"). An offer's item price names
// a template of its own collection (an NFT name, as a recipe's NFT input does) and how many a unit
// costs; the buyer names the exact NFTs that pay (the service never picks). Matching them to the
// item prices is decided here, before the plan; everything that can change meanwhile (the buyer
// still owns each, it is not frozen, lent or expired) is the burn legs' guards inside the plan
// (./legs.ts: `holds`, `burnable`), so of two purchases paying with the same NFT exactly one wins.
// Paid items are burned, not moved to `payTo`: docs/architecture/stores-and-rewards.md says why.

import type { ReadStatements } from '../../db/read-statements.ts';
import { AppError, ConflictError, type FieldError, NotFoundError } from '../errors.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import type { AssetRow } from './asset-rows.ts';
import type { LegWriter } from './leg-writer.ts';
import type { Leg } from './legs.ts';
import { LISTING_COLUMNS, listingRowOf, listingStatusOf, type StoredListingRow } from './listings.ts';

/** The most NFTs one unit of an offer costs (its item prices' quantities added up). */
export const MAX_ITEMS_PER_UNIT = 20;
/** The most NFTs one purchase pays with (the contract's `items` maxItems). */
const MAX_ITEMS_PER_PURCHASE = 100;

/** 422: the purchase's `items` do not pay the offer's item prices. */
export class StoreItemsMismatchError extends AppError {
  constructor(detail: string, errors: FieldError[]) {
    super(422, '/problems/store-items-mismatch', { detail, errors });
  }
}

/** 409: an NFT named to pay is listed on the market (its seller cancels the listing first). */
export class ItemListedError extends ConflictError {
  constructor(detail: string) {
    super(detail, '/problems/item-listed');
  }
}

export interface ItemPrice {
  /** The price's index in the offer's `price`. */
  index: number;
  name: string;
  quantity: number;
}

const ITEM = 'select kind, name, collection_id, owner from asset where id = ?';
const LISTINGS = `select ${LISTING_COLUMNS} from listing where asset_id = ? and status = 'active'`;

/**
 * The burn legs paying `prices` (times `quantity`) with the NFTs `items` of `wallet`, in the order
 * named; refuses a wrong count, template or collection, a burned, missing or listed NFT.
 */
export async function itemLegs(
  reads: ReadStatements,
  writer: LegWriter,
  input: {
    collectionId: string;
    prices: ItemPrice[];
    quantity: number;
    wallet: StoredAddress;
    items: readonly string[];
    at: Date;
  },
): Promise<Leg[]> {
  const { collectionId, prices, quantity, wallet, items, at } = input;
  const needed = prices.reduce((sum, price) => sum + price.quantity * quantity, 0);
  if (needed > MAX_ITEMS_PER_PURCHASE)
    throw new StoreItemsMismatchError(
      `${quantity} units cost ${needed} items, more than the ${MAX_ITEMS_PER_PURCHASE} one purchase pays with; buy fewer units at a time.`,
      [{ pointer: '/body/quantity', detail: `costs more than ${MAX_ITEMS_PER_PURCHASE} items` }],
    );
  const left = new Map(prices.map((price) => [price.name, { price, left: price.quantity * quantity }]));
  const legs: Leg[] = [];
  for (const [j, id] of items.entries()) {
    const pointer = `/body/items/${j}`;
    const mismatch = (detail: string, field: string) =>
      new StoreItemsMismatchError(`Item ${j}: ${detail}`, [{ pointer, detail: field }]);
    const [row] = await reads.all<Pick<AssetRow, 'kind' | 'name' | 'collection_id' | 'owner'>>(ITEM, [id]);
    if (row?.kind !== 'nft') throw new NotFoundError(`Item ${j}: no NFT with id ${id}.`);
    const name = row.name;
    const what = `${id} (${name} in ${row.collection_id})`;
    if (row.owner === ZERO_ADDRESS) throw mismatch(`${what} was burned.`, 'was burned');
    if (row.collection_id !== collectionId)
      throw mismatch(`${what} is not of the offer's collection ${collectionId}.`, 'of another collection');
    const slot = left.get(name);
    if (!slot)
      throw mismatch(
        prices.length === 0
          ? `${what}: the offer's price has no items.`
          : `${what} matches no item price of the offer (${prices.map((p) => p.name).join(', ')}).`,
        'matches no item price',
      );
    if (slot.left === 0)
      throw mismatch(
        `${what}: price ${slot.price.index} takes ${slot.price.quantity * quantity} NFTs named ${name}; more are named.`,
        'one too many for its price',
      );
    slot.left--;
    for (const listing of await reads.all<StoredListingRow>(LISTINGS, [id]))
      if (listingStatusOf(listingRowOf(listing, reads), at) === 'active')
        throw new ItemListedError(
          `Item ${j}: ${id} is listed on the market (listing ${String(listing.id)}); cancel the listing first, or pay with another.`,
        );
    legs.push({
      asset: await writer.factsOf(id),
      amount: 1n,
      from: wallet,
      to: ZERO_ADDRESS,
      place: { pointer, label: `Item ${j}: ` },
    });
  }
  for (const { price, left: short } of left.values())
    if (short > 0)
      throw new StoreItemsMismatchError(
        `Price ${price.index} takes ${price.quantity * quantity} NFTs named ${price.name} of ${collectionId}; ${price.quantity * quantity - short} are named in \`items\`.`,
        [{ pointer: '/body/items', detail: `lacks ${short} for price ${price.index}` }],
      );
  return legs;
}
