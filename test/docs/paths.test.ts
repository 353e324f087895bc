// Every repository path a Markdown document names in backticks, and every file it links to, exists,
// so a reader who follows one finds it: `src/...`, `test/...`, `docs/...`, a root file such as `package.json`, and, as SECURITY.md
// and docs/testing.md write them, test files relative to test/ (`security/ssrf.test.ts`).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');
// The committed Markdown files: CI runs the suite in an export of HEAD without .git, so the tree is
// walked, skipping what .gitignore keeps out and the released contracts and generated documents.
const skipped = new Set(['node_modules', 'data', 'coverage', 'backups', 'test-results', 'generated', 'dist']);
function markdownIn(dir: string): string[] {
  return readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const file = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory())
      return entry.name.startsWith('.') || skipped.has(entry.name) || file === 'contracts/released'
        ? []
        : markdownIn(file);
    return entry.name.endsWith('.md') ? [file] : [];
  });
}
const markdownFiles = markdownIn('');

const topLevel = new Set(
  readdirSync(root).filter((name) => name !== 'node_modules' && !name.startsWith('.git')),
);
const testDirs = new Set(readdirSync(path.join(root, 'test')));

/** The path a backticked text names in the repository, or null when it is not one. */
function repositoryPath(text: string): string | null {
  // `src/app.ts:42`, `docs/testing.md#crash-test`, `scripts/bench/` (a folder).
  const candidate = text.replace(/#.*$/, '').replace(/:\d+(-\d+)?$/, '');
  if (!/^[\w.@-][\w.@/-]*$/.test(candidate)) return null; // commands, globs, placeholders, URLs
  const first = candidate.split('/')[0];
  if (candidate.includes('/') && topLevel.has(first)) return candidate;
  if (!candidate.includes('/') && topLevel.has(candidate) && /\.\w+$/.test(candidate)) return candidate;
  if (candidate.includes('/') && testDirs.has(first) && /\.test\.ts$/.test(candidate))
    return `test/${candidate}`;
  return null;
}

/** Each line of a document outside code fences, with its line number. */
function proseLines(file: string): { line: number; text: string }[] {
  let fenced = false;
  return readFileSync(path.join(root, file), 'utf8')
    .split('\n')
    .flatMap((text, i) => {
      if (/^\s*```/.test(text)) fenced = !fenced;
      return fenced ? [] : [{ line: i + 1, text }];
    });
}

function namedPaths(file: string): { line: number; path: string }[] {
  return proseLines(file).flatMap(({ line, text }) =>
    [...text.matchAll(/`([^`\s]+)`/g)].flatMap((match) => {
      const named = repositoryPath(match[1]);
      return named ? [{ line, path: named }] : [];
    }),
  );
}

/** The relative link targets of a document (`[text](guides/economy.md#anchor)`), outside code. */
function linkedFiles(file: string): { line: number; path: string }[] {
  return proseLines(file).flatMap(({ line, text }) =>
    [...text.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)].flatMap((match) => {
      const target = match[1].replace(/#.*$/, '');
      // An anchor on the page, a URL.
      if (target === '' || /^[a-z]+:/i.test(target)) return [];
      return [{ line, path: path.join(path.dirname(file), target) }];
    }),
  );
}

describe('paths named in the Markdown documents', () => {
  it('finds the documents and paths in them (the check below is not vacuous)', () => {
    expect(markdownFiles).toContain('README.md');
    expect(markdownFiles).toContain('docs/README.md');
    expect(namedPaths('docs/guides/on-chain-assets.md').length).toBeGreaterThan(5);
    expect(linkedFiles('README.md').length).toBeGreaterThan(20);
  });

  it.each(markdownFiles)('%s names only paths that exist', (file) => {
    const missing = namedPaths(file)
      .filter((named) => !existsSync(path.join(root, named.path)))
      .map((named) => `${file}:${named.line} ${named.path}`);
    expect(missing).toEqual([]);
  });

  it.each(markdownFiles)('%s links only to files that exist', (file) => {
    const missing = linkedFiles(file)
      .filter((linked) => !existsSync(path.join(root, linked.path)))
      .map((linked) => `${file}:${linked.line} ${linked.path}`);
    expect(missing).toEqual([]);
  });
});
