// The holdings listings' thread (src/domain/ledger/reads/sqlite/worker.ts) must start quickly: the first
// listing answered from the database waits for it. Its modules once pulled in MikroORM and viem's whole
// index (~0.9 s to load on a slow machine; the bystander of the 13.2 storm test waited up to 2 s).
// This loads the thread's module graph in a fresh process and lists every module resolved.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const worker = fileURLToPath(new URL('../../../src/domain/ledger/reads/sqlite/worker.ts', import.meta.url));

/** Every module URL resolved while `entry` is loaded (it throws outside a worker thread: after loading). */
function modulesLoadedBy(entry: string): string[] {
  const script = `
    import { registerHooks } from 'node:module';
    const seen = [];
    registerHooks({ resolve(specifier, context, next) { const found = next(specifier, context); seen.push(found.url); return found; } });
    try { await import(${JSON.stringify(entry)}); } catch {}
    process.stdout.write(JSON.stringify(seen));
  `;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  return JSON.parse(output) as string[];
}

describe("the holdings listings' thread", () => {
  it("loads better-sqlite3 (the ORM's driver, not the ORM) and its own modules, without viem's whole index", () => {
    const modules = modulesLoadedBy(worker);
    expect(modules.some((url) => url.endsWith('/src/domain/ledger/reads/holdings.ts'))).toBe(true);
    expect(modules.some((url) => url.includes('/node_modules/better-sqlite3/'))).toBe(true);
    expect(modules).not.toContain('node:sqlite');
    expect(modules.filter((url) => url.includes('/node_modules/@mikro-orm/'))).toEqual([]);
    expect(modules.filter((url) => /\/node_modules\/viem\/_esm\/index\.js$/.test(url))).toEqual([]);
  });
});
