/**
 * Child process of docs.ts: `node asyncapi-html.ts <asyncapi.json> <out dir>`. Runs apart because
 * @asyncapi/generator needs NODE_PATH set before it is loaded.
 */
import { createRequire } from 'node:module';

interface AsyncApiGenerator {
  generateFromFile(path: string): Promise<void>;
}
type GeneratorClass = new (template: string, targetDir: string, options: object) => AsyncApiGenerator;

const [input, outDir] = process.argv.slice(2);
if (input === undefined || outDir === undefined) {
  console.error('usage: node scripts/gen/asyncapi-html.ts <asyncapi.json> <out dir>');
  process.exit(2);
}
const Generator = createRequire(import.meta.url)('@asyncapi/generator') as GeneratorClass;
const generator = new Generator('@asyncapi/html-template', outDir, {
  forceWrite: true,
  // The template's shipped transpiled sources point at its publisher's build paths (they only work
  // once a local transpile has overwritten them), so transpile on every run: slower, but works on a
  // fresh `npm ci`.
  compile: true,
  // One file with scripts and styles inlined: the page works offline and from any path.
  templateParams: { singleFile: 'true', outFilename: 'index.html' },
});
await generator.generateFromFile(input);
