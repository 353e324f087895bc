// Password hashing with scrypt (memory-hard, in node:crypto). The stored form is self-describing,
// `scrypt$N$r$p$salt$hash` (salt and hash base64url), so parameters can be raised later and old
// hashes still verify.
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * N=2^15, r=8, p=1: 32 MiB and roughly 50-120 ms per hash depending on the machine. That is the
 * floor for interactive logins; raising it only needs a new constant (stored hashes keep theirs).
 */
const PARAMS = { N: 2 ** 15, r: 8, p: 1 } as const;
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Room for N=2^15,r=8 (32 MiB) and up to 4x stronger stored parameters. */
const MAX_MEMORY = 256 * 1024 * 1024;

export const PASSWORD_MIN_LENGTH = 12;
export const PASSWORD_MAX_LENGTH = 128;

function derive(
  password: string,
  salt: Buffer,
  N: number,
  r: number,
  p: number,
  length: number,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, length, { N, r, p, maxmem: MAX_MEMORY }, (error, key) =>
      error ? reject(error) : resolve(key),
    );
  });
}

/** The scrypt cost of a hash; a stored hash carries its own, which verifyPassword reads. */
interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/**
 * How a new password is hashed for storage: `hashPassword`, at the service's cost. An app built in
 * the same process (the tests' apps: `BuildOptions.passwordHasher` in src/app.ts) may be given
 * another; nothing read from the environment can change it.
 */
export type PasswordHasher = (password: string) => Promise<string>;

/** Hashes with the current parameters (a different `params` only for hashes made outside the service, e.g. test fixtures). */
export async function hashPassword(password: string, params: ScryptParams = PARAMS): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await derive(password, salt, params.N, params.r, params.p, HASH_BYTES);
  return [
    'scrypt',
    params.N,
    params.r,
    params.p,
    salt.toString('base64url'),
    hash.toString('base64url'),
  ].join('$');
}

/** Constant-time comparison; a malformed stored value never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, saltText, hashText] = stored.split('$');
  const N = Number(n);
  const R = Number(r);
  const P = Number(p);
  if (scheme !== 'scrypt' || !saltText || !hashText || ![N, R, P].every(Number.isSafeInteger)) return false;
  const expected = Buffer.from(hashText, 'base64url');
  if (expected.length < 16) return false;
  const actual = await derive(password, Buffer.from(saltText, 'base64url'), N, R, P, expected.length);
  return timingSafeEqual(actual, expected);
}

/**
 * Made once per process: unknown users are checked against it so they cost the same time as known
 * ones (a verification derives a key with the stored parameters and salt whatever the stored hash
 * is). Random bytes stand for the hash: no password matches them, and making it costs no key
 * derivation (an scrypt at every start of the service and of every in-process test app).
 */
let dummyHash: string | undefined;
export function dummyPasswordHash(): string {
  dummyHash ??= [
    'scrypt',
    PARAMS.N,
    PARAMS.r,
    PARAMS.p,
    randomBytes(SALT_BYTES).toString('base64url'),
    randomBytes(HASH_BYTES).toString('base64url'),
  ].join('$');
  return dummyHash;
}

/** The registration policy; returns what is wrong, or null. Lengths count Unicode code points. */
export function passwordPolicyViolation(password: string, username: string): string | null {
  const length = [...password].length;
  if (length < PASSWORD_MIN_LENGTH || length > PASSWORD_MAX_LENGTH) {
    return `must be ${PASSWORD_MIN_LENGTH} to ${PASSWORD_MAX_LENGTH} characters long`;
  }
  if (password.trim().toLowerCase() === username.trim().toLowerCase()) return 'must not be the username';
  return null;
}
