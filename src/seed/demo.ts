// The demo data of the embedded default: a game studio's collection, currencies, NFTs, players
// holding them, a crafting recipe, prices over the last day, and the demo OAuth client. It runs only on a database
// without users (SEED_DEMO=auto: the embedded SQLite file; always: any database), so it never
// touches real data, and running it twice changes nothing.

import { registerUser, setUserRole, type UserRegisteredHook } from '../auth/accounts.ts';
import { digestSecret } from '../auth/client-secrets.ts';
import { ensureDemoClient } from '../auth/index.ts';
import { verifyPassword } from '../auth/passwords.ts';
import { createServiceAccount } from '../auth/service-accounts.ts';
import { ClientSecret } from '../db/entities/ClientSecret.ts';
import type { UserRole } from '../db/entities/User.ts';
import { User } from '../db/entities/User.ts';
import type { Orm } from '../db/orm.ts';
import { inTransaction } from '../db/transactions.ts';
import type { StoredAddress } from '../domain/ledger/addresses.ts';
import type { Ledger } from '../domain/ledger/index.ts';
import type { Logger } from '../observability/logger.ts';

/**
 * The demo accounts, listed in the README. Demo only: never seed them on a real deployment.
 * `passwordHash` is the published password hashed once, ahead (scrypt with the current parameters,
 * checked by test/unit/startup-cost.test.ts): seeding stores it, and the start-up check of the demo
 * accounts compares with it before hashing, so a start with the demo data derives no key for them
 * (each derivation is ~0.2 CPU-s; eight of them were a third of a demo start). The password is
 * public, so its hash tells nothing more.
 */
export const DEMO_ACCOUNTS: readonly {
  username: string;
  password: string;
  passwordHash: string;
  role: UserRole;
}[] = [
  {
    username: 'studio',
    password: 'studio-demo-password',
    passwordHash: 'scrypt$32768$8$1$5KjD-aWNN1xlyToN0QtVsw$WzpMpBvn9zKHyAsxVYkFIcTFCitG83rXkzegHzI9JUw',
    role: 'studio',
  },
  {
    username: 'alice',
    password: 'alice-demo-password',
    passwordHash: 'scrypt$32768$8$1$1o6xS0N5jjjZdoQALyOTvg$DJ8OlL7WnX6NsuktDkOXatcB57sXJ3A92iDI5Dntaxs',
    role: 'player',
  },
  {
    username: 'bob',
    password: 'bob-demo-password',
    passwordHash: 'scrypt$32768$8$1$-2Z7mBVZqf7zuoJJtcyZZA$Q0N32w5eSITf9RIJ2KwN-nT4hYWIbfNefMRLP1G93Jc',
    role: 'player',
  },
  {
    username: 'admin',
    password: 'admin-demo-password',
    passwordHash: 'scrypt$32768$8$1$PA5YYC9UgokUfhhuWVxwMQ$Q_U4z5NQzuZ3yR4Y0V-8KMbplMFeSsNItwCXVHOdXDc',
    role: 'admin',
  },
];

/**
 * The demo price oracle: a service account (client credentials) owned by the demo admin, with a
 * fixed client id and a published client secret. Counted as the demo account `oracle` while that
 * secret is active.
 */
export const DEMO_ORACLE = {
  name: 'oracle',
  clientId: 'svc_000000000000000000000DEM01',
  clientSecret: 'oracle-demo-client-secret-never-use-it-0001',
} as const;

/** The order the demo accounts are named in (the start-up warning, the README). */
const DEMO_NAMES = ['studio', 'alice', 'bob', DEMO_ORACLE.name, 'admin'];

export const DEMO_COLLECTION = 'dawn-quest';

export interface SeedDeps {
  orm: Orm;
  ledger: Ledger;
  publicUrl: string;
  logger: Logger;
  onUserRegistered: UserRegisteredHook;
}

/**
 * The demo accounts that exist and still accept their published password (so anyone who can reach
 * the service can sign in as them, an admin among them). One query, and a password check only for
 * the demo usernames found: a real deployment without them pays no hashing at start-up.
 */
export async function activeDemoAccounts(orm: Orm): Promise<string[]> {
  const users = await orm.em.fork().find(User, {
    usernameNormalized: { $in: DEMO_ACCOUNTS.map((account) => account.username) },
  });
  const active = await Promise.all(
    DEMO_ACCOUNTS.map(async (account) => {
      const user = users.find((candidate) => candidate.usernameNormalized === account.username);
      // The seeded hash is the published password's; any other is checked (a password set again).
      const published =
        user &&
        (user.passwordHash === account.passwordHash ||
          (await verifyPassword(account.password, user.passwordHash)));
      return published ? account.username : [];
    }),
  );
  const oracleSecret = await orm.em
    .fork()
    .count(ClientSecret, { secretHash: digestSecret(DEMO_ORACLE.clientSecret), revokedAt: null });
  const names = new Set([...active.flat(), ...(oracleSecret > 0 ? [DEMO_ORACLE.name] : [])]);
  return DEMO_NAMES.filter((name) => names.has(name));
}

/** Seeds when the database has no user yet; returns whether it did. */
export async function seedDemoIfEmpty(deps: SeedDeps): Promise<boolean> {
  if ((await deps.orm.em.fork().count(User, {})) > 0) return false;
  await seedDemo(deps);
  return true;
}

async function seedDemo({ orm, ledger, publicUrl, logger, onUserRegistered }: SeedDeps): Promise<void> {
  await ensureDemoClient(orm.em.fork());

  const users = new Map<string, { userId: string; role: UserRole; wallet: StoredAddress }>();
  for (const account of DEMO_ACCOUNTS) {
    const user = await registerUser(orm, account, onUserRegistered, async () => account.passwordHash);
    if (account.role !== 'player') await setUserRole(orm, user.id, account.role);
    users.set(account.username, {
      userId: user.id,
      role: account.role,
      wallet: user.wallets[0].toLowerCase() as StoredAddress,
    });
  }
  // The price oracle is a machine: a service account of the admin's, signing in with its secret.
  const { account: oracle } = await inTransaction(orm, (em) =>
    createServiceAccount(
      em,
      { userId: (users.get('admin') as { userId: string }).userId, role: 'admin' },
      { name: 'Demo price oracle', role: 'oracle', scopes: ['assets:read', 'prices:write'] },
      {
        limit: 1,
        onUserRegistered,
        demo: { id: DEMO_ORACLE.clientId, clientSecret: DEMO_ORACLE.clientSecret },
      },
    ),
  );
  users.set(DEMO_ORACLE.name, {
    userId: oracle.id,
    role: 'oracle',
    wallet: oracle.wallets[0].toLowerCase() as StoredAddress,
  });
  const actor = (name: string) => {
    const user = users.get(name) as { userId: string; role: UserRole };
    return { userId: user.userId, role: user.role };
  };
  const wallet = (name: string) => (users.get(name) as { wallet: StoredAddress }).wallet;
  const image = (name: string) => `${publicUrl}/explorer/demo/${name}.svg`;

  await ledger.collections.create(actor('studio'), {
    id: DEMO_COLLECTION,
    name: 'Dawn Quest',
    description: 'The demo game: a quest at first light.',
  });
  for (const currency of [
    { id: 'gold', name: 'Gold', symbol: 'GOLD', decimals: 2, maxSupply: '1000000' },
    { id: 'gems', name: 'Gems', symbol: 'GEM', decimals: 0 },
  ]) {
    await ledger.assets.createCurrency(actor('studio'), {
      ...currency,
      collection: DEMO_COLLECTION,
      description: `${currency.name}, the currency of Dawn Quest.`,
      metadata: { image: image(currency.id), attributes: [], creator: 'Dawn Quest Studio' },
    });
  }
  await ledger.assets.mint(actor('studio'), 'gold', { to: wallet('alice'), amount: '1500' });
  await ledger.assets.mint(actor('studio'), 'gold', { to: wallet('bob'), amount: '250.50' });
  await ledger.assets.mint(actor('studio'), 'gems', { to: wallet('alice'), amount: '40' });

  const items = [
    { name: 'Sword of Dawn', art: 'sword', owner: 'alice', rarity: 'legendary', power: 87 },
    { name: 'Shield of Dusk', art: 'shield', owner: 'alice', rarity: 'rare', power: 54 },
    { name: 'Dragon Egg', art: 'egg', owner: 'alice', rarity: 'mythic', power: 1 },
    { name: 'Hunter Bow', art: 'bow', owner: 'bob', rarity: 'common', power: 31 },
  ];
  const nftIds: string[] = [];
  for (const item of items) {
    // NFTs are minted by the studio into its own wallet and handed to the players, as a game does.
    const { body: nft } = await ledger.assets.createNft(actor('studio'), {
      name: item.name,
      description: `${item.name} from Dawn Quest.`,
      collection: DEMO_COLLECTION,
      metadata: {
        image: image(item.art),
        attributes: [
          { trait_type: 'rarity', value: item.rarity },
          { trait_type: 'power', value: item.power },
        ],
        creator: 'Dawn Quest Studio',
      },
    });
    nftIds.push(nft.id);
    await ledger.transfers.create(actor('studio'), {
      assetId: nft.id,
      from: wallet('studio'),
      to: wallet(item.owner),
      amount: '1',
    });
  }
  await ledger.transfers.create(actor('alice'), {
    assetId: 'gold',
    from: wallet('alice'),
    to: wallet('bob'),
    amount: '25',
  });

  // Crafting (issue 21): herbs for alice and the studio's recipe that brews a Potion from two.
  await ledger.assets.createCurrency(actor('studio'), {
    id: 'herb',
    name: 'Herb',
    symbol: 'HERB',
    decimals: 0,
    collection: DEMO_COLLECTION,
    description: 'A healing herb of Dawn Quest, brewed into potions.',
    metadata: { image: image('herb'), attributes: [], creator: 'Dawn Quest Studio' },
  });
  await ledger.assets.mint(actor('studio'), 'herb', { to: wallet('alice'), amount: '4' });
  await ledger.recipes.create(actor('studio'), DEMO_COLLECTION, {
    name: 'Potion',
    inputs: [{ assetId: 'herb', amount: '2' }],
    outputs: [
      {
        nft: {
          name: 'Potion',
          description: 'A Potion brewed from two herbs.',
          metadata: {
            image: image('potion'),
            attributes: [{ trait_type: 'heals', value: 50 }],
            creator: 'Dawn Quest Studio',
          },
        },
      },
    ],
  });

  // A day of prices, every 30 minutes, so the charts have something to show.
  const now = Date.now();
  const series: { assetId: string; base: number }[] = [
    { assetId: 'gold', base: 0.0125 },
    { assetId: 'gems', base: 0.4 },
    { assetId: nftIds[0], base: 120 },
  ];
  for (const { assetId, base } of series) {
    for (let step = 48; step >= 0; step--) {
      const wave = Math.sin(step / 5) * 0.08 + Math.cos(step / 11) * 0.04;
      await ledger.prices.post(actor('oracle'), assetId, {
        price: (base * (1 + wave)).toFixed(6),
        currency: 'USD',
        source: 'demo-oracle',
        observedAt: new Date(now - step * 30 * 60_000).toISOString(),
      });
    }
  }
  logger.info({ accounts: DEMO_NAMES }, 'demo data seeded');
}
