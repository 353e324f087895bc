// Client frames, checked against the AsyncAPI contract (generated/asyncapi/asyncapi.json): the
// payload schemas are found by their titles, so the gateway accepts exactly what the contract says.
// Messages both ways are the AsyncAPI-generated models (generated/asyncapi/models).
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type {
  AssetSubscriptionsClientMessage,
  AssetSubscriptionsServerMessage,
  ErrorCode,
  ErrorMessage,
  EventsClientMessage,
  EventsServerMessage,
} from '../../generated/asyncapi/models/index.ts';
import { ASYNCAPI_PATH } from '../contract/operations.ts';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export type Channel = '/ws' | '/assets/subscribe';

/** A message a client sends, on either channel. */
export type ClientMessage = EventsClientMessage | AssetSubscriptionsClientMessage;

/** A message the service sends, on either channel. */
export type ServerMessage = EventsServerMessage | AssetSubscriptionsServerMessage;

export type { ErrorCode };

/** Fields an `error` message carries besides the usual four. */
export type ErrorExtra = Pick<ErrorMessage, 'retryAfterMs' | 'subscriptionId'>;

export class ProtocolError extends Error {
  readonly code: ErrorCode;
  readonly requestId: string | null;
  /** Fields the error message carries besides the usual four (`retryAfterMs`, `subscriptionId`). */
  readonly extra: ErrorExtra;
  constructor(code: ErrorCode, message: string, requestId: string | null = null, extra: ErrorExtra = {}) {
    super(message);
    this.code = code;
    this.requestId = requestId;
    this.extra = extra;
  }
}

type Json = Record<string, unknown>;

/** Per title, the JSON pointer of the first schema object (in document order) with that title: one walk. */
function titledSchemas(document: unknown): Map<string, string> {
  const pointers = new Map<string, string>();
  const path: string[] = [];
  const visit = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    const title = (node as Json).title;
    if (!Array.isArray(node) && typeof title === 'string' && 'type' in node && !pointers.has(title))
      pointers.set(title, `#/${path.map((part) => part.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`);
    for (const [key, value] of Object.entries(node)) {
      path.push(key);
      visit(value);
      path.pop();
    }
  };
  visit(document);
  return pointers;
}

const FILTER_FIELDS = new Set(['events', 'walletId', 'assetId', 'collection', 'lastEventId']);

/** The schema title of each message type a client may send on each channel. */
const CHANNEL_MESSAGES: Record<Channel, Partial<Record<ClientMessage['type'], string>>> = {
  '/ws': { subscribe: 'SubscribeMessage', unsubscribe: 'UnsubscribeMessage', ping: 'PingMessage' },
  '/assets/subscribe': { subscribe: 'AssetSubscribeMessage', ping: 'PingMessage' },
};

/** Compiles validators for schemas of the bundled AsyncAPI document, found by their titles. */
export function asyncApiValidators<T = unknown>(titles: Iterable<string>): Map<string, ValidateFunction<T>> {
  const document = JSON.parse(readFileSync(ASYNCAPI_PATH, 'utf8')) as Json;
  const ajv = addFormats(new Ajv2020({ allErrors: true, strict: false, validateSchema: false }));
  ajv.addSchema(document, 'asyncapi');
  const validators = new Map<string, ValidateFunction<T>>();
  const pointers = titledSchemas(document);
  for (const title of titles) {
    const pointer = pointers.get(title);
    if (!pointer) throw new Error(`AsyncAPI document has no schema titled ${title}`);
    validators.set(title, ajv.compile<T>({ $ref: `asyncapi${pointer}` }));
  }
  return validators;
}

/** Whether `type` names a message a client may send on `channel`. */
function isClientType(channel: Channel, type: string): type is ClientMessage['type'] {
  return Object.hasOwn(CHANNEL_MESSAGES[channel], type);
}

interface ClientValidators {
  messages: Map<string, ValidateFunction<ClientMessage>>;
  requestId: ValidateFunction<string> | undefined;
}
/** Compiled once per process (~80 ms): pure functions of the bundled document, shared by its apps. */
let clientValidators: ClientValidators | undefined;
function compiledClientValidators(): ClientValidators {
  if (!clientValidators) {
    const messages = new Set(Object.values(CHANNEL_MESSAGES).flatMap((types) => Object.values(types)));
    // One read of the document and one Ajv for both.
    const validators = asyncApiValidators([...messages, 'RequestId']);
    clientValidators = {
      messages: new Map([...messages].map((title) => [title, validators.get(title)])) as Map<
        string,
        ValidateFunction<ClientMessage>
      >,
      requestId: validators.get('RequestId') as ValidateFunction<string>,
    };
  }
  return clientValidators;
}

export class MessageParser {
  /**
   * The validators of the client messages, each declared to check the generated model of its
   * title: with the contract test of those models (test/contract/event-models.test.ts), the one
   * place an unchecked frame becomes a typed message.
   */
  private readonly messages = compiledClientValidators().messages;
  private readonly requestId = compiledClientValidators().requestId;

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
    // Echoed only when valid: an answer must not carry a requestId the contract forbids.
    const sent = 'requestId' in message ? message.requestId : undefined;
    const requestId = this.requestId?.(sent) ? sent : null;
    const type = 'type' in message ? message.type : undefined;
    if (typeof type !== 'string')
      throw new ProtocolError('invalid_message', 'The message has no "type".', requestId);
    const validate = isClientType(channel, type)
      ? this.messages.get(CHANNEL_MESSAGES[channel][type] ?? '')
      : undefined;
    if (!validate) {
      throw new ProtocolError(
        'unknown_type',
        `Unknown message type "${type}" on ${channel}; expected ${Object.keys(CHANNEL_MESSAGES[channel]).join(', ')}.`,
        requestId,
      );
    }
    if (!validate(message)) {
      const errors = validate.errors ?? [];
      const code = errors.every((error) => FILTER_FIELDS.has(fieldOf(error)))
        ? 'invalid_filter'
        : 'invalid_message';
      throw new ProtocolError(code, describe(errors), requestId);
    }
    return message;
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
