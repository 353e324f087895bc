// Linking an external wallet with Sign-In with Ethereum (EIP-4361): the service issues a message with
// a single-use nonce bound to the user and the address; the wallet signs it (EIP-191 personal_sign);
// the service checks the message, consumes the nonce, recovers the signer and links the address.
import { randomInt } from 'node:crypto';
import { createSiweMessage, parseSiweMessage } from 'viem/siwe';
import { verifyMessage } from 'viem/utils';
import { SiweChallenge } from '../../db/entities/SiweChallenge.ts';
import { Wallet } from '../../db/entities/Wallet.ts';
import type { Orm } from '../../db/orm.ts';
import { ConflictError, ValidationError } from '../errors.ts';
import { formatAddress, isValidAddress, type StoredAddress } from './addresses.ts';
import { walletLinkedChange } from './outbox.ts';
import type { LedgerStore } from './store/plan.ts';
import { type WalletView, walletView } from './views.ts';

const STATEMENT = 'Link this wallet to your Game Asset Tracking Service account.';
const CHAIN_ID = 1;
const NONCE_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const NONCE_LENGTH = 24; // 24 base-62 characters: about 143 bits

export interface WalletLinkChallengeView {
  message: string;
  nonce: string;
  expiresAt: string;
}

export interface WalletLinkOptions {
  /** The service's public base URL: its host is the SIWE domain, the URL itself the SIWE URI. */
  publicUrl: string;
  /** How long a challenge stays valid. */
  challengeTtlSeconds: number;
}

export interface WalletLinkService {
  createChallenge(userId: string, address: StoredAddress): Promise<WalletLinkChallengeView>;
  link(userId: string, message: string, signature: `0x${string}`): Promise<WalletView>;
}

class InvalidSiweMessageError extends ValidationError {
  constructor(detail: string) {
    super(detail, undefined, '/problems/invalid-siwe-message');
  }
}

class InvalidSiweNonceError extends ValidationError {
  constructor(
    detail = 'The challenge nonce is unknown, has expired or was already used; request a new challenge.',
  ) {
    super(detail, undefined, '/problems/invalid-siwe-nonce');
  }
}

class InvalidSiweSignatureError extends ValidationError {
  constructor(address: string) {
    super(
      `The signature was not made by ${formatAddress(address)}.`,
      undefined,
      '/problems/invalid-siwe-signature',
    );
  }
}

class WalletAlreadyLinkedError extends ConflictError {
  constructor(address: string) {
    super(
      `${formatAddress(address)} is already linked to another account.`,
      '/problems/wallet-already-linked',
    );
  }
}

function newNonce(): string {
  let nonce = '';
  for (let i = 0; i < NONCE_LENGTH; i++) nonce += NONCE_ALPHABET[randomInt(NONCE_ALPHABET.length)];
  return nonce;
}

export function createWalletLinkService(
  orm: Orm,
  store: LedgerStore,
  options: WalletLinkOptions,
): WalletLinkService {
  const uri = options.publicUrl;
  const domain = new URL(options.publicUrl).host;

  /** Domain, URI, version and chain id must be this service's; returns the signer's address. */
  function checkMessage(message: string): { address: StoredAddress; nonce: string } {
    const fields = parseSiweMessage(message);
    if (!fields.address || !fields.nonce || !fields.domain || !isValidAddress(fields.address)) {
      throw new InvalidSiweMessageError('The message is not a Sign-In with Ethereum (EIP-4361) message.');
    }
    if (fields.domain !== domain)
      throw new InvalidSiweMessageError(`The message's domain ${fields.domain} is not ${domain}.`);
    if (fields.uri !== uri)
      throw new InvalidSiweMessageError(`The message's URI ${fields.uri} is not ${uri}.`);
    if (fields.version !== '1') throw new InvalidSiweMessageError("The message's version is not 1.");
    if (fields.chainId !== CHAIN_ID)
      throw new InvalidSiweMessageError(`The message's chain id is not ${CHAIN_ID}.`);
    return { address: fields.address.toLowerCase() as StoredAddress, nonce: fields.nonce };
  }

  return {
    async createChallenge(userId, address) {
      const issuedAt = new Date();
      const expiresAt = new Date(issuedAt.getTime() + options.challengeTtlSeconds * 1000);
      const nonce = newNonce();
      const message = createSiweMessage({
        domain,
        address: formatAddress(address) as `0x${string}`,
        statement: STATEMENT,
        uri,
        version: '1',
        chainId: CHAIN_ID,
        nonce,
        issuedAt,
        expirationTime: expiresAt,
      });
      const em = orm.em.fork();
      await em.insert(SiweChallenge, { nonce, user: userId, address, message, expiresAt, usedAt: null });
      return { message, nonce, expiresAt: expiresAt.toISOString() };
    },

    async link(userId, message, signature) {
      const { address, nonce } = checkMessage(message);
      const em = orm.em.fork();
      const challenge = await em.findOne(SiweChallenge, { nonce });
      const now = new Date();
      if (
        !challenge ||
        challenge.user.id !== userId ||
        challenge.address !== address ||
        challenge.usedAt ||
        challenge.expiresAt.getTime() <= now.getTime()
      ) {
        throw new InvalidSiweNonceError();
      }
      if (challenge.message !== message) {
        throw new InvalidSiweMessageError(
          'The message differs from the challenge that was issued; sign it unchanged.',
        );
      }
      // Consume the nonce before checking the signature: one attempt per challenge, and of two
      // concurrent attempts only the one whose conditional update wins may go on.
      const consumed = await em.nativeUpdate(SiweChallenge, { nonce, usedAt: null }, { usedAt: now });
      if (consumed !== 1) throw new InvalidSiweNonceError();

      const signed = await verifyMessage({ address: address as `0x${string}`, message, signature }).catch(
        () => false,
      );
      if (!signed) throw new InvalidSiweSignatureError(address);

      const existing = await em.findOne(Wallet, { address });
      if (existing) {
        if (existing.user?.id !== userId) throw new WalletAlreadyLinkedError(address);
        return walletView(existing);
      }
      // With its internal change row: every instance's cached listing of the user's assets now
      // covers this wallet (src/events/commit-hook.ts).
      const wallet = { address, userId, kind: 'linked' as const, encryptedPrivateKey: null, createdAt: now };
      const outcome = await store.apply({
        at: now,
        guards: [{ kind: 'walletAbsent', wallet: address }],
        wallets: [wallet],
        ledgerChanges: [walletLinkedChange(userId, address, now)],
      });
      // Rejected: linked between our read and the plan, by another user (this user's nonce is
      // consumed once, so not by this user).
      const linked = await orm.em.fork().findOne(Wallet, { address });
      if (!linked || linked.user?.id !== userId || outcome.outcome !== 'applied')
        throw new WalletAlreadyLinkedError(address);
      return walletView(linked);
    },
  };
}
