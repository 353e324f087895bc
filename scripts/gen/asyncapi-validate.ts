/** Parses an AsyncAPI document with the official parser; any error-level diagnostic fails. */
import { Parser } from '@asyncapi/parser';

export async function assertValidAsyncApi(doc: Record<string, unknown>, what: string): Promise<void> {
  const { document, diagnostics } = await new Parser().parse(JSON.stringify(doc));
  // Spectral's DiagnosticSeverity: 0 = error, 1 = warning.
  const errors = diagnostics.filter((d) => d.severity === 0);
  if (document === undefined || errors.length > 0) {
    const lines = errors.map((d) => `  ${d.code}: ${d.message} at ${d.path.join('.') || '(root)'}`);
    throw new Error(`${what} is not valid AsyncAPI:\n${lines.join('\n')}`);
  }
}
