// The operations of the bundled OpenAPI document, in the shape the fuzzer needs: where each
// parameter goes, what the body is, and which credentials the operation asks for.
import { MIDDLEWARE_OPERATIONS } from '../../../src/auth/index.ts';
import { openapiDocument } from '../../../test/helpers/contract.ts';

export type Json = Record<string, unknown>;
export type Schema = Json | boolean;

export const document: Json = openapiDocument;

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
export function resolve(node: unknown): unknown {
  let current = node;
  while (current && typeof current === 'object' && typeof (current as Json).$ref === 'string') {
    let target: unknown = document;
    for (const token of ((current as Json).$ref as string).slice(2).split('/')) {
      target = (target as Json)[token.replaceAll('~1', '/').replaceAll('~0', '~')];
    }
    current = target;
  }
  return current;
}

/** The component name a `$ref` points at (`#/components/schemas/AssetId` -> `AssetId`). */
export function refName(node: unknown): string | undefined {
  const ref = node && typeof node === 'object' ? (node as Json).$ref : undefined;
  return typeof ref === 'string' ? ref.split('/').pop() : undefined;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];

function readParameter(raw: unknown): Parameter {
  const parameter = resolve(raw) as Json;
  const name = parameter.name as string;
  return {
    name,
    in: parameter.in as Parameter['in'],
    required: parameter.required === true,
    schema: parameter.schema as Schema,
    style: parameter.style as string | undefined,
    explode: parameter.explode as boolean | undefined,
    poolKey: refName(parameter.schema) ?? `param:${name}`,
  };
}

export function operations(): Operation[] {
  const result: Operation[] = [];
  const rootSecurity = (document.security as Json[] | undefined) ?? [];
  for (const [template, rawItem] of Object.entries(document.paths as Json)) {
    const item = rawItem as Json;
    for (const method of METHODS) {
      const operation = item[method] as Json | undefined;
      if (!operation) continue;
      const operationId = operation.operationId as string;
      const parameters = [
        ...((item.parameters as unknown[]) ?? []),
        ...((operation.parameters as unknown[]) ?? []),
      ].map(readParameter);
      const requestBody = resolve(operation.requestBody) as Json | undefined;
      const [mediaType, media] = Object.entries((requestBody?.content as Json) ?? {})[0] ?? [];
      const security = (operation.security as Json[] | undefined) ?? rootSecurity;
      const requirement = (security[0] ?? {}) as Json;
      result.push({
        operationId,
        method: method.toUpperCase(),
        template,
        parameters,
        body: mediaType
          ? { mediaType, schema: (media as Json).schema as Schema, required: requestBody?.required === true }
          : undefined,
        credentials:
          security.length === 0 || !('oauth2' in requirement)
            ? 'none'
            : 'apiKey' in requirement
              ? 'bearer+key'
              : 'bearer',
        oauth: OAUTH_OPERATIONS.has(operationId),
      });
    }
  }
  return result;
}

/** Methods declared on the path of `template` (to send an undeclared one now and then). */
export function declaredMethods(template: string): string[] {
  const item = (document.paths as Json)[template] as Json;
  return METHODS.filter((method) => method in item).map((method) => method.toUpperCase());
}
