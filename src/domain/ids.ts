// Stable string ids: a type prefix and a ULID (48-bit millisecond time + 80 random bits, Crockford
// base32), so ids sort by creation time and never reveal a counter.
import { randomBytes } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function ulid(now = Date.now()): string {
  let time = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = CROCKFORD[t % 32] + time;
    t = Math.floor(t / 32);
  }
  const random = randomBytes(16);
  let tail = '';
  for (let i = 0; i < 16; i++) tail += CROCKFORD[random[i] % 32];
  return time + tail;
}

export type IdPrefix =
  | 'usr'
  | 'key'
  | 'nft'
  | 'tr'
  | 'sub'
  | 'op'
  | 'trd'
  | 'rcp'
  | 'trf'
  | 'lst'
  | 'ofr'
  | 'sof'
  | 'dtb'
  | 'lbx'
  | 'dsd'
  | 'auc'
  | 'lot';

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${ulid()}`;
}
