// Recomputes a loot box draw in the browser (issue 36), as `npm run verify-draw` does
// (scripts/lib/verify-draw.ts): the published algorithm gats-draw-v1
// (docs/architecture/stores-and-rewards.md, src/domain/ledger/draw-algorithm.ts) with WebCrypto's
// SHA-256 and HMAC-SHA256, from the API's answers alone: the revealed server seed, the player's
// value, the nonce, the tables and the box. Nothing here trusts the draw's own values.
// Types straight from the generated contract (not ../api/client.ts): this module runs in Node too, in
// test/unit/explorer/draw-check.test.ts, checked against the draw vectors.
import type { components } from '../../../generated/openapi/types.ts';

type Schemas = components['schemas'];

type Draw = Schemas['Draw'];
type DrawSeed = Schemas['DrawSeed'];
type DropTable = Schemas['DropTable'];
type LootBox = Schemas['LootBox'];

const ALGORITHM = 'gats-draw-v1';

/** WebCrypto's key (written so that both the DOM's and Node's type declarations read it). */
type HmacKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

/** The browser can recompute (WebCrypto exists only in secure contexts: https or localhost). */
export function canCheckInBrowser(): boolean {
  return typeof crypto !== 'undefined' && crypto.subtle !== undefined;
}

function hex(bytes: ArrayBuffer): string {
  return Array.from(new Uint8Array(bytes), (byte) => byte.toString(16).padStart(2, '0')).join('');
}

function fromHex(value: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(value.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(value.slice(i * 2, i * 2 + 2), 16);
  return bytes;
}

const encoder = new TextEncoder();

async function sha256(data: Uint8Array<ArrayBuffer>): Promise<string> {
  return hex(await crypto.subtle.digest('SHA-256', data));
}

/** RFC 8785 (JCS) for what a table holds: objects with sorted keys, arrays, strings, integers, null. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** The first value below `total` of the HMAC blocks of the roll's messages, and the attempts. */
async function uniformRoll(
  key: HmacKey,
  parts: (string | number)[],
  total: bigint,
): Promise<{ value: bigint; attempts: number }> {
  const mask = (1n << BigInt(bitLength(total - 1n))) - 1n;
  for (let attempt = 0; attempt < 1000; attempt++) {
    const message = encoder.encode([ALGORITHM, ...parts, attempt].join('\n'));
    const block = new DataView(await crypto.subtle.sign('HMAC', key, message));
    const candidate = block.getBigUint64(0, false) & mask;
    if (candidate < total) return { value: candidate, attempts: attempt + 1 };
  }
  throw new Error('No value below the total in 1000 attempts.');
}

export interface DrawCheck {
  /** Every mismatch found (empty: the draw is verified). */
  problems: string[];
  /** What was recomputed, in words, step by step. */
  steps: string[];
}

/** Recomputes the draw; `table(id)` reads a drop table from the API. */
export async function checkDraw(
  draw: Draw,
  seed: DrawSeed,
  box: LootBox,
  table: (id: string) => Promise<DropTable>,
): Promise<DrawCheck> {
  const problems: string[] = [];
  const steps: string[] = [];
  if (!seed.serverSeed) return { problems: ['The server seed is not revealed yet.'], steps };
  const commitment = await sha256(fromHex(seed.serverSeed));
  if (commitment !== draw.commitment || seed.commitment !== draw.commitment)
    problems.push('The revealed seed does not hash to the commitment the draw was made under.');
  else steps.push('SHA-256 of the revealed server seed is the commitment published before the draw.');
  if (seed.wallet.toLowerCase() !== draw.wallet.toLowerCase()) problems.push('The seed is not the wallet’s.');
  const key = await crypto.subtle.importKey(
    'raw',
    fromHex(seed.serverSeed),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  let expectedTable: string | null = box.table;
  let outcome: unknown;
  for (const [roll, published] of draw.rolls.entries()) {
    if (published.tableId !== expectedTable) {
      problems.push(`Roll ${roll} is in ${published.tableId}; the outcome before names ${expectedTable}.`);
      break;
    }
    const read = await table(published.tableId);
    const entries = read.entries.map((entry) => ({ weight: entry.weight, outcome: entry.outcome }));
    const hash = await sha256(encoder.encode(canonicalJson(entries)));
    if (hash !== published.tableHash || hash !== read.hash)
      problems.push(`Roll ${roll}: the table’s entries do not hash to the published hash.`);
    const weights = entries.map((entry) => BigInt(entry.weight));
    const total = weights.reduce((a, b) => a + b, 0n);
    if (String(total) !== published.total)
      problems.push(`Roll ${roll}: total weight ${total}, published ${published.total}.`);
    const { value, attempts } = await uniformRoll(
      key,
      [draw.clientSeed, draw.nonce, roll, published.tableId, hash],
      total,
    );
    if (String(value) !== published.value || attempts !== published.attempts)
      problems.push(
        `Roll ${roll}: recomputed ${value} (${attempts} attempts), published ${published.value}.`,
      );
    let entry = -1;
    let sum = 0n;
    for (const [i, weight] of weights.entries()) {
      sum += weight;
      if (value < sum) {
        entry = i;
        break;
      }
    }
    if (entry !== published.entry)
      problems.push(`Roll ${roll}: recomputed entry ${entry + 1}, published ${published.entry + 1}.`);
    steps.push(
      `Roll ${roll + 1} in “${read.name}”: HMAC-SHA256 gives ${value} of ${total}, entry ${entry + 1}.`,
    );
    let given = entry;
    if (roll === 0 && draw.pity) {
      const applies = draw.pity.countBefore + 1 >= draw.pity.after;
      if (applies !== draw.pity.applied) problems.push('The pity rule was not applied as published.');
      if (applies) {
        given = draw.pity.entry;
        steps.push(
          `Pity: opening ${draw.pity.countBefore + 1} of ${draw.pity.after} gives entry ${given + 1}.`,
        );
      }
    }
    const givenOutcome = entries[given]?.outcome ?? null;
    outcome = givenOutcome;
    expectedTable = givenOutcome !== null && 'table' in givenOutcome ? givenOutcome.table : null;
  }
  if (expectedTable !== null) problems.push(`The draw stops before rolling in ${expectedTable}.`);
  if (canonicalJson(outcome) !== canonicalJson(draw.outcome))
    problems.push('The recomputed outcome is not the published outcome.');
  return { problems, steps };
}
