// Finding 13.8: registering a caller-held public key as a DID needs proof of possession (a signed
// challenge); otherwise anyone could register someone else's key and its owner would get 409.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { grantableScopes } from '../../../src/auth/scopes.ts';
import { createSecretBox } from '../../../src/crypto/secret-box.ts';
import { Identity } from '../../../src/db/entities/index.ts';
import { createIdentityService, type IdentityService } from '../../../src/domain/identity/service.ts';
import { DB_KINDS } from '../../helpers/db.ts';
import {
  createUser,
  type LedgerFixture,
  openLedger,
  TEST_PUBLIC_URL,
  type TestUser,
} from '../../helpers/ledger-fixtures.ts';
import { newTestKey, registerKey } from './test-keys.ts';

const SECRET = 'identity-test-secret-0123456789abcdef';

describe.each(DB_KINDS)('13.8: proof of key possession on %s', (kind) => {
  let fixture: LedgerFixture;
  let identity: IdentityService;
  let alice: TestUser;
  let mallory: TestUser;

  const serviceAt = (now: () => Date) =>
    createIdentityService({
      orm: fixture.orm,
      permissionsOfRole: grantableScopes,
      secretBox: createSecretBox(SECRET),
      publicUrl: TEST_PUBLIC_URL,
      now,
    });
  const stored = async (did: string) => fixture.orm.em.fork().count(Identity, { did });

  beforeAll(async () => {
    fixture = await openLedger(kind);
    identity = await serviceAt(() => new Date());
    alice = await createUser(fixture);
    mallory = await createUser(fixture);
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('13.8: a public key without a signed challenge is refused and nothing is stored', async () => {
    const key = await newTestKey();
    await expect(identity.createIdentity(mallory.userId, key.publicKeyMultibase)).rejects.toMatchObject({
      status: 400,
      type: '/problems/validation-failed',
    });
    expect(await stored(key.did)).toBe(0);
  });

  it("13.8: another user cannot register someone else's key, and its owner still can", async () => {
    const victim = await newTestKey();
    const impostor = await newTestKey();
    // Mallory asks for a challenge for the victim's key but can only sign with another key.
    const { challenge } = identity.createKeyChallenge(mallory.userId, victim.publicKeyMultibase);
    await expect(
      identity.createIdentity(mallory.userId, victim.publicKeyMultibase, {
        challenge,
        signature: impostor.signText(challenge),
      }),
    ).rejects.toMatchObject({ status: 403, type: '/problems/key-possession-not-proven' });
    // A proof the owner made for herself is no use to Mallory either.
    const own = identity.createKeyChallenge(alice.userId, victim.publicKeyMultibase);
    await expect(
      identity.createIdentity(mallory.userId, victim.publicKeyMultibase, {
        challenge: own.challenge,
        signature: victim.signText(own.challenge),
      }),
    ).rejects.toMatchObject({ status: 403, type: '/problems/key-possession-not-proven' });
    expect(await stored(victim.did)).toBe(0);
    expect(await registerKey(identity, alice.userId, victim)).toMatchObject({
      did: victim.did,
      keyCustody: 'caller',
    });
  });

  it('13.8: an expired, tampered or other-key challenge is refused', async () => {
    const key = await newTestKey();
    const other = await newTestKey();
    const past = await serviceAt(() => new Date(Date.now() - 11 * 60 * 1000));
    const expired = past.createKeyChallenge(alice.userId, key.publicKeyMultibase).challenge;
    const forOther = identity.createKeyChallenge(alice.userId, other.publicKeyMultibase).challenge;
    const fresh = identity.createKeyChallenge(alice.userId, key.publicKeyMultibase).challenge;
    // One character of the sealed body changed (`v1.<iv>.<body>.<tag>`, src/crypto/secret-box.ts). Not
    // the tag's last characters: the last one carries 2 bits of the tag, so 'AA' in place of 'Ax'
    // (x from A to P) was the same tag, 1 run in 256.
    const [version, iv, body, tag] = fresh.split('.');
    const tampered = [version, iv, `${body[0] === 'A' ? 'B' : 'A'}${body.slice(1)}`, tag].join('.');
    for (const challenge of [expired, forOther, tampered]) {
      await expect(
        identity.createIdentity(alice.userId, key.publicKeyMultibase, {
          challenge,
          signature: key.signText(challenge),
        }),
      ).rejects.toMatchObject({ status: 403, type: '/problems/key-possession-not-proven' });
    }
    expect(await stored(key.did)).toBe(0);
  });
});
