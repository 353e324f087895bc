import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setUserRole } from '../../../src/auth/accounts.ts';
import { grantableScopes } from '../../../src/auth/scopes.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { offlineDocumentLoader } from '../../../src/domain/identity/document-loader.ts';
import { createIdentityService, type IdentityService } from '../../../src/domain/identity/service.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  createUser,
  type LedgerFixture,
  openLedger,
  TEST_PUBLIC_URL,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';
import { check, failedChecks } from './checks.ts';
import { newTestKey, registerKey, signedPresentation, type TestKey } from './test-keys.ts';

const SECRET = 'identity-test-secret-0123456789abcdef';
const DAY = 24 * 3600 * 1000;

describe.each(DB_KINDS)('13.3: role and ownership credentials on %s', (kind) => {
  let fixture: LedgerFixture;
  let identity: IdentityService;
  let alice: TestUser;
  let bob: TestUser;
  let admin: TestUser;
  let holder: TestKey;
  let nftId: string;

  const serviceWith = (options: { maxValidityDays?: number } = {}) =>
    createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox(SECRET),
      publicUrl: TEST_PUBLIC_URL,
      ...options,
    });

  async function presentation(credential: Record<string, unknown>, challenge: string) {
    return signedPresentation(
      holder,
      { holder: holder.did, verifiableCredential: [credential] },
      { challenge, documentLoader: offlineDocumentLoader(async (did) => identity.resolveDid(did)) },
    );
  }

  beforeAll(async () => {
    fixture = await openLedger(kind);
    identity = await serviceWith();
    alice = await createUser(fixture);
    bob = await createUser(fixture);
    admin = await createUser(fixture, 'admin');
    holder = await newTestKey();
    await registerKey(identity, alice.userId, holder);
    const nft = await fixture.ledger.assets.createNft(alice, {
      name: 'Sword of Dawn',
      metadata: { image: 'https://cdn.example.com/sword.png', attributes: [], creator: 'Example Studio' },
    } as never);
    nftId = (nft.body as { id: string }).id;
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it("13.3: a role change revokes the user's role credentials, in both forms, and nothing else", async () => {
    const role = await identity.issueCredential(alice, {
      type: 'PlayerRoleCredential',
      subjectDid: holder.did,
    });
    const byAdmin = await identity.issueCredential(admin, {
      type: 'PlayerRoleCredential',
      subjectDid: holder.did,
    });
    const ownership = await identity.issueCredential(alice, {
      type: 'AssetOwnershipCredential',
      subjectDid: holder.did,
      wallet: alice.wallet,
      assetId: nftId,
    });
    const signed = await presentation(role.credential, 'c-1');
    const before = await identity.verify({
      presentation: signed,
      challenge: 'c-1',
      requiredPermissions: ['assets:write'],
    });
    expect(before.verified).toBe(true);

    await setUserRole(fixture.orm, alice.userId, 'studio');

    for (const issued of [role, byAdmin]) {
      for (const request of [{ jwt: issued.jwt as string }, { credential: issued.credential }]) {
        const result = await identity.verify(request);
        expect(failedChecks(result)).toEqual(['status']);
        expect(check(result, 'status')?.reason).toBe('revoked');
      }
    }
    const after = await identity.verify({
      presentation: signed,
      challenge: 'c-1',
      requiredPermissions: ['assets:write'],
    });
    expect(after.verified).toBe(false);
    expect(after.grantedPermissions).toEqual([]);
    expect((await identity.verify({ jwt: ownership.jwt as string })).verified).toBe(true);
    const listed = await identity.listCredentials(alice, { limit: 100 });
    const statusOf = (id: string) => listed.data.find((entry) => entry.id === id)?.status;
    expect([statusOf(role.id), statusOf(byAdmin.id), statusOf(ownership.id)]).toEqual([
      'revoked',
      'revoked',
      'active',
    ]);
    await setUserRole(fixture.orm, alice.userId, 'player');
  });

  it('13.3: validUntil is capped (default one year, configurable)', async () => {
    const request = { type: 'PlayerRoleCredential' as const, subjectDid: holder.did };
    await expect(
      identity.issueCredential(alice, { ...request, validUntil: '9999-12-31T23:59:59Z' }),
    ).rejects.toMatchObject({
      status: 422,
      type: '/problems/invalid-validity-period',
    });
    const issued = await identity.issueCredential(alice, request);
    const lifetime =
      Date.parse(issued.credential.validUntil as string) - Date.parse(issued.credential.validFrom as string);
    expect(lifetime).toBeLessThanOrEqual(365 * DAY);
    const short = await serviceWith({ maxValidityDays: 30 });
    await expect(
      short.issueCredential(alice, { ...request, validUntil: new Date(Date.now() + 31 * DAY).toISOString() }),
    ).rejects.toMatchObject({ status: 422 });
    const capped = await short.issueCredential(alice, request);
    expect(Date.parse(capped.credential.validUntil as string)).toBeLessThanOrEqual(Date.now() + 30 * DAY);
  });

  it('13.3: a credential on its own verifies but grants nothing; bound to the holder and challenge it grants', async () => {
    const role = await identity.issueCredential(alice, {
      type: 'PlayerRoleCredential',
      subjectDid: holder.did,
    });
    for (const request of [{ jwt: role.jwt as string }, { credential: role.credential }]) {
      const alone = await identity.verify(request);
      expect(alone).toMatchObject({ verified: true, grantedPermissions: [] });
      const asking = await identity.verify({ ...request, requiredPermissions: ['assets:read'] });
      expect(asking.grantedPermissions).toEqual([]);
      expect(check(asking, 'permissions')).toMatchObject({ passed: false, reason: 'bare-credential' });
    }
    const bound = await identity.verify({
      presentation: await presentation(role.credential, 'c-2'),
      challenge: 'c-2',
      requiredPermissions: ['assets:read'],
    });
    expect(bound.verified).toBe(true);
    expect(bound.grantedPermissions).toContain('assets:read');
    // Without the verifier's challenge, a presentation grants nothing either.
    const unchallenged = await identity.verify({
      presentation: await presentation(role.credential, 'c-2'),
      requiredPermissions: ['assets:read'],
    });
    expect(unchallenged.grantedPermissions).toEqual([]);
  });

  it('13.3: an ownership credential whose asset has moved fails still-owned', async () => {
    const nft = await fixture.ledger.assets.createNft(alice, {
      name: 'Shield of Dusk',
      metadata: { image: 'https://cdn.example.com/shield.png', attributes: [], creator: 'Example Studio' },
    } as never);
    const assetId = (nft.body as { id: string }).id;
    const issued = await identity.issueCredential(alice, {
      type: 'AssetOwnershipCredential',
      subjectDid: holder.did,
      wallet: alice.wallet,
      assetId,
    });
    for (const request of [{ jwt: issued.jwt as string }, { credential: issued.credential }]) {
      const result = await identity.verify(request);
      expect(result.verified).toBe(true);
      expect(check(result, 'still-owned')?.passed).toBe(true);
    }
    await fixture.ledger.transfers.create(alice, {
      assetId,
      from: alice.wallet,
      to: bob.wallet,
      amount: '1',
    } as never);
    for (const request of [{ jwt: issued.jwt as string }, { credential: issued.credential }]) {
      const result = await identity.verify(request);
      expect(failedChecks(result)).toEqual(['still-owned']);
      expect(check(result, 'still-owned')?.reason).toBe('ownership-moved');
    }
  });

  it("13.3: lists own credentials page by page; an admin lists anyone's; others may not", async () => {
    const bobDid = (await identity.createIdentity(bob.userId)).did;
    const ids: string[] = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        (
          await identity.issueCredential(bob, {
            type: 'PlayerRoleCredential',
            subjectDid: bobDid,
            formats: ['vc+jwt'],
          })
        ).id,
      );
    // An admin's credential about bob's DID is bob's too.
    ids.push(
      (
        await identity.issueCredential(admin, {
          type: 'PlayerRoleCredential',
          subjectDid: bobDid,
          formats: ['vc+jwt'],
        })
      ).id,
    );
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await identity.listCredentials(bob, { limit: 3, cursor });
      expect(page.data.length).toBeLessThanOrEqual(3);
      seen.push(...page.data.map((entry) => entry.id));
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    expect(seen.sort()).toEqual([...ids].sort());
    const byAdmin = await identity.listCredentials(admin, { user: bob.userId, limit: 100 });
    expect(byAdmin.data.map((entry) => entry.id).sort()).toEqual([...ids].sort());
    expect(byAdmin.data[0]).toMatchObject({
      type: 'PlayerRoleCredential',
      subjectDid: bobDid,
      status: 'active',
    });
    await expect(identity.listCredentials(alice, { user: bob.userId, limit: 10 })).rejects.toMatchObject({
      status: 403,
    });
    await expect(identity.listCredentials(bob, { limit: 10, cursor: 'bm9wZQ' })).rejects.toMatchObject({
      status: 400,
    });
  });
});
