// Handlers take their request and answer types from the contract (src/http/handler.ts): a type
// assertion in one would silence exactly the check that makes a wrong field name fail typecheck.
// This keeps src/http/handlers/ free of them (`as const` aside), found by the TypeScript parser
// rather than by a text search, so comments and strings do not count.
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');
const handlersDir = join(root, 'src', 'http', 'handlers');

function assertionsIn(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    const asserted =
      (ts.isAsExpression(node) || ts.isTypeAssertionExpression(node)) &&
      !(ts.isTypeReferenceNode(node.type) && node.type.getText(source) === 'const');
    if (asserted || ts.isNonNullExpression(node)) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      found.push(`${relative(root, file)}:${line + 1}: ${node.getText(source)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('handlers', () => {
  it('assert no types: request and answer types come from the contract', () => {
    const files = readdirSync(handlersDir)
      .filter((name) => name.endsWith('.ts'))
      .map((name) => join(handlersDir, name));
    expect(files.length).toBeGreaterThan(5);
    expect(files.flatMap(assertionsIn)).toEqual([]);
  });

  it('finds an assertion when there is one (the check can fail)', () => {
    const probe = join(root, 'src', 'http', 'handler.ts');
    expect(assertionsIn(probe).some((found) => found.includes('as unknown as HandlerMap'))).toBe(true);
  });
});
