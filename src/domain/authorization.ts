// Who may do what to which object: the relation half of the one authorization table (issue 30). The
// contract declares, for every operation, the roles that may call it (`x-roles`, enforced at the edge
// before any handler runs) and the relation the caller must have to the object (`x-relation`); the
// domain checks each relation through one function here, so every service decides it the same way.
//
// Relations decided here: the audit trail's readers (`auditOwnersVisibleTo`, with an account's members
// `auditReadableOwners`: the audit log and `auditRecorded` webhooks), `collection-studio` (powers over a collection and its assets: mint, freeze,
// unfreeze, metadata, a studio's burn, a recipe's mints, its store's offers and their sales), `wallet-controller` (moves out of a wallet,
// as a guard the ledger store checks in its transaction), `trade-party` and `trade-counterparty`
// (`tradeRelation`, `tradePartyFilter`), `resource-owner` (`ownedBy` for lookups by id,
// `ownsResource` for an object already read). Services call these and answer a missing relation to
// another user's object with 404, as if it did not exist. `self` needs no function: the service
// reads the caller's own objects only.
import type { EntityManager } from '@mikro-orm/sql';
import { accountMembers } from '../db/account-members.ts';
import type { UserRole } from '../db/entities/User.ts';
import { ForbiddenError } from './errors.ts';
import type { Actor } from './ledger/actor.ts';
import type { StoredAddress } from './ledger/addresses.ts';
import type { Guard } from './ledger/store/plan.ts';

/** Personal collection ids start with this; nobody may create a collection with it (see the contract). */
export const PERSONAL_COLLECTION_PREFIX = 'user-';

/**
 * The roles a user may give a service account: an admin any role; anyone else their own role or
 * `player`. The same rule caps the account whenever it is used, so demoting the owner demotes it.
 */
export function serviceRolesAllowedFor(ownerRole: UserRole): readonly UserRole[] {
  if (ownerRole === 'admin') return ['player', 'studio', 'oracle', 'admin'];
  return ownerRole === 'player' ? ['player'] : ['player', ownerRole];
}

/** The role a service account acts with: its own while its owner's role allows it, else `player`. */
export function effectiveServiceRole(role: UserRole, ownerRole: UserRole): UserRole {
  return serviceRolesAllowedFor(ownerRole).includes(role) ? role : 'player';
}

/** A collection as these decisions need it: its id and its owner's user id. */
export interface CollectionRef {
  id: string;
  ownerId: string;
}

export function isPersonalCollection(collectionId: string): boolean {
  return collectionId.startsWith(PERSONAL_COLLECTION_PREFIX);
}

/**
 * `collection-studio`: powers over a collection's assets (freeze, unfreeze, metadata, a studio's
 * burn, minting) follow the role, never ownership alone. An admin has them over every collection; a
 * studio over the collections it owns, while it is a studio (a demotion, of the user or of a service
 * account's owner, removes them at once: the role is the caller's current one). A personal
 * collection (`user-…`) gives its owner none: it holds what its owner minted for itself, and once an
 * item has left the owner's wallet (sold, traded) the owner may do nothing to it.
 */
export function hasCollectionPowers(actor: Actor, collection: CollectionRef): boolean {
  if (actor.role === 'admin') return true;
  return (
    actor.role === 'studio' && actor.userId === collection.ownerId && !isPersonalCollection(collection.id)
  );
}

/** 403 unless `hasCollectionPowers`; `what` completes "may …" (e.g. "freeze its assets"). */
export function assertCollectionPowers(actor: Actor, collection: CollectionRef, what: string): void {
  if (hasCollectionPowers(actor, collection)) return;
  throw new ForbiddenError(
    isPersonalCollection(collection.id)
      ? `${collection.id} is a personal collection: only an admin may ${what}.`
      : `Only the studio owning the collection ${collection.id}, or an admin, may ${what}.`,
  );
}

/**
 * Minting into a collection: into one's own personal collection anyone may (it is where a player's
 * own NFTs go); into any other, `collection-studio`.
 */
export function assertMayMintInto(actor: Actor, collection: CollectionRef): void {
  if (isPersonalCollection(collection.id) && collection.ownerId === actor.userId) return;
  assertCollectionPowers(actor, collection, 'add assets to it');
}

/**
 * Minting a currency (`currency-creator`): its creator, or an admin. Which roles may mint at all is
 * the edge's part (the operation's `x-roles`); a recipe's currency outputs are checked against its
 * creator when the recipe is made, and its creator's current powers at each craft.
 */
export function mayMintCurrency(actor: Actor, creatorId: string): boolean {
  return actor.role === 'admin' || actor.userId === creatorId;
}

/**
 * A craft mints the recipe's outputs with the powers of the recipe's creator as they are at the
 * craft, not as they were when the recipe was made: `creator` with its current role (a demotion, of
 * the creator or of a service account's owner, counts at once) must still be allowed to mint into
 * the recipe's collection (`assertMayMintInto`). Else the craft is refused and nothing burns.
 */
export function assertRecipeMayMint(creator: Actor, collection: CollectionRef): void {
  try {
    assertMayMintInto(creator, collection);
  } catch (error) {
    if (!(error instanceof ForbiddenError)) throw error;
    throw new ForbiddenError(
      `The recipe's creator may no longer add assets to ${collection.id} (its role changed): the recipe cannot be crafted.`,
    );
  }
}

/**
 * A store offer or a loot box (issue 36) mints with the powers of its creator as they are at the
 * purchase or the opening, not as they were when it was made: `creator` with its current role must
 * still have `collection-studio` powers over its collection (it mints there). Else the purchase or
 * opening is refused and nothing moves. `what` names it ("offer", "loot box").
 */
export function assertCreatorMayGrant(creator: Actor, collection: CollectionRef, what: string): void {
  if (hasCollectionPowers(creator, collection)) return;
  throw new ForbiddenError(
    `The ${what}'s creator may no longer add assets to ${collection.id} (its role changed): nothing can be granted from it.`,
  );
}

/**
 * Unfreezing: `collection-studio`, and no lower than the role level of who froze it. A freeze by
 * the collection's studio is undone by that studio or an admin; a freeze by an admin (anyone else
 * than the collection's owner) only by an admin.
 */
export function assertMayUnfreeze(actor: Actor, collection: CollectionRef, frozenBy: string | null): void {
  assertCollectionPowers(actor, collection, 'unfreeze its assets');
  if (actor.role === 'admin' || frozenBy === null || frozenBy === collection.ownerId) return;
  throw new ForbiddenError(`An admin froze this asset of ${collection.id}: only an admin may unfreeze it.`);
}

/**
 * A burn under `holder_or_studio` by someone other than the holder: the collection's studio (with
 * the studio role) or an admin, from any holder's wallet. False: the burn is the holder's own.
 */
export function burnsAsStudio(actor: Actor, collection: CollectionRef, burnPolicy: string): boolean {
  return burnPolicy === 'holder_or_studio' && hasCollectionPowers(actor, collection);
}

/** `wallet-controller`: the user controls (a custodial or linked wallet of theirs) `wallet`, checked by the store. */
export function controlsWallet(userId: string, wallet: StoredAddress): Guard {
  return { kind: 'controls', userId, wallet };
}

/** A trade as the `trade-party` relation needs it (stored wallet addresses, as `Trade` rows hold them). */
export interface TradeRef {
  proposerUserId: string;
  proposerWallet: string;
  counterpartyWallet: string;
}

/**
 * `trade-party` and `trade-counterparty`: the actor proposed the trade or controls either of its
 * wallets (`controlled`: the wallets it controls); only whoever controls the counterparty wallet
 * is its counterparty (who may accept). A non-party is told the trade does not exist.
 */
export function tradeRelation(
  actor: Actor,
  trade: TradeRef,
  controlled: readonly string[],
): { party: boolean; counterparty: boolean } {
  const counterparty = controlled.includes(trade.counterpartyWallet);
  const proposer = trade.proposerUserId === actor.userId || controlled.includes(trade.proposerWallet);
  return { party: proposer || counterparty, counterparty };
}

/** `trade-party` as a query condition (a listing of the trades the actor is a party to), as `tradeRelation`. */
export function tradePartyFilter(actor: Actor, controlled: readonly string[]) {
  return {
    $or: [
      { proposerUserId: actor.userId },
      { proposerWallet: { $in: [...controlled] } },
      { counterpartyWallet: { $in: [...controlled] } },
    ],
  };
}

/**
 * `resource-owner` for a lookup by id (an API key, an application, a service account, a webhook):
 * the condition that finds the object only when `userId` owns it, `column` naming its owner. The
 * owner is the caller itself: a service account's objects are its own, not its owner's, and the
 * other way round. Another user's object is not found, so it answers 404 as if it did not exist.
 */
export function ownedBy<Column extends string = 'owner'>(
  userId: string,
  column: Column = 'owner' as Column,
): Record<Column, string> {
  return { [column]: userId } as Record<Column, string>;
}

/**
 * `resource-owner` for an object already read: `actor` is its owner (`ownerId`) or, where the
 * operation lets admins act on anyone's (`admins`: an issued credential's revocation), an admin.
 */
export function ownsResource(actor: Actor, ownerId: string, options: { admins?: boolean } = {}): boolean {
  return actor.userId === ownerId || (options.admins === true && actor.role === 'admin');
}

/**
 * Reading the audit trail (`GET /api/v1/audit-log`, issue 37): an admin reads every entry
 * (undefined: no filter); a studio the entries about objects its account owns (an entry's
 * `ownerId`: a collection's studio, a key's or webhook's or service account's owner), `members`
 * being its account's user ids (itself and its service accounts: src/db/account-members.ts). A
 * service account reads as its owner's account does, with its own role. Anyone else: 403.
 */
export function auditOwnersVisibleTo(
  actor: Actor,
  members: readonly string[],
): readonly string[] | undefined {
  if (actor.role === 'admin') return undefined;
  if (actor.role === 'studio') return members;
  throw new ForbiddenError('Only a studio or an admin may read the audit trail.');
}

/**
 * Whose entries `actor` (with its current role) may read, `account` being the account it belongs to
 * (itself, or a service account's owner): the one decision (`auditOwnersVisibleTo`, above) with the account's members, for `GET /api/v1/audit-log` and for
 * each delivery of an `auditRecorded` webhook (src/webhooks/audit-feed.ts) alike. Undefined: every
 * entry (an admin). Throws ForbiddenError for anyone else than a studio or an admin.
 */
export async function auditReadableOwners(
  em: EntityManager,
  actor: Actor,
  account: string,
): Promise<readonly string[] | undefined> {
  const members = actor.role === 'admin' ? [] : await accountMembers(em, account);
  return auditOwnersVisibleTo(actor, members);
}
