/**
 * The breaking-change gate, run by `npm run lint`: the bundled contracts in generated/ against the
 * released ones in contracts/released/ (scripts/contracts/lib/compatibility.ts, docs/versioning.md).
 * Exit code 1 on a breaking change the version does not allow, or a missing release.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generatedDir } from '../gen/paths.ts';
import { checkCompatibility } from './lib/compatibility.ts';

const read = async (kind: string) =>
  JSON.parse(await readFile(join(generatedDir, kind, `${kind}.json`), 'utf8')) as Record<string, unknown>;

const { ok, report } = await checkCompatibility({
  openapi: await read('openapi'),
  asyncapi: await read('asyncapi'),
});
console.log(report.join('\n'));
process.exitCode = ok ? 0 : 1;
