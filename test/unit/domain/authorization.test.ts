// The relation functions of src/domain/authorization.ts, one per relation (issue 30's one table of who
// may do what): the services call these and nothing else decides a relation. The HTTP side of the same
// table is test/security/authorization-matrix.test.ts.
import { describe, expect, it } from 'vitest';
import {
  assertRecipeMayMint,
  effectiveServiceRole,
  hasCollectionPowers,
  mayMintCurrency,
  ownedBy,
  ownsResource,
  tradePartyFilter,
  tradeRelation,
} from '../../../src/domain/authorization.ts';

const studio = { userId: 'usr_S', role: 'studio' as const };
const admin = { userId: 'usr_A', role: 'admin' as const };
const player = { userId: 'usr_P', role: 'player' as const };
const realm = { id: 'realm', ownerId: 'usr_S' };

describe('authorization relations', () => {
  it('trade-party: the proposer or whoever controls a wallet; only the counterparty wallet makes a counterparty', () => {
    const trade = { proposerUserId: 'usr_P', proposerWallet: '0xaa', counterpartyWallet: '0xbb' };
    expect(tradeRelation(player, trade, [])).toEqual({ party: true, counterparty: false });
    expect(tradeRelation(studio, trade, ['0xaa'])).toEqual({ party: true, counterparty: false });
    expect(tradeRelation(studio, trade, ['0xbb'])).toEqual({ party: true, counterparty: true });
    expect(tradeRelation(admin, trade, ['0xcc'])).toEqual({ party: false, counterparty: false });
    expect(tradePartyFilter(player, ['0xaa'])).toEqual({
      $or: [
        { proposerUserId: 'usr_P' },
        { proposerWallet: { $in: ['0xaa'] } },
        { counterpartyWallet: { $in: ['0xaa'] } },
      ],
    });
  });

  it('resource-owner: the caller itself owns it (an admin only where the operation says so)', () => {
    expect(ownedBy('usr_P')).toEqual({ owner: 'usr_P' });
    expect(ownedBy('usr_P', 'user')).toEqual({ user: 'usr_P' });
    expect(ownsResource(player, 'usr_P')).toBe(true);
    expect(ownsResource(admin, 'usr_P')).toBe(false);
    expect(ownsResource(admin, 'usr_P', { admins: true })).toBe(true);
    expect(ownsResource(studio, 'usr_P', { admins: true })).toBe(false);
  });

  it('currency-creator: its creator or an admin mints it', () => {
    expect(mayMintCurrency(studio, 'usr_S')).toBe(true);
    expect(mayMintCurrency(admin, 'usr_S')).toBe(true);
    expect(mayMintCurrency(player, 'usr_S')).toBe(false);
  });

  it("30.2: a recipe mints with its creator's current powers: a demoted studio's (or a capped service account's) recipe is refused", () => {
    expect(() => assertRecipeMayMint(studio, realm)).not.toThrow();
    expect(() => assertRecipeMayMint({ ...studio, role: 'player' }, realm)).toThrow(
      /may no longer add assets/,
    );
    expect(() => assertRecipeMayMint(admin, realm)).not.toThrow();
    // A player's recipe in its own personal collection keeps minting there.
    expect(() => assertRecipeMayMint(player, { id: 'user-usr_P', ownerId: 'usr_P' })).not.toThrow();
    const machine = { userId: 'svc_M', role: effectiveServiceRole('admin', 'player') };
    expect(machine.role).toBe('player');
    expect(hasCollectionPowers(machine, realm)).toBe(false);
    expect(() => assertRecipeMayMint(machine, realm)).toThrow();
  });
});
