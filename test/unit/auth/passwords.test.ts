// scrypt password hashes: self-describing, salted, verified in constant time, policy enforced.
import { describe, expect, it } from 'vitest';
import { hashPassword, passwordPolicyViolation, verifyPassword } from '../../../src/auth/passwords.ts';

describe('password hashing', () => {
  it('stores scrypt$N$r$p$salt$hash with N=2^15, r=8, p=1 and a 16-byte salt', async () => {
    const stored = await hashPassword('correct horse battery staple');
    const [scheme, n, r, p, salt, hash] = stored.split('$');
    expect([scheme, n, r, p]).toEqual(['scrypt', '32768', '8', '1']);
    expect(Buffer.from(salt, 'base64url')).toHaveLength(16);
    expect(Buffer.from(hash, 'base64url')).toHaveLength(32);
  });

  it('verifies the right password only, and salts every hash differently', async () => {
    const a = await hashPassword('correct horse battery staple');
    const b = await hashPassword('correct horse battery staple');
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse battery staple', a)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', a)).toBe(false);
  });

  it('never matches a malformed stored value', async () => {
    for (const stored of [
      '',
      'scrypt$',
      'bcrypt$1$2$3$abc$def',
      'scrypt$x$8$1$c2FsdA$aGFzaA',
      'scrypt$32768$8$1$c2FsdA$c2hvcnQ',
    ]) {
      expect(await verifyPassword('anything at all', stored)).toBe(false);
    }
  });

  it('checks the registration policy: 12 to 128 characters, not the username', () => {
    expect(passwordPolicyViolation('short', 'alice')).toMatch(/12 to 128/);
    expect(passwordPolicyViolation('x'.repeat(129), 'alice')).toMatch(/12 to 128/);
    expect(passwordPolicyViolation('alice_the_great', 'Alice_The_Great')).toMatch(/username/);
    expect(passwordPolicyViolation('correct horse battery staple', 'alice')).toBeNull();
    // Lengths count characters, not UTF-16 units or bytes.
    expect(passwordPolicyViolation('🐉'.repeat(12), 'alice')).toBeNull();
  });
});
