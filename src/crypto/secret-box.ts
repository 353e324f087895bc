// Encryption at rest for private keys (custodial wallets, service-held DID keys, token signing keys):
// AES-256-GCM with a key derived by HKDF from SECRET_KEY. On the embedded default without SECRET_KEY,
// a random secret is generated once into the data directory (mode 0600) so restarts can decrypt.

import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config/index.ts';
import { ensurePrivateDir, restrictToOwner } from './private-files.ts';

const VERSION = 'v1';

export interface SecretBox {
  /** Encrypts `plaintext`; `context` binds the ciphertext to its purpose (e.g. "wallet:0xabc..."). */
  seal(plaintext: string, context: string): string;
  /** Decrypts what `seal` produced for the same context; throws when tampered or mismatched. */
  open(sealed: string, context: string): string;
}

export function createSecretBox(secret: string): SecretBox {
  const key = Buffer.from(hkdfSync('sha256', secret, 'game-asset-tracking', 'secret-box v1', 32));
  return {
    seal(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(context));
      const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [
        VERSION,
        iv.toString('base64url'),
        body.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
      ].join('.');
    },
    open(sealed, context) {
      const [version, iv, body, tag] = sealed.split('.');
      if (version !== VERSION || !iv || !body || !tag) throw new Error('unsupported sealed value');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    },
  };
}

/**
 * The configured SECRET_KEY, or (embedded default only) one generated and kept in `dataDir`.
 * A deployment on PostgreSQL must configure SECRET_KEY so every instance shares it.
 */
export function resolveSecret(configured: string | undefined, dataDir: string, embedded: boolean): string {
  if (configured) return configured;
  if (!embedded)
    throw new ConfigError(
      'SECRET_KEY must be set when DATABASE_URL is set (every instance needs the same key)',
    );
  const file = path.join(dataDir, 'secret.key');
  try {
    const secret = readFileSync(file, 'utf8').trim();
    restrictToOwner(file);
    return secret;
  } catch {
    ensurePrivateDir(dataDir);
    const secret = randomBytes(32).toString('base64url');
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    return secret;
  }
}
