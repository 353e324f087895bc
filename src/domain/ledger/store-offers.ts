// Store offers as configuration (issue 36): a collection's studio creates, lists, reads and changes
// its offers; every change makes a new version (a purchase names the version it accepted). The price
// and grants are checked and normalized here; the purchase is ./store-purchase.ts.

import type { FilterQuery } from '@mikro-orm/core';
import type { components } from '../../../generated/openapi/types.ts';
import type { BurnPolicy } from '../../db/entities/Collection.ts';
import { StoreOffer, type StoreOfferStatus } from '../../db/entities/StoreOffer.ts';
import { inTransaction } from '../../db/transactions.ts';
import { auditDraft, flushAudited, recordAudit } from '../audit.ts';
import { assertCollectionPowers } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import type { StoredAddress } from './addresses.ts';
import { formatAmount, labelledAmount } from './amounts.ts';
import { isChainAssetId } from './chain-assets.ts';
import { mapPage, type Page, pageById } from './cursor.ts';
import type { AssetFacts } from './legs.ts';
import {
  checkWindow,
  claimCodeView,
  dateOf,
  offerNotFound,
  offerObject,
  offerView,
  type StoreContext,
  type StoreGrantView,
  type StoreOfferView,
} from './store-context.ts';
import { MAX_ITEMS_PER_UNIT } from './store-items.ts';

type StorePriceView = components['schemas']['StorePrice'];

export interface StoreOfferTerms {
  name: string;
  price: StorePriceView[];
  grants: StoreGrantView[];
  payTo: StoredAddress;
  perWalletLimit?: number | null;
  totalLimit?: number | null;
  startsAt?: string | null;
  endsAt?: string | null;
}

export type StoreOfferChange = Partial<StoreOfferTerms> & { status?: StoreOfferStatus };

export interface StoreOfferMethods {
  create(actor: Actor, collectionId: string, input: StoreOfferTerms): Promise<StoreOfferView>;
  list(
    collectionId: string,
    options: { status?: StoreOfferStatus; limit: number; cursor?: string },
  ): Promise<Page<StoreOfferView>>;
  get(id: string, wallet?: StoredAddress): Promise<StoreOfferView>;
  update(actor: Actor, id: string, change: StoreOfferChange): Promise<StoreOfferView>;
}

const BURN_POLICY = 'select burn_policy from collection where id = ?';

export function createStoreOfferMethods(ctx: StoreContext): StoreOfferMethods {
  const { orm, writer, reads, collectionOf, readOffer, boughtBy, checkGrants } = ctx;

  /** A price's currency: a ledger currency of any collection (404 when absent, 400 otherwise). */
  async function priceCurrency(assetId: string, label: string, pointer: string): Promise<AssetFacts> {
    if (isChainAssetId(assetId))
      throw new ValidationError(
        `${label}: ${assetId} is an on-chain token; a price is paid in ledger currencies.`,
        [{ pointer, detail: 'must be a ledger currency' }],
      );
    let facts: AssetFacts;
    try {
      facts = await writer.factsOf(assetId);
    } catch (error) {
      if (error instanceof NotFoundError) throw new NotFoundError(`${label}: no asset with id ${assetId}.`);
      throw error;
    }
    if (facts.kind !== 'fungible')
      throw new ValidationError(`${label}: ${assetId} is not a currency; a price is paid in currencies.`, [
        { pointer, detail: 'must be a currency' },
      ]);
    return facts;
  }

  /**
   * The price, normalized (amounts as the currency formats them); one entry per currency and per
   * item template, the items of a unit at most MAX_ITEMS_PER_UNIT, burnable in the collection.
   */
  async function checkPrice(collectionId: string, price: StorePriceView[]): Promise<StorePriceView[]> {
    const seen = new Set<string>();
    const out: StorePriceView[] = [];
    let items = 0;
    for (const [i, item] of price.entries()) {
      const label = `Price ${i}`;
      if ('nft' in item) {
        const pointer = `/body/price/${i}/nft`;
        if (seen.has(`nft ${item.nft.name}`))
          throw new ValidationError(`${label}: ${item.nft.name} appears twice; give each template once.`, [
            { pointer: `${pointer}/name`, detail: 'appears twice' },
          ]);
        seen.add(`nft ${item.nft.name}`);
        items += item.nft.quantity;
        if (items > MAX_ITEMS_PER_UNIT)
          throw new ValidationError(
            `${label}: a unit would cost ${items} items, more than ${MAX_ITEMS_PER_UNIT}.`,
            [{ pointer: `${pointer}/quantity`, detail: `at most ${MAX_ITEMS_PER_UNIT} items a unit in all` }],
          );
        const [row] = await reads.all<{ burn_policy: BurnPolicy }>(BURN_POLICY, [collectionId]);
        if (row?.burn_policy === 'none')
          throw new ValidationError(
            `${label}: the collection ${collectionId} allows no burns (burnPolicy none), and paid items are burned.`,
            [{ pointer, detail: 'the collection allows no burns' }],
          );
        out.push({ nft: { name: item.nft.name, quantity: item.nft.quantity } });
        continue;
      }
      if (seen.has(item.assetId))
        throw new ValidationError(`${label}: ${item.assetId} appears twice; give each currency once.`, [
          { pointer: `/body/price/${i}/assetId`, detail: 'appears twice' },
        ]);
      seen.add(item.assetId);
      const currency = await priceCurrency(item.assetId, label, `/body/price/${i}/assetId`);
      const amount = labelledAmount(item.amount, currency.decimals, label, `/body/price/${i}/amount`);
      out.push({ assetId: item.assetId, amount: formatAmount(amount, currency.decimals) });
    }
    return out;
  }

  return {
    async create(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'sell in its store');
      const price = await checkPrice(collectionId, input.price);
      const grants = await checkGrants(actor, collectionId, input.grants);
      await writer.assertControls(actor, [
        { from: input.payTo, place: { pointer: '/body/payTo', label: '' } },
      ]);
      const startsAt = dateOf(input.startsAt);
      const endsAt = dateOf(input.endsAt);
      checkWindow(startsAt, endsAt);
      const em = orm.em.fork();
      const at = new Date();
      const offer = em.create(StoreOffer, {
        id: newId('sof'),
        collectionId,
        name: input.name,
        version: 1,
        status: 'active',
        price,
        grants,
        payTo: input.payTo,
        limitPerWallet: input.perWalletLimit ?? null,
        limitTotal: input.totalLimit ?? null,
        sold: 0,
        startsAt,
        endsAt,
        createdBy: actor.userId,
        createdAt: at,
        updatedAt: at,
      });
      await flushAudited(em, () =>
        auditDraft('storeOffer.created', offerObject(offer.id, collection), { after: offerView(offer) }, at),
      );
      return offerView(offer);
    },

    async list(collectionId, { status, limit, cursor }) {
      await collectionOf(collectionId);
      const where: FilterQuery<StoreOffer>[] = [{ collectionId, codeHash: null }];
      if (status) where.push({ status });
      const rows = await pageById(orm.em.fork(), StoreOffer, where, {
        list: 'store-offers',
        order: 'oldest',
        limit,
        cursor,
      });
      return mapPage(rows, (row) => offerView(row));
    },

    async get(id, wallet) {
      const offer = await readOffer(id);
      if (offer.codeHash) throw offerNotFound(id);
      return offerView(offer, wallet === undefined ? undefined : await boughtBy(id, wallet));
    },

    async update(actor, id, change) {
      const offer = await readOffer(id);
      const collection = await collectionOf(offer.collectionId);
      assertCollectionPowers(actor, collection, 'change its store offers');
      if (offer.codeHash && (change.price !== undefined || change.payTo !== undefined))
        throw new ValidationError('A claim code has no price and pays no one.', [
          {
            pointer: change.price !== undefined ? '/body/price' : '/body/payTo',
            detail: 'not for a claim code',
          },
        ]);
      const next: Partial<StoreOffer> = {};
      if (change.name !== undefined) next.name = change.name;
      if (change.status !== undefined) next.status = change.status;
      if (change.price !== undefined) next.price = await checkPrice(offer.collectionId, change.price);
      if (change.grants !== undefined)
        next.grants = await checkGrants(actor, offer.collectionId, change.grants);
      if (change.payTo !== undefined) {
        await writer.assertControls(actor, [
          { from: change.payTo, place: { pointer: '/body/payTo', label: '' } },
        ]);
        next.payTo = change.payTo;
      }
      if (change.perWalletLimit !== undefined) next.limitPerWallet = change.perWalletLimit;
      if (change.totalLimit !== undefined) next.limitTotal = change.totalLimit;
      if (change.startsAt !== undefined) next.startsAt = dateOf(change.startsAt);
      if (change.endsAt !== undefined) next.endsAt = dateOf(change.endsAt);
      checkWindow(
        next.startsAt === undefined ? (offer.startsAt ?? null) : next.startsAt,
        next.endsAt === undefined ? (offer.endsAt ?? null) : next.endsAt,
      );
      // The version as read: a concurrent change of the same offer makes this one a no-op, refused.
      const viewOf = (row: StoreOffer) => (row.codeHash ? claimCodeView(row) : offerView(row));
      const updated = await inTransaction(orm, async (em) => {
        const count = await em.nativeUpdate(
          StoreOffer,
          { id, version: offer.version },
          { ...next, version: offer.version + 1, updatedAt: new Date() },
        );
        if (count === 1) {
          const after = await em.findOneOrFail(StoreOffer, { id });
          await recordAudit(
            em,
            auditDraft(
              offer.codeHash ? 'claimCode.updated' : 'storeOffer.updated',
              offerObject(id, collection, offer.codeHash ? 'claimCode' : 'storeOffer'),
              {
                before: viewOf(offer),
                after: viewOf(after),
              },
            ),
          );
        }
        return count;
      });
      if (updated !== 1)
        throw new ConflictError(
          `The offer ${id} changed while this change was made; read it again.`,
          '/problems/offer-version-changed',
        );
      return offerView(await readOffer(id));
    },
  };
}
