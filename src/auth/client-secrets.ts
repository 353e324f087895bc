// Secrets the service generates and shows once (API keys, client secrets): 256 random bits, stored
// only as a SHA-256 digest. A fast hash is right here, unlike for passwords: a 256-bit random secret
// cannot be guessed or brute-forced offline whatever the hash speed, so a slow KDF would only make
// every authenticated request slower without adding any protection.
import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

export function generateSecret(): string {
  return randomBytes(32).toString('base64url');
}

export function digestSecret(secret: string): string {
  return hash('sha256', secret, 'hex');
}

export function secretMatchesDigest(secret: string, digest: string): boolean {
  const actual = Buffer.from(digestSecret(secret), 'hex');
  const expected = Buffer.from(digest, 'hex');
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
