// Issue 21's frozen, soulbound and living-metadata invariants under random interleavings of
// transfers, freezes, unfreezes and metadata updates, fired at once on real SQLite and PostgreSQL:
// no soulbound asset ever moves; no transfer of an asset commits while it is frozen (its events, in
// id order, never show a transfer between a freeze and the next unfreeze: a freeze and a transfer of
// one asset serialize on its row, so their event ids follow their commits); metadata versions are
// gapless per asset, the newest is the asset's metadata, and the events carry them in order.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Asset } from '../../../src/db/entities/Asset.ts';
import { AssetMetadataVersion } from '../../../src/db/entities/AssetMetadataVersion.ts';
import { OutboxEvent } from '../../../src/db/entities/OutboxEvent.ts';
import { Transfer } from '../../../src/db/entities/Transfer.ts';
import type { StoredAddress } from '../../../src/domain/ledger/addresses.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  checkInvariants,
  createUser,
  type LedgerFixture,
  openLedger,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';

const metadata = {
  image: 'ipfs://bafy/x.png',
  attributes: [{ trait_type: 'level', value: 1 }],
  creator: 'Studio',
};
const EXPECTED_REFUSALS = [
  '/problems/insufficient-balance',
  '/problems/asset-frozen',
  '/problems/asset-soulbound',
  '/problems/wallet-not-controlled',
  // A metadata update that lost its version to others five times in a row.
  '/problems/conflict',
];

describe.each(DB_KINDS)('frozen, soulbound and metadata invariants on %s', (kind) => {
  let fx: LedgerFixture;
  let studio: TestUser;

  beforeAll(async () => {
    fx = await openLedger(kind);
    studio = await createUser(fx, 'studio');
    await fx.ledger.collections.create(studio, { id: 'fz', name: 'Frozen', mutableAttributes: ['level'] });
  });

  afterAll(async () => {
    await fx?.close();
  });

  it('no frozen or soulbound asset moves; versions are gapless', async () => {
    const users = await Promise.all(Array.from({ length: 3 }, () => createUser(fx)));
    await fx.ledger.assets.createCurrency(studio, {
      id: 'fz-ore',
      name: 'Ore',
      symbol: 'ORE',
      decimals: 0,
      collection: 'fz',
      metadata,
    });
    for (const user of users)
      await fx.ledger.assets.mint(studio, 'fz-ore', { to: user.wallet as StoredAddress, amount: '1000' });
    // Each user owns two NFTs of the studio's collection (minted to them), the second soulbound.
    const nfts: { id: string; soulbound: boolean }[] = [];
    for (const user of users) {
      const batch = await fx.ledger.assets.mintBatch(studio, 'fz', [
        { to: user.wallet as StoredAddress, nft: { name: 'Blade', metadata } },
        { to: user.wallet as StoredAddress, nft: { name: 'Badge', metadata, soulbound: true } },
      ]);
      for (const nft of batch.body.nfts) nfts.push({ id: nft.id, soulbound: nft.soulbound === true });
    }
    const assets = ['fz-ore', ...nfts.map((nft) => nft.id)];

    const operation = fc.oneof(
      fc.record({
        op: fc.constant('transfer' as const),
        from: fc.nat({ max: users.length - 1 }),
        shift: fc.integer({ min: 1, max: users.length - 1 }),
        asset: fc.nat({ max: assets.length - 1 }),
      }),
      fc.record({
        op: fc.constant('freeze' as const),
        asset: fc.nat({ max: assets.length - 1 }),
        on: fc.boolean(),
      }),
      fc.record({
        op: fc.constant('metadata' as const),
        nft: fc.nat({ max: nfts.length - 1 }),
        level: fc.integer({ min: 1, max: 5 }),
      }),
    );
    const applied = { transfer: 0, freeze: 0, metadata: 0, refusedFrozen: 0, refusedSoulbound: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 5, maxLength: 20 }), async (operations) => {
        const results = await Promise.allSettled(
          operations.map(async (operation) => {
            if (operation.op === 'freeze') {
              await fx.ledger.assetUpdates.setFrozen(studio, assets[operation.asset], operation.on);
              applied.freeze++;
              return;
            }
            if (operation.op === 'metadata') {
              await fx.ledger.assetUpdates.updateMetadata(studio, nfts[operation.nft].id, {
                attributes: [{ trait_type: 'level', value: operation.level }],
              });
              applied.metadata++;
              return;
            }
            const from = users[operation.from];
            const to = users[(operation.from + operation.shift) % users.length];
            const assetId = assets[operation.asset];
            // An NFT moves only from its owner: pick the owner's side at run time.
            await fx.ledger.transfers.create(from, {
              assetId,
              from: from.wallet as StoredAddress,
              to: to.wallet as StoredAddress,
              amount: '1',
            });
            applied.transfer++;
          }),
        );
        for (const result of results) {
          if (result.status !== 'rejected') continue;
          const type = result.reason?.type;
          expect(EXPECTED_REFUSALS, String(result.reason)).toContain(type);
          if (type === '/problems/asset-frozen') applied.refusedFrozen++;
          if (type === '/problems/asset-soulbound') applied.refusedSoulbound++;
        }
        expect(await checkInvariants(fx.orm)).toEqual([]);
        const em = fx.orm.em.fork();
        // No soulbound NFT ever moved.
        for (const nft of nfts.filter((n) => n.soulbound))
          expect(await em.count(Transfer, { asset: nft.id })).toBe(0);
        // Per asset, in event order: no transfer while frozen; metadata versions never go back.
        const events = await em.find(OutboxEvent, { assetId: { $in: assets } }, { orderBy: { id: 'asc' } });
        const frozen = new Map<string, boolean>();
        const versions = new Map<string, number>();
        for (const event of events) {
          const data = event.data as Record<string, unknown>;
          if (event.type === 'assetUpdated') {
            frozen.set(event.assetId, data.frozen === true);
            const version = Number(data.metadataVersion);
            expect(version).toBeGreaterThanOrEqual(versions.get(event.assetId) ?? 0);
            versions.set(event.assetId, version);
          }
          if (event.type === 'newTransfer' && data.from !== '0x0000000000000000000000000000000000000000')
            expect(frozen.get(event.assetId) ?? false, `${event.assetId} moved while frozen`).toBe(false);
        }
        // Versions are gapless: 0..current, and the newest is the asset's metadata.
        for (const nft of nfts) {
          const asset = await em.findOneOrFail(Asset, { id: nft.id });
          const rows = await em.find(
            AssetMetadataVersion,
            { assetId: nft.id },
            { orderBy: { version: 'asc' } },
          );
          if (asset.metadataVersion === 0) {
            expect(rows).toEqual([]);
            continue;
          }
          expect(rows.map((row) => row.version)).toEqual(
            Array.from({ length: asset.metadataVersion + 1 }, (_, i) => i),
          );
          expect(rows[rows.length - 1].metadata).toEqual(asset.metadata);
          expect(versions.get(nft.id)).toBe(asset.metadataVersion);
        }
      }),
      { numRuns: 25 },
    );
    expect(applied.transfer).toBeGreaterThan(0);
    expect(applied.freeze).toBeGreaterThan(0);
    expect(applied.metadata).toBeGreaterThan(0);
    expect(applied.refusedFrozen).toBeGreaterThan(0);
    expect(applied.refusedSoulbound).toBeGreaterThan(0);
  }, 180_000);
});
