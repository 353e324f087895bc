// Client frames, checked against the AsyncAPI contract (generated/asyncapi/asyncapi.json): the
// payload schemas are found by their titles, so the gateway accepts exactly what the contract says.
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ASYNCAPI_PATH } from '../contract/operations.ts';
import type { EventType } from '../db/entities/OutboxEvent.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export type Channel = '/ws' | '/assets/subscribe';

export type ClientMessage =
  | {
      type: 'subscribe';
      requestId?: string;
      events?: EventType[];
      walletId?: string;
      assetId?: string;
      collection?: string;
      lastEventId?: string;
    }
  | { type: 'unsubscribe'; requestId?: string; subscriptionId: string }
  | { type: 'ping'; requestId?: string };

export type ErrorCode =
  | 'invalid_message'
  | 'unknown_type'
  | 'invalid_filter'
  | 'too_many_subscriptions'
  | 'unknown_subscription'
  | 'message_too_large'
  | 'rate_limited'
  | 'unavailable';

export class ProtocolError extends Error {
  readonly code: ErrorCode;
  readonly requestId: string | null;
  /** Fields the error message carries besides the usual four (`retryAfterMs`, `subscriptionId`). */
  readonly extra: Record<string, unknown>;
  constructor(
    code: ErrorCode,
    message: string,
    requestId: string | null = null,
    extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.code = code;
    this.requestId = requestId;
    this.extra = extra;
  }
}

type Json = Record<string, unknown>;

/** JSON pointer of the first schema object titled `title` in the document. */
function findTitled(node: unknown, title: string, path: string[] = []): string | null {
  if (!node || typeof node !== 'object') return null;
  if (!Array.isArray(node) && (node as Json).title === title && 'type' in (node as Json)) {
    return `#/${path.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
  }
  for (const [key, value] of Object.entries(node)) {
    const found = findTitled(value, title, [...path, key]);
    if (found) return found;
  }
  return null;
}

const FILTER_FIELDS = new Set(['events', 'walletId', 'assetId', 'collection', 'lastEventId']);

const CHANNEL_MESSAGES: Record<Channel, Record<string, string>> = {
  '/ws': { subscribe: 'SubscribeMessage', unsubscribe: 'UnsubscribeMessage', ping: 'PingMessage' },
  '/assets/subscribe': { subscribe: 'AssetSubscribeMessage', ping: 'PingMessage' },
};

/** Compiles validators for schemas of the bundled AsyncAPI document, found by their titles. */
export function asyncApiValidators(titles: Iterable<string>): Map<string, ValidateFunction> {
  const document = JSON.parse(readFileSync(ASYNCAPI_PATH, 'utf8')) as Json;
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateSchema: false }));
  ajv.addSchema(document, 'asyncapi');
  const validators = new Map<string, ValidateFunction>();
  for (const title of titles) {
    const pointer = findTitled(document, title);
    if (!pointer) throw new Error(`AsyncAPI document has no schema titled ${title}`);
    validators.set(title, ajv.compile({ $ref: `asyncapi${pointer}` }));
  }
  return validators;
}

export class MessageParser {
  private readonly validators = asyncApiValidators(
    new Set([...Object.values(CHANNEL_MESSAGES).flatMap((types) => Object.values(types)), 'RequestId']),
  );

  /** Parses one text frame; throws ProtocolError naming what is wrong. */
  parse(channel: Channel, text: string): ClientMessage {
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      throw new ProtocolError('invalid_message', 'The frame is not valid JSON.');
    }
    if (!message || typeof message !== 'object' || Array.isArray(message)) {
      throw new ProtocolError('invalid_message', 'A message is a JSON object with a "type".');
    }
    const record = message as Json;
    // Echoed only when valid: an answer must not carry a requestId the contract forbids.
    const requestId = (this.validators.get('RequestId') as ValidateFunction)(record.requestId)
      ? (record.requestId as string)
      : null;
    if (typeof record.type !== 'string')
      throw new ProtocolError('invalid_message', 'The message has no "type".', requestId);
    const title = CHANNEL_MESSAGES[channel][record.type];
    if (!title) {
      throw new ProtocolError(
        'unknown_type',
        `Unknown message type "${record.type}" on ${channel}; expected ${Object.keys(CHANNEL_MESSAGES[channel]).join(', ')}.`,
        requestId,
      );
    }
    const validate = this.validators.get(title) as ValidateFunction;
    if (!validate(record)) {
      const errors = validate.errors ?? [];
      const code = errors.every((error) => FILTER_FIELDS.has(fieldOf(error)))
        ? 'invalid_filter'
        : 'invalid_message';
      throw new ProtocolError(code, describe(errors), requestId);
    }
    return record as ClientMessage;
  }
}

function fieldOf(error: ErrorObject): string {
  if (error.keyword === 'required') return String(error.params.missingProperty);
  if (error.keyword === 'additionalProperties') return `+${String(error.params.additionalProperty)}`;
  return error.instancePath.split('/')[1] ?? '';
}

function describe(errors: ErrorObject[]): string {
  const parts = errors
    .filter((error) => !['oneOf', 'anyOf', 'if'].includes(error.keyword))
    .map((error) => {
      if (error.keyword === 'required') return `"${String(error.params.missingProperty)}" is required`;
      if (error.keyword === 'additionalProperties')
        return `"${String(error.params.additionalProperty)}" is not allowed`;
      return `${error.instancePath.slice(1) || 'message'} ${error.message ?? 'is invalid'}`;
    });
  return [...new Set(parts)].join('; ') || 'The message does not match the contract.';
}
