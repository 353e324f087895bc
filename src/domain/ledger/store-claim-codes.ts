// Claim codes (issue 36): store offers with no price, reached by their code only (stored hashed, as
// sha256 of the code trimmed and upper-cased); redeemed as a store purchase of one unit
// (./store-purchase.ts) that pays no one.

import { createHash, randomBytes } from 'node:crypto';
import type { components } from '../../../generated/openapi/types.ts';
import { StoreOffer } from '../../db/entities/StoreOffer.ts';
import { auditDraft, flushAudited } from '../audit.ts';
import { assertCollectionPowers } from '../authorization.ts';
import { ConflictError, NotFoundError, ValidationError } from '../errors.ts';
import { newId } from '../ids.ts';
import type { Actor } from './actor.ts';
import { type StoredAddress, ZERO_ADDRESS } from './addresses.ts';
import type { WriteResult } from './idempotency.ts';
import {
  type ClaimCodeView,
  checkWindow,
  claimCodeView,
  dateOf,
  offerObject,
  type StoreContext,
  type StoreGrantView,
  type StoreOfferRow,
} from './store-context.ts';
import type { Settle, StorePurchaseResultView } from './store-purchase.ts';
import { earlierAnswerOr } from './writes.ts';

type CreatedClaimCodesView = components['schemas']['CreatedClaimCodes'];

export interface CreateClaimCodesInput {
  grants: StoreGrantView[];
  count?: number;
  code?: string;
  maxRedemptions?: number;
  perWalletLimit?: number;
  startsAt?: string | null;
  expiresAt?: string | null;
}

export interface ClaimCodeMethods {
  /** Claim codes: offers with no price reached by their code (stored hashed). */
  createClaimCodes(
    actor: Actor,
    collectionId: string,
    input: CreateClaimCodesInput,
  ): Promise<CreatedClaimCodesView>;
  getClaimCode(actor: Actor, id: string): Promise<ClaimCodeView>;
  /** Redeems a code as one plan; ClaimCodeInvalidError when no code is `code` (a guess to count). */
  redeem(
    actor: Actor,
    input: { wallet: StoredAddress; code: string },
    idempotencyKey?: string,
  ): Promise<WriteResult<StorePurchaseResultView>>;
}

export class ClaimCodeInvalidError extends NotFoundError {
  constructor() {
    super('No claim code is this code.', '/problems/claim-code-invalid');
  }
}

/** A code as compared and hashed: trimmed, upper case. */
const normalizedCode = (code: string) => code.trim().toUpperCase();
const codeHashOf = (code: string) => createHash('sha256').update(normalizedCode(code), 'utf8').digest('hex');
const CODE_ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** 20 characters of Crockford base32 (100 bits), in groups of 5. */
function randomCode(): string {
  const bytes = randomBytes(20);
  const chars = [...bytes].map((b) => CODE_ALPHABET[b % 32]).join('');
  return chars.match(/.{5}/g)?.join('-') ?? chars;
}

const OFFER_OF_CODE = 'select id, version from store_offer where code_hash = ?';

export function createClaimCodeMethods(ctx: StoreContext, settle: Settle): ClaimCodeMethods {
  const { orm, idempotency, reads, collectionOf, checkGrants } = ctx;

  return {
    async createClaimCodes(actor, collectionId, input) {
      const collection = await collectionOf(collectionId);
      assertCollectionPowers(actor, collection, 'hand out its claim codes');
      const count = input.count ?? 1;
      if (input.code !== undefined && count !== 1)
        throw new ValidationError('A chosen `code` is one code: `count` must be 1.', [
          { pointer: '/body/count', detail: 'must be 1 with a chosen code' },
        ]);
      const grants = await checkGrants(actor, collectionId, input.grants);
      const startsAt = dateOf(input.startsAt);
      const endsAt = dateOf(input.expiresAt);
      checkWindow(startsAt, endsAt);
      const taken = () =>
        new ConflictError('This code is already a claim code.', '/problems/claim-code-exists');
      const em = orm.em.fork();
      if (input.code !== undefined && (await em.count(StoreOffer, { codeHash: codeHashOf(input.code) })))
        throw taken();
      const at = new Date();
      const made: { code: string; offer: StoreOffer }[] = [];
      for (let i = 0; i < count; i++) {
        const code = input.code === undefined ? randomCode() : normalizedCode(input.code);
        const offer = em.create(StoreOffer, {
          id: newId('sof'),
          collectionId,
          name: `Claim code ${code.slice(0, 4)}`,
          version: 1,
          status: 'active',
          price: [],
          grants,
          // Nothing is paid: the zero address stands for no one.
          payTo: ZERO_ADDRESS,
          limitPerWallet: input.perWalletLimit ?? 1,
          limitTotal: input.maxRedemptions ?? 1,
          sold: 0,
          startsAt,
          endsAt,
          createdBy: actor.userId,
          createdAt: at,
          updatedAt: at,
          codeHash: codeHashOf(code),
          codePrefix: code.slice(0, 4),
        });
        made.push({ code, offer });
      }
      try {
        // Audited without the codes (nor their prefixes): each code's id, grants, limits and window.
        await flushAudited(em, () =>
          made.map(({ offer }) => {
            const { prefix: _prefix, ...view } = claimCodeView(offer);
            return auditDraft(
              'claimCode.created',
              offerObject(offer.id, collection, 'claimCode'),
              { after: view },
              at,
            );
          }),
        );
      } catch (error) {
        if (input.code !== undefined) throw taken();
        throw error;
      }
      return { codes: made.map(({ code, offer }) => ({ code, claimCode: claimCodeView(offer) })) };
    },

    async getClaimCode(actor, id) {
      const offer = await orm.em.fork().findOne(StoreOffer, { id, codeHash: { $ne: null } });
      if (!offer) throw new NotFoundError(`No claim code with id ${id}.`);
      assertCollectionPowers(actor, await collectionOf(offer.collectionId), 'see its claim codes');
      return claimCodeView(offer);
    },

    async redeem(actor, input, idempotencyKey) {
      const key = idempotency.keyOf({
        userId: actor.userId,
        operation: 'redeemClaimCode',
        key: idempotencyKey,
        request: { wallet: input.wallet, code: normalizedCode(input.code) },
      });
      const [offer] = await reads.all<Pick<StoreOfferRow, 'id' | 'version'>>(OFFER_OF_CODE, [
        codeHashOf(input.code),
      ]);
      if (!offer) return earlierAnswerOr(idempotency, key, new ClaimCodeInvalidError());
      return settle(
        actor,
        offer.id,
        { wallet: input.wallet, version: Number(offer.version), quantity: 1 },
        key,
        true,
      );
    },
  };
}
