// Transfers: atomic moves between wallets. The caller must control `from`; the debit, the credit, the
// transfer row and its event commit together or not at all. A transfer rejected by a rule (amount,
// control, balance) is answered with a problem and leaves no row: every stored transfer completed.
// A batch (issue 21) is one plan of several such legs, all or nothing; a burn is a leg to the zero
// address that credits no one (the currency's supply goes down, a burned NFT is owned by the zero
// address and so held by no one: it never moves again).

import type { EntityManager } from '@mikro-orm/sql';
import type { Database } from '../../db/database.ts';
import { Asset } from '../../db/entities/Asset.ts';
import { Transfer } from '../../db/entities/Transfer.ts';
import { firstTransferSender, transferHistoryEntries } from '../../db/transfer-history.ts';
import { NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import { decodeCursor, isInteger, type Page, page } from './cursor.ts';
import type { Idempotency, WriteResult } from './idempotency.ts';
import { createLegWriter, type LegWriter } from './leg-writer.ts';
import {
  type AssetFacts,
  amountOf,
  checkEndpoints,
  type Leg,
  legPlace,
  named,
  type TransferInput,
} from './legs.ts';
import { mintView } from './mints.ts';
import type { LedgerStore } from './store/plan.ts';
import { decimalsOf, type TransferView, transferView } from './views.ts';

export interface TransferFilters {
  wallet?: StoredAddress;
  assetId?: string;
  limit: number;
  cursor?: string;
}

export interface BurnInput {
  assetId: string;
  from: StoredAddress;
  amount: string;
}

export interface TransferBatchView {
  id: string;
  transfers: TransferView[];
}

/**
 * Issue 37: where an NFT's mint entry sorts in its own history (`assetId`): before every transfer
 * (their `seq`s start at 1), so it is the last entry of the last page, and a cursor at it ends the
 * list. In a wallet's history (no `assetId`) it sorts at its `asset.mint_seq` instead, read with the
 * page (src/db/transfer-history.ts).
 */
const MINT_SEQ = 0;
const LEDGER_NFT_ID = /^nft_([0-9A-HJKMNP-TV-Z]{26})$/;
const TRANSFER_ID = /^tr_([0-9A-HJKMNP-TV-Z]{26})$/;

/**
 * The mint entry of a ledger NFT (`nft_X`), which writes its asset row but no transfer row: `tr_X`,
 * from the zero address to the wallet it was minted to (its first transfer's sender, or its owner
 * when it never moved), at its `createdAt`. Null for anything else: a currency's mints and an
 * on-chain token's (`chn_`) are transfer rows of their own.
 */
async function nftMintEntry(
  em: EntityManager,
  assetId: string,
): Promise<{ view: TransferView; to: string } | null> {
  const ulid = LEDGER_NFT_ID.exec(assetId)?.[1];
  if (!ulid) return null;
  const asset = await em.findOne(Asset, { id: assetId, kind: 'nft' }, { fields: ['owner', 'createdAt'] });
  if (!asset) return null;
  const to = (await firstTransferSender(em, assetId)) ?? asset.owner;
  if (!to) return null;
  return { view: nftMintView(assetId, to as StoredAddress, asset.createdAt), to };
}

/** The mint entry of the ledger NFT `assetId` (`nft_X`): `tr_X`, from the zero address to `to`. */
function nftMintView(assetId: string, to: StoredAddress, createdAt: Date): TransferView {
  return mintView(`tr_${assetId.slice('nft_'.length)}`, assetId, to, 1n, 0, createdAt);
}

/**
 * Issue 37: the mint entries of a wallet's history page (the NFTs `ids`, minted to it), by NFT id:
 * their assets by primary key, the page's size at most.
 */
async function walletMintViews(em: EntityManager, ids: string[]): Promise<Map<string, TransferView>> {
  if (ids.length === 0) return new Map();
  const assets = await em.find(Asset, { id: { $in: ids } }, { fields: ['mintedTo', 'createdAt'] });
  return new Map(
    assets.map((asset) => [
      asset.id,
      nftMintView(asset.id, asset.mintedTo as StoredAddress, asset.createdAt),
    ]),
  );
}

/** The most legs one batch takes (the contract's `TransferBatchRequest.legs.maxItems`). */
export const MAX_BATCH_LEGS = 50;

export interface TransferService {
  create(actor: Actor, input: TransferInput, idempotencyKey?: string): Promise<WriteResult<TransferView>>;
  /** Applies every leg or none; a rejected leg's problem names it (`Leg i:`, `/body/legs/i/...`). */
  batch(
    actor: Actor,
    legs: TransferInput[],
    idempotencyKey?: string,
  ): Promise<WriteResult<TransferBatchView>>;
  /** Destroys `amount` held by `from`: a transfer to the zero address. */
  burn(actor: Actor, input: BurnInput, idempotencyKey?: string): Promise<WriteResult<TransferView>>;
  get(id: string): Promise<TransferView>;
  list(filters: TransferFilters): Promise<Page<TransferView>>;
}

export function createTransferService(
  database: Database,
  idempotency: Idempotency,
  store: LedgerStore,
  writer: LegWriter = createLegWriter(database, idempotency, store),
): TransferService {
  const { orm } = database;
  const { factsOf, apply: applyLegs, applySingle, earlierAnswer } = writer;
  return {
    async create(actor, input, idempotencyKey) {
      checkEndpoints(input);
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTransfer',
        key: idempotencyKey,
        request: input,
      });
      return applySingle(actor, input, key, 'transfer');
    },

    async batch(actor, inputs, idempotencyKey) {
      if (inputs.length === 0 || inputs.length > MAX_BATCH_LEGS) {
        throw new ValidationError(`A batch holds 1 to ${MAX_BATCH_LEGS} legs.`, [
          { pointer: '/body/legs', detail: `must hold 1 to ${MAX_BATCH_LEGS} legs` },
        ]);
      }
      inputs.forEach((input, i) => {
        checkEndpoints(input, legPlace(i));
      });
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'createTransferBatch',
        key: idempotencyKey,
        request: { legs: inputs },
      });
      const legs: Leg[] = [];
      try {
        for (const [i, input] of inputs.entries()) {
          const place = legPlace(i);
          let asset: AssetFacts;
          try {
            asset = await factsOf(input.assetId);
          } catch (error) {
            if (error instanceof NotFoundError) throw new NotFoundError(named(place, error.detail ?? ''));
            throw error;
          }
          legs.push({
            asset,
            amount: amountOf(asset, input.amount, place),
            from: input.from,
            to: input.to,
            place,
          });
        }
      } catch (error) {
        const froms = inputs.map((input, i) => ({ from: input.from, place: legPlace(i) }));
        const earlier = await earlierAnswer<TransferBatchView>(actor, froms, key);
        if (earlier) return earlier;
        throw error;
      }
      const id = newId('op');
      return applyLegs(
        actor,
        legs,
        key,
        new Date(),
        (transfers) => ({ status: 201, body: { id, transfers }, headers: {} }),
        { operationId: id },
      );
    },

    async burn(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'burnAsset',
        key: idempotencyKey,
        request: input,
      });
      return applySingle(actor, { ...input, to: ZERO_ADDRESS }, key, 'burn');
    },

    async get(id) {
      const em = orm.em.fork();
      const transfer = await em.findOne(Transfer, { id }, { populate: ['asset'] });
      if (transfer) return transferView(transfer, decimalsOf(transfer.asset.getEntity()));
      const ulid = TRANSFER_ID.exec(id)?.[1];
      const mint = ulid ? await nftMintEntry(em, `nft_${ulid}`) : null;
      if (!mint) throw new NotFoundError(`No transfer with id ${id}.`);
      return mint.view;
    },

    async list({ wallet, assetId, limit, cursor }) {
      const before = decodeCursor(cursor, 'transfers', isInteger);
      const em = orm.em.fork();
      const refs = await transferHistoryEntries(em, { wallet, assetId, before, limit: limit + 1 });
      const ids = refs.filter((ref) => !ref.mint).map((ref) => ref.id);
      const rows =
        ids.length === 0 ? [] : await em.find(Transfer, { id: { $in: ids } }, { populate: ['asset'] });
      const views = new Map(
        rows.map((row) => [row.id, transferView(row, decimalsOf(row.asset.getEntity()))]),
      );
      const mints = await walletMintViews(
        em,
        refs.filter((ref) => ref.mint).map((ref) => ref.id),
      );
      const entries = refs.flatMap((ref) => {
        const view = (ref.mint ? mints : views).get(ref.id);
        return view ? [{ seq: ref.seq, view }] : [];
      });
      // An NFT's history ends with its mint: read (two indexed lookups) only on the page it ends.
      if (assetId !== undefined && entries.length <= limit && (before === undefined || before > MINT_SEQ)) {
        const mint = await nftMintEntry(em, assetId);
        if (mint && (wallet === undefined || mint.to === wallet))
          entries.push({ seq: MINT_SEQ, view: mint.view });
      }
      const result = page(entries, limit, 'transfers', (entry) => entry.seq);
      return { data: result.data.map((entry) => entry.view), next_cursor: result.next_cursor };
    },
  };
}
