/** Where the contracts, the generated tree and the tools live, from the repository root. */
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..');

export const openApiRoot = join(repoRoot, 'contracts', 'openapi', 'openapi.yaml');
export const asyncApiRoot = join(repoRoot, 'contracts', 'asyncapi', 'asyncapi.yaml');
export const generatedDir = join(repoRoot, 'generated');
export const redoclyConfig = join(repoRoot, 'redocly.yaml');
export const redoclyCli = join(repoRoot, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
/**
 * Biome's native binary, from its Linux x64 package directly: the @biomejs/biome wrapper lists a
 * package per platform, and the registry reachable here lacks some of them, which `npm ci` rejects.
 */
export const biomeCli = join(repoRoot, 'node_modules', '@biomejs', 'cli-linux-x64', 'biome');
