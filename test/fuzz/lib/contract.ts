// The operations of the bundled OpenAPI document, in the shape the fuzzer needs: where each
// parameter goes, what the body is, and which credentials the operation asks for. Read from the
// service's operation index (src/contract/operations.ts), the same one the router and the
// authenticator use.
import { MIDDLEWARE_OPERATIONS } from '../../../src/auth/index.ts';
import { bundledOperations, type ContractParameter } from '../../../src/contract/operations.ts';

export type Json = Record<string, unknown>;
export type Schema = Json | boolean;

const index = bundledOperations();

export const document: Json = index.document;

/**
 * Served by oidc-provider (or its interaction pages): they speak OAuth errors and HTML, not the
 * API's problem documents, so the fuzzer sends them input but only requires that they never 5xx.
 */
export const OAUTH_OPERATIONS: ReadonlySet<string> = new Set(MIDDLEWARE_OPERATIONS);

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
  style?: string;
  explode?: boolean;
  /** The component schema or parameter it came from, e.g. `AssetId`, `param:transfer_id`. */
  poolKey: string;
}

export interface Operation {
  operationId: string;
  method: string;
  template: string;
  parameters: Parameter[];
  body?: { mediaType: string; schema: Schema; required: boolean };
  /** 'none': public; 'bearer': a token; 'bearer+key': a token and an X-API-Key. */
  credentials: 'none' | 'bearer' | 'bearer+key';
  oauth: boolean;
}

/** Follows `$ref`s (local only: the bundle has no others). */
export const resolve = index.resolve;

/** The component name a `$ref` points at (`#/components/schemas/AssetId` -> `AssetId`). */
export function refName(node: unknown): string | undefined {
  const ref = node && typeof node === 'object' ? (node as Json).$ref : undefined;
  return typeof ref === 'string' ? ref.split('/').pop() : undefined;
}

const FUZZED_METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

function fuzzParameter(parameter: ContractParameter): Parameter {
  return {
    name: parameter.name,
    in: parameter.in as Parameter['in'],
    required: parameter.required === true,
    schema: parameter.schema as Schema,
    style: parameter.style,
    explode: parameter.explode,
    poolKey: refName(parameter.schema) ?? `param:${parameter.name}`,
  };
}

export function operations(): Operation[] {
  return index.operations
    .filter((operation) => FUZZED_METHODS.has(operation.method))
    .map((operation) => {
      const [mediaType, media] = Object.entries(operation.body?.content ?? {})[0] ?? [];
      const { guard } = operation;
      return {
        operationId: operation.operationId,
        method: operation.method.toUpperCase(),
        template: operation.path,
        parameters: operation.parameters.map(fuzzParameter),
        body: mediaType
          ? { mediaType, schema: media.schema as Schema, required: operation.body?.required === true }
          : undefined,
        credentials: !guard.bearer ? 'none' : guard.apiKey ? 'bearer+key' : 'bearer',
        oauth: OAUTH_OPERATIONS.has(operation.operationId),
      };
    });
}

/** Methods declared on the path of `template` (to send an undeclared one now and then). */
export function declaredMethods(template: string): string[] {
  return index
    .methodsOf(template)
    .filter((method) => FUZZED_METHODS.has(method))
    .map((method) => method.toUpperCase());
}
