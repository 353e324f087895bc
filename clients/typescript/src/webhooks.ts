// Receiving webhooks: the Standard Webhooks signature check (https://www.standardwebhooks.com/) and
// the payload as the contract's event types. The HMAC is the `standardwebhooks` library's (pure
// JavaScript: it runs in browsers, workers and Node); what is added here is what it fixes or leaves
// out: several secrets at once (during a rotation the receiver may hold the old and the new one,
// and the service signs with both for 24 h, so the header holds two signatures), a tolerance of the
// caller's choosing, and the payload typed.
import { Webhook } from 'standardwebhooks';
import type { webhooks } from '../../../generated/openapi/types.ts';

/** The payload of a webhook request: an event envelope, by its `type`. */
export type WebhookEvent = {
  [K in keyof webhooks]: NonNullable<webhooks[K]['post']>['requestBody']['content']['application/json'];
}[keyof webhooks];

export interface VerifiedWebhook {
  /** `webhook-id`: the same on every attempt of the delivery; deduplicate on it. */
  deliveryId: string;
  /** `webhook-timestamp`: when this attempt was signed. */
  signedAt: Date;
  event: WebhookEvent;
}

export interface VerifyWebhookOptions {
  /** How far `webhook-timestamp` may be from now, either way (default 300 s, the specification's). */
  toleranceSeconds?: number;
  /** The clock, in milliseconds (default Date.now). */
  now?: () => number;
}

export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

const EVENT_TYPES = [
  'newNFT',
  'newTransfer',
  'priceUpdate',
  'assetUpdated',
  'chainTransferPending',
  'chainTransferRemoved',
  'listingCreated',
  'listingEnded',
  'sale',
  'offerCreated',
  'offerEnded',
  'storePurchase',
  'lootBoxOpened',
  'auctionCreated',
  'auctionBid',
  'auctionEnded',
  'itemExpired',
  // Webhooks only (issue 37): a new audit trail entry, `data` as GET /api/v1/audit-log answers it.
  'auditRecorded',
] as const satisfies readonly (keyof webhooks)[];
type Unlisted = Exclude<keyof webhooks, (typeof EVENT_TYPES)[number]>;
const everyWebhookListed: [Unlisted] extends [never] ? true : Unlisted = true;
void everyWebhookListed;
const eventTypes: ReadonlySet<string> = new Set(EVENT_TYPES);

type HeaderSource = Headers | Record<string, string | string[] | undefined>;

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}

/** Compares without stopping at the first difference (the time taken tells nothing of where they differ). */
function sameText(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    difference |= (a.charCodeAt(i) | 0) ^ (b.charCodeAt(i) | 0);
  }
  return difference === 0;
}

/**
 * Checks a webhook request: `payload` is the raw body, exactly as received (not re-serialized
 * JSON); `secrets` the subscription's secret (`whsec_…`), or several during a rotation. Throws
 * WebhookVerificationError unless one `v1` signature of `webhook-signature` is that of one of the
 * secrets and `webhook-timestamp` is within the tolerance.
 */
export function verifyWebhook(
  payload: string | Uint8Array,
  headers: HeaderSource,
  secrets: string | readonly string[],
  options: VerifyWebhookOptions = {},
): VerifiedWebhook {
  const body = typeof payload === 'string' ? payload : new TextDecoder().decode(payload);
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures) throw new WebhookVerificationError('Missing required headers');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('Invalid webhook-timestamp');
  const signedAt = new Date(Number(timestamp) * 1000);
  const tolerance = (options.toleranceSeconds ?? 300) * 1000;
  const skew = (options.now ?? Date.now)() - signedAt.getTime();
  if (skew > tolerance) throw new WebhookVerificationError('Message timestamp too old');
  if (skew < -tolerance) throw new WebhookVerificationError('Message timestamp too new');

  const offered = signatures
    .split(' ')
    .map((entry) => entry.split(','))
    .filter(([version, signature]) => version === 'v1' && signature)
    .map(([, signature]) => signature);
  const keys = typeof secrets === 'string' ? [secrets] : secrets;
  if (keys.length === 0) throw new WebhookVerificationError('No secret to verify with');
  const matches = keys.some((secret) => {
    const expected = new Webhook(secret).sign(id, signedAt, body).slice('v1,'.length);
    // Every offered signature is compared, matched or not.
    return offered.map((signature) => sameText(signature, expected)).includes(true);
  });
  if (!matches) throw new WebhookVerificationError('No matching signature found');

  let event: unknown;
  try {
    event = JSON.parse(body);
  } catch {
    throw new WebhookVerificationError('The payload is not JSON');
  }
  if (!isWebhookEvent(event)) throw new WebhookVerificationError('The payload is not an event envelope');
  return { deliveryId: id, signedAt, event };
}

/**
 * Whether a parsed body has the envelope's shape (`id`, a known `type`, `occurredAt`, `data`;
 * `auditRecorded` has no `id`: its entry's `seq` is in `data`).
 */
export function isWebhookEvent(value: unknown): value is WebhookEvent {
  if (!value || typeof value !== 'object') return false;
  const { id, type, occurredAt, data } = value as Record<string, unknown>;
  return (
    typeof type === 'string' &&
    (typeof id === 'string' || (type === 'auditRecorded' && id === undefined)) &&
    eventTypes.has(type) &&
    typeof occurredAt === 'string' &&
    typeof data === 'object' &&
    data !== null
  );
}
