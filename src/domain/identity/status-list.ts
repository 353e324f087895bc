// W3C Bitstring Status List v1.0 for revocation: every issued credential takes the next bit of a
// 131,072-bit list (the specification's minimum, so an index says little about its holder); revoking
// sets the bit. The list is published as a credential whose `encodedList` is the GZIP-compressed
// bitstring, multibase base64url; bit 0 is the most significant bit of the first byte.
import { gzipSync } from 'node:zlib';
import type { EntityManager } from '@mikro-orm/sql';
import { StatusList } from '../../db/entities/index.ts';
import { forUpdate } from '../../db/transactions.ts';
import { ulid } from '../ids.ts';
import { VC_V2_CONTEXT } from './data-model.ts';
import { multibaseBase64url } from './multibase.ts';

export const STATUS_LIST_BITS = 131_072;
export const STATUS_PURPOSE = 'revocation';
const STATUS_LISTS_PATH = '/identity/status-lists/';

export function statusListUrl(publicUrl: string, listId: string): string {
  return `${publicUrl}${STATUS_LISTS_PATH}${listId}`;
}

/** The list id of one of this service's status list URLs, or null for anyone else's. */
export function ownStatusListId(publicUrl: string, url: string): string | null {
  const prefix = `${publicUrl}${STATUS_LISTS_PATH}`;
  if (!url.startsWith(prefix)) return null;
  const id = url.slice(prefix.length);
  return /^sl_[0-9A-HJKMNP-TV-Z]{26}$/.test(id) ? id : null;
}

export function isBitSet(bits: Uint8Array, index: number): boolean {
  return (bits[index >> 3] & (0x80 >> (index & 7))) !== 0;
}

function decodeBits(list: StatusList): Uint8Array {
  return new Uint8Array(Buffer.from(list.bits, 'base64'));
}

export function isRevoked(list: StatusList, index: number): boolean {
  return index >= 0 && index < STATUS_LIST_BITS && isBitSet(decodeBits(list), index);
}

/** `u` + base64url of the GZIP-compressed bitstring, as the specification's encodedList. */
export function encodeStatusList(list: StatusList): string {
  return multibaseBase64url(gzipSync(decodeBits(list)));
}

/** Takes the next free bit of an open list (opening a new list when all are full). Run inside a transaction. */
export async function allocateStatusIndex(
  em: EntityManager,
  now: Date,
): Promise<{ list: StatusList; index: number }> {
  let list = await em.findOne(
    StatusList,
    { purpose: STATUS_PURPOSE, nextIndex: { $lt: STATUS_LIST_BITS } },
    { orderBy: { id: 'asc' }, ...forUpdate(em) },
  );
  if (!list) {
    list = em.create(StatusList, {
      id: `sl_${ulid()}`,
      purpose: STATUS_PURPOSE,
      bits: Buffer.alloc(STATUS_LIST_BITS / 8).toString('base64'),
      nextIndex: 0,
      updatedAt: now,
    });
  }
  const index = list.nextIndex;
  list.nextIndex = index + 1;
  return { list, index };
}

/** Sets the bit of `index` in the list. Run inside a transaction. */
export async function setStatusBit(
  em: EntityManager,
  listId: string,
  index: number,
  now: Date,
): Promise<void> {
  const list = await em.findOneOrFail(StatusList, { id: listId }, forUpdate(em));
  const bits = decodeBits(list);
  bits[index >> 3] |= 0x80 >> (index & 7);
  list.bits = Buffer.from(bits).toString('base64');
  list.updatedAt = now;
}

/** The unsigned BitstringStatusListCredential of a list. */
export function statusListCredential(
  list: StatusList,
  issuerDid: string,
  publicUrl: string,
): Record<string, unknown> {
  const url = statusListUrl(publicUrl, list.id);
  return {
    '@context': [VC_V2_CONTEXT],
    id: url,
    type: ['VerifiableCredential', 'BitstringStatusListCredential'],
    issuer: issuerDid,
    validFrom: list.updatedAt.toISOString(),
    credentialSubject: {
      id: `${url}#list`,
      type: 'BitstringStatusList',
      statusPurpose: list.purpose,
      encodedList: encodeStatusList(list),
    },
  };
}
