// Checks of a request's content that the contract's schemas cannot express, and the mapping of
// Ajv's errors to the problem's `errors` (JSON pointers into the request).
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { FieldError } from '../domain/errors.ts';

export interface AjvErrorLike {
  instancePath: string;
  message?: string;
  keyword: string;
  params: Record<string, unknown>;
}

export function toFieldErrors(errors: AjvErrorLike[]): FieldError[] {
  const seen = new Set<string>();
  const result: FieldError[] = [];
  for (const error of errors) {
    // oneOf/anyOf/if wrappers repeat what their branches already said.
    if (['oneOf', 'anyOf', 'if'].includes(error.keyword) && errors.length > 1) continue;
    let pointer = error.instancePath || '/';
    if (error.keyword === 'required')
      pointer = `${error.instancePath}/${String(error.params.missingProperty)}`;
    if (error.keyword === 'additionalProperties')
      pointer = `${error.instancePath}/${String(error.params.additionalProperty)}`;
    pointer = pointer.replace(/^\/requestBody/, '/body');
    let detail = error.message ?? 'is invalid';
    if (error.keyword === 'additionalProperties') detail = 'is not an allowed property';
    if (error.keyword === 'required') detail = 'is required';
    const key = `${pointer} ${detail}`;
    if (seen.has(key)) continue;
    seen.add(key);
    result.push({ pointer, detail });
  }
  return result;
}

/**
 * RFC 3339 date-times JavaScript cannot hold are refused by the format itself (13.9): a leap second
 * (`23:59:60`) passes ajv-formats' check but is an Invalid Date, which handlers then failed on with a
 * 500. One check here covers every date-time of every operation.
 */
export function storableDateTimes(ajv: Ajv2020): Ajv2020 {
  const rfc3339 = ajv.formats['date-time'] as { validate: (value: string) => boolean } | undefined;
  if (!rfc3339?.validate) throw new Error('ajv-formats did not register date-time');
  ajv.addFormat('date-time', {
    type: 'string',
    validate: (value: string) => rfc3339.validate(value) && !Number.isNaN(Date.parse(value)),
  });
  return ajv;
}

/** Why a string cannot be stored, for the problem's `errors`. */
function unstorable(value: string): string | undefined {
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (!value.isWellFormed()) return 'must not contain a lone UTF-16 surrogate (U+D800 to U+DFFF)';
  return undefined;
}

/**
 * The first string (value or key) no database can hold, as a field error. PostgreSQL text cannot
 * store U+0000 and SQLite ends a statement at it; a lone surrogate is not Unicode text: PostgreSQL
 * refuses it (a 500 before 13.9) and SQLite stored it, to be sent on as invalid JSON in events. So no
 * field accepts either (the contract's 400 says so).
 */
export function findUnstorableString(body: unknown, root: string): FieldError | undefined {
  // Iterative: a body may nest deeper than the call stack (free-form JSON-LD is allowed).
  const pending: [unknown, string][] = [[body, root]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, pointer] = next;
    if (typeof value === 'string') {
      const detail = unstorable(value);
      if (detail) return { pointer, detail };
    } else if (value && typeof value === 'object') {
      for (const [key, item] of Object.entries(value)) {
        const at = `${pointer}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}`;
        const detail = unstorable(key);
        if (detail) return { pointer: at, detail };
        pending.push([item, at]);
      }
    }
  }
  return undefined;
}
