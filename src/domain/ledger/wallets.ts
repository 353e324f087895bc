// Wallets a user controls: one custodial wallet per user (a real secp256k1 key pair whose private key
// is sealed at rest) and any external wallets linked with a SIWE signature (see wallet-links.ts).
import type { EntityManager } from '@mikro-orm/sql';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import type { SecretBox } from '../../crypto/secret-box.ts';
import { Wallet } from '../../db/entities/Wallet.ts';
import type { Orm } from '../../db/orm.ts';
import { ForbiddenError } from '../errors.ts';
import { formatAddress, type StoredAddress } from './addresses.ts';
import { type WalletView, walletView } from './views.ts';

export class WalletNotControlledError extends ForbiddenError {
  constructor(address: string, detail = `${formatAddress(address)} is not one of your wallets.`) {
    super(detail, '/problems/wallet-not-controlled');
  }
}

/** The AES-GCM context binding a sealed key to its wallet: a key cannot be moved to another row. */
export function walletKeyContext(address: string): string {
  return `wallet:${address}`;
}

export interface WalletService {
  /**
   * Creates the user's custodial wallet inside the caller's transaction (registration calls it with
   * its own `em`, so a user never exists without a wallet). Persists and flushes.
   */
  createCustodialWallet(em: EntityManager, userId: string): Promise<WalletView>;
  /** The custodial wallet first, then linked ones in link order. */
  listWallets(userId: string): Promise<WalletView[]>;
  /** Lowercase addresses of the user's wallets, custodial first. */
  controlledAddresses(em: EntityManager, userId: string): Promise<StoredAddress[]>;
  /** Throws 403 wallet-not-controlled unless the user controls `address`. */
  assertControls(em: EntityManager, userId: string, address: StoredAddress): Promise<void>;
}

function byCustodialThenLinkOrder(a: Wallet, b: Wallet): number {
  if (a.kind !== b.kind) return a.kind === 'custodial' ? -1 : 1;
  return a.createdAt.getTime() - b.createdAt.getTime() || (a.address < b.address ? -1 : 1);
}

export function createWalletService(orm: Orm, secretBox: SecretBox): WalletService {
  async function walletsOf(em: EntityManager, userId: string): Promise<Wallet[]> {
    const wallets = await em.find(Wallet, { user: userId });
    return wallets.sort(byCustodialThenLinkOrder);
  }

  return {
    async createCustodialWallet(em, userId) {
      const privateKey = generatePrivateKey();
      const address = privateKeyToAccount(privateKey).address.toLowerCase();
      const wallet = em.create(Wallet, {
        address,
        user: userId,
        kind: 'custodial',
        encryptedPrivateKey: secretBox.seal(privateKey, walletKeyContext(address)),
        createdAt: new Date(),
      });
      em.persist(wallet);
      await em.flush();
      return walletView(wallet);
    },

    async listWallets(userId) {
      return (await walletsOf(orm.em.fork(), userId)).map(walletView);
    },

    async controlledAddresses(em, userId) {
      return (await walletsOf(em, userId)).map((wallet) => wallet.address as StoredAddress);
    },

    async assertControls(em, userId, address) {
      const wallet = await em.findOne(Wallet, { address, user: userId });
      if (!wallet) throw new WalletNotControlledError(address);
    },
  };
}
