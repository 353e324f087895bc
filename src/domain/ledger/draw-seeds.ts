// Draw seeds (issue 36): each wallet has one active server seed, committed to (its hash published)
// before any draw uses it and revealed by the wallet after, when the wallet's next seed is committed.
// The seed is stored sealed (src/crypto/secret-box.ts); an opening uses its nonces one at a time
// (./loot-box-openings.ts).

import { randomBytes } from 'node:crypto';
import type { components } from '../../../generated/openapi/types.ts';
import { DrawSeed } from '../../db/entities/LootBox.ts';
import { NotFoundError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { seedCommitment } from './draw-algorithm.ts';
import { DrawSeedChangedError, type LootBoxContext, seedContext } from './loot-box-context.ts';

type DrawSeedView = components['schemas']['DrawSeed'];

export interface DrawSeedMethods {
  /** The wallet's active seed (created at its first call), as a commitment. */
  commitSeed(actor: Actor, wallet: StoredAddress): Promise<DrawSeedView>;
  getSeed(id: string): Promise<DrawSeedView>;
  /** Publishes the seed and commits the wallet's next one. */
  revealSeed(actor: Actor, id: string): Promise<{ revealed: DrawSeedView; next: DrawSeedView }>;
}

function seedView(seed: DrawSeed): DrawSeedView {
  return {
    id: seed.id,
    wallet: formatAddress(seed.wallet),
    commitment: seed.commitment,
    status: seed.status,
    nextNonce: seed.nextNonce,
    serverSeed: seed.serverSeed ?? null,
    createdAt: seed.createdAt.toISOString(),
    revealedAt: seed.revealedAt?.toISOString() ?? null,
  };
}

export function createDrawSeedMethods(ctx: LootBoxContext): DrawSeedMethods {
  const { orm, writer, secretBox, activeSeed } = ctx;

  async function newSeed(wallet: StoredAddress): Promise<DrawSeed> {
    const em = orm.em.fork();
    const id = newId('dsd');
    const secret = randomBytes(32).toString('hex');
    const seed = em.create(DrawSeed, {
      id,
      wallet,
      activeKey: wallet,
      status: 'active',
      commitment: seedCommitment(secret),
      sealedSeed: secretBox.seal(secret, seedContext(id)),
      serverSeed: null,
      nextNonce: 0,
      createdAt: new Date(),
      revealedAt: null,
    });
    try {
      await em.flush();
      return seed;
    } catch (error) {
      // Another call committed the wallet's active seed first (the unique active key): answer it.
      const existing = await activeSeed(wallet);
      if (existing) return existing;
      throw error;
    }
  }

  return {
    async commitSeed(actor, wallet) {
      await writer.assertControls(actor, [{ from: wallet, place: { pointer: '/body/wallet', label: '' } }]);
      return seedView((await activeSeed(wallet)) ?? (await newSeed(wallet)));
    },

    async getSeed(id) {
      const seed = await orm.em.fork().findOne(DrawSeed, { id });
      if (!seed) throw new NotFoundError(`No draw seed with id ${id}.`);
      return seedView(seed);
    },

    async revealSeed(actor, id) {
      const seed = await orm.em.fork().findOne(DrawSeed, { id });
      if (!seed) throw new NotFoundError(`No draw seed with id ${id}.`);
      await writer.assertControls(actor, [
        { from: seed.wallet as StoredAddress, place: { pointer: '/path/seed_id', label: '' } },
      ]);
      const serverSeed = secretBox.open(seed.sealedSeed, seedContext(seed.id));
      const revealedAt = new Date();
      // Only an active seed reveals (an opening in flight holds the row until it commits).
      const changed = await orm.em
        .fork()
        .nativeUpdate(
          DrawSeed,
          { id, status: 'active' },
          { status: 'revealed', activeKey: null, serverSeed, revealedAt },
        );
      if (changed !== 1) throw new DrawSeedChangedError(`The draw seed ${id} was already revealed.`);
      const revealed = await orm.em.fork().findOneOrFail(DrawSeed, { id });
      const next = await newSeed(seed.wallet as StoredAddress);
      return { revealed: seedView(revealed), next: seedView(next) };
    },
  };
}
