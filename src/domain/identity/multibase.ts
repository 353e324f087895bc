// Multibase encodings used by DIDs and credentials: base58-btc (`z`, keys and signatures) and
// base64url without padding (`u`, the Bitstring Status List's encodedList).

const BASE58_ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const BASE58_INDEX = new Map([...BASE58_ALPHABET].map((char, index) => [char, index]));

export function base58btcEncode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  // Repeated division of the big-endian number by 58, digits collected least significant first.
  const digits: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i];
    for (let j = 0; j < digits.length; j++) {
      carry += digits[j] << 8;
      digits[j] = carry % 58;
      carry = Math.floor(carry / 58);
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = Math.floor(carry / 58);
    }
  }
  let out = '1'.repeat(zeros);
  for (let i = digits.length - 1; i >= 0; i--) out += BASE58_ALPHABET[digits[i]];
  return out;
}

/** Decodes base58-btc; throws on a character outside the alphabet. */
export function base58btcDecode(text: string): Uint8Array {
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  const bytes: number[] = [];
  for (let i = zeros; i < text.length; i++) {
    let carry = BASE58_INDEX.get(text[i]);
    if (carry === undefined) throw new Error(`invalid base58 character "${text[i]}"`);
    for (let j = 0; j < bytes.length; j++) {
      carry += bytes[j] * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + bytes.length);
  for (let i = 0; i < bytes.length; i++) out[out.length - 1 - i] = bytes[i];
  return out;
}

/** `z` + base58-btc. */
export function multibaseBase58btc(bytes: Uint8Array): string {
  return `z${base58btcEncode(bytes)}`;
}

/** Decodes a `z` (base58-btc) or `u` (base64url) multibase string. */
export function decodeMultibase(text: string): Uint8Array {
  if (text.startsWith('z')) return base58btcDecode(text.slice(1));
  if (text.startsWith('u') && /^u[A-Za-z0-9_-]*$/.test(text))
    return new Uint8Array(Buffer.from(text.slice(1), 'base64url'));
  throw new Error('unsupported multibase encoding (expected "z" base58-btc or "u" base64url)');
}

/** `u` + base64url without padding. */
export function multibaseBase64url(bytes: Uint8Array): string {
  return `u${Buffer.from(bytes).toString('base64url')}`;
}
