// Display helpers shared by the views.
import type { Schemas } from '../api/client.ts';

export function shortAddress(address: string): string {
  return `${address.slice(0, 6)}…${address.slice(-4)}`;
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

export function formatTime(timestamp: string): string {
  return dateTime.format(new Date(timestamp));
}

/** An `ipfs://` image cannot be loaded by a browser as is: go through a public gateway. */
export function imageUrl(image: string): string {
  return image.startsWith('ipfs://') ? `https://ipfs.io/ipfs/${image.slice('ipfs://'.length)}` : image;
}

export const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** An attribute typed as text: a numeric-looking value becomes a number, `true`/`false` a boolean. */
export function attributeValue(raw: string): Schemas['AssetAttribute']['value'] {
  if (/^-?\d+(\.\d+)?$/.test(raw)) return Number(raw);
  if (raw === 'true' || raw === 'false') return raw === 'true';
  return raw;
}

/** Lines of `trait: value` (or `trait=value`) as attributes. */
export function parseAttributes(text: string): Schemas['AssetAttribute'][] {
  return text
    .split('\n')
    .map((line) => line.split(/[:=]/))
    .filter((parts) => parts.length >= 2 && parts[0].trim())
    .map(([trait, ...rest]) => ({ trait_type: trait.trim(), value: attributeValue(rest.join(':').trim()) }));
}
