// What a start of the service does without (docs/testing.md, "What keeps it fast"), with the same
// outcome: no scrypt derivation for the dummy hash nor the demo accounts, and the contract
// dereferenced in one pass instead of by json-schema-ref-parser.
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { dummyPasswordHash, hashPassword, verifyPassword } from '../../src/auth/passwords.ts';
import { dereferenceLocal } from '../../src/contract/dereference.ts';
import { loadOpenApiDocument } from '../../src/contract/operations.ts';
import { DEMO_ACCOUNTS } from '../../src/seed/demo.ts';

/** scrypt$N$r$p of a stored hash. */
const costOf = (stored: string) => stored.split('$').slice(0, 4).join('$');

describe('start-up without key derivations', () => {
  it("the demo accounts' hashes made ahead are their published passwords', at the current cost", async () => {
    const current = costOf(await hashPassword('any password at all'));
    for (const account of DEMO_ACCOUNTS) {
      expect(costOf(account.passwordHash), account.username).toBe(current);
      expect(await verifyPassword(account.password, account.passwordHash), account.username).toBe(true);
    }
  });

  it('the dummy hash unknown users are checked against costs what a real one does, and is one per process', async () => {
    expect(costOf(dummyPasswordHash())).toBe(costOf(await hashPassword('any password at all')));
    const [salt, hash] = dummyPasswordHash().split('$').slice(4);
    expect(Buffer.from(salt, 'base64url')).toHaveLength(16);
    expect(Buffer.from(hash, 'base64url')).toHaveLength(32);
    expect(dummyPasswordHash()).toBe(dummyPasswordHash());
  });
});

describe('the contract dereferenced in one pass', () => {
  it("equals json-schema-ref-parser's dereference (openapi-backend's) of the bundle", async () => {
    // json-schema-ref-parser as openapi-backend depends on it (the version its init used).
    const fromBackend = createRequire(createRequire(import.meta.url).resolve('openapi-backend'));
    const refParser = fromBackend('@apidevtools/json-schema-ref-parser') as {
      dereference(document: object): Promise<object>;
    };
    const document = loadOpenApiDocument();
    const expected = await refParser.dereference(structuredClone(document));
    expect(dereferenceLocal(structuredClone(document))).toEqual(expected);
  });

  it('keeps the keywords beside a $ref and shares plain targets', () => {
    const document = {
      a: { $ref: '#/defs/x', description: 'beside' },
      b: { $ref: '#/defs/x' },
      c: { $ref: '#/defs/y' },
      defs: { x: { type: 'string', description: 'inside' }, y: { items: { $ref: '#/defs/x' } } },
    };
    const result = dereferenceLocal(document) as Record<string, any>;
    expect(result.a).toEqual({ type: 'string', description: 'beside' });
    expect(result.b).toBe(result.defs.x);
    expect(result.c.items).toBe(result.defs.x);
  });

  it('refuses a cycle, a remote reference and a dangling one', () => {
    expect(() => dereferenceLocal({ a: { $ref: '#/b' }, b: { c: { $ref: '#/b' } } })).toThrow(/circular/);
    expect(() => dereferenceLocal({ a: { $ref: 'other.json#/b' } })).toThrow(/not local/);
    expect(() => dereferenceLocal({ a: { $ref: '#/nothing' } })).toThrow(/points to nothing/);
  });
});
