/** Where the contracts, the generated tree and the tools live, from the repository root. */
import { join, resolve } from 'node:path';

export const repoRoot = resolve(import.meta.dirname, '..', '..');

export const openApiRoot = join(repoRoot, 'contracts', 'openapi', 'openapi.yaml');
export const asyncApiRoot = join(repoRoot, 'contracts', 'asyncapi', 'asyncapi.yaml');
export const generatedDir = join(repoRoot, 'generated');
export const redoclyConfig = join(repoRoot, 'redocly.yaml');
export const redoclyCli = join(repoRoot, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
export const biomeCli = join(repoRoot, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
