// Multibase and Bitstring Status List encodings, pinned to the specifications' conventions.
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import {
  base58btcDecode,
  base58btcEncode,
  decodeMultibase,
  multibaseBase64url,
} from '../../../src/domain/identity/multibase.ts';
import { didWebFromPublicUrl } from '../../../src/domain/identity/service-issuer.ts';
import {
  encodeStatusList,
  isBitSet,
  ownStatusListId,
  STATUS_LIST_BITS,
} from '../../../src/domain/identity/status-list.ts';
import { readConformanceJson } from './conformance.ts';

describe('base58-btc', () => {
  it('round-trips, keeping leading zero bytes as "1"s', () => {
    for (const bytes of [
      [],
      [0],
      [0, 0, 1],
      [255, 254, 0, 7],
      Array.from({ length: 34 }, (_, i) => (i * 37) % 256),
    ]) {
      const encoded = base58btcEncode(Uint8Array.from(bytes));
      expect([...base58btcDecode(encoded)]).toEqual(bytes);
    }
    expect(base58btcEncode(Uint8Array.from([0, 0, 1]))).toBe('112');
  });

  it('decodes the published key pair of the Data Integrity vectors', () => {
    const { publicKeyMultibase } = readConformanceJson('vc/vc-di-eddsa-TestVectors/keyPair.json');
    const bytes = decodeMultibase(publicKeyMultibase);
    expect([bytes[0], bytes[1], bytes.length]).toEqual([0xed, 0x01, 34]);
  });

  it('refuses characters outside the alphabet and unknown multibase prefixes', () => {
    expect(() => base58btcDecode('0OIl')).toThrow();
    expect(() => decodeMultibase('fdeadbeef')).toThrow(/unsupported multibase/);
  });
});

describe('Bitstring Status List', () => {
  it('encodes GZIP + base64url with the first index in the most significant bit', () => {
    const bits = Buffer.alloc(STATUS_LIST_BITS / 8);
    bits[0] = 0b1000_0001; // indexes 0 and 7
    const encoded = encodeStatusList({ bits: bits.toString('base64') } as never);
    expect(encoded.startsWith('u')).toBe(true);
    const decoded = gunzipSync(decodeMultibase(encoded));
    expect(decoded.length * 8).toBe(131_072);
    expect([0, 1, 6, 7, 8].map((index) => isBitSet(decoded, index))).toEqual([
      true,
      false,
      false,
      true,
      false,
    ]);
    expect(multibaseBase64url(Uint8Array.from([0xfb, 0xff]))).toBe('u-_8');
  });

  it("recognizes only this service's own list URLs", () => {
    const base = 'http://localhost:3000';
    expect(ownStatusListId(base, `${base}/identity/status-lists/sl_01JD3ZA0B1C2D3E4F5G6H7J8K9`)).toBe(
      'sl_01JD3ZA0B1C2D3E4F5G6H7J8K9',
    );
    expect(
      ownStatusListId(base, 'https://evil.example/identity/status-lists/sl_01JD3ZA0B1C2D3E4F5G6H7J8K9'),
    ).toBeNull();
    expect(
      ownStatusListId(base, `${base}/identity/status-lists/sl_01JD3ZA0B1C2D3E4F5G6H7J8K9/../x`),
    ).toBeNull();
  });
});

describe('did:web of the service', () => {
  it('percent-encodes the port and ignores a path', () => {
    expect(didWebFromPublicUrl('http://localhost:3000')).toBe('did:web:localhost%3A3000');
    expect(didWebFromPublicUrl('https://games.example.com/api')).toBe('did:web:games.example.com');
  });
});
