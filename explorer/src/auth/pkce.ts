// PKCE (RFC 7636, S256) and the random values of the authorization request. viem's SHA-256 is
// used instead of crypto.subtle, which browsers only offer on https or localhost origins.
import { sha256 } from 'viem';

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** 32 random bytes, base64url: 43 characters. */
export function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(32)));
}

/** BASE64URL(SHA-256(ASCII(verifier))), the `S256` code challenge. */
export function codeChallenge(verifier: string): string {
  return base64url(sha256(new TextEncoder().encode(verifier), 'bytes'));
}
