// Verify flood (finding 13.4): one user floods POST /identity/verify with large Data Integrity
// credentials (just under VERIFY_BODY_LIMIT_BYTES and VERIFY_MAX_JSON_NODES; each costs tens of ms
// of canonicalization) from FLOOD_LOOPS concurrent loops, while another client reads /healthz and
// its wallet; the bystander's latency is what is measured, beside the same loads without a flood
// and against the Koa hello baseline. The bench service raises the rate limits out of reach, so
// this measures what the worker threads protect (the per-key verify cost is tested, not benched).
// Target (issue 13.4): the bystander's /healthz and wallet read p99 under 50 ms during the flood.
import { generateKeyPairSync } from 'node:crypto';
import { DataIntegrityProof } from '@digitalbazaar/data-integrity';
import * as Ed25519Multikey from '@digitalbazaar/ed25519-multikey';
import { cryptosuite as eddsaRdfc2022 } from '@digitalbazaar/eddsa-rdfc-2022-cryptosuite';
import * as vc from '@digitalbazaar/vc';
import { didKeyFromEd25519, ed25519Multikey } from '../../src/domain/identity/did-key.ts';
import { createDidResolver } from '../../src/domain/identity/did-resolver.ts';
import { offlineDocumentLoader } from '../../src/domain/identity/document-loader.ts';
import { call, createCollection, createCurrency, createUser, mint, type Session } from '../lib/api.ts';
import { startService } from '../lib/service.ts';
import {
  bystanderFigures,
  bystanderLoads,
  bystanderReport,
  type Flood,
  measureBystander,
} from './lib/bystander.ts';
import { startHello } from './lib/hello.ts';
import type { BenchOptions } from './lib/options.ts';
import { record } from './lib/record.ts';
import { fixed, heading } from './lib/report.ts';

const FLOOD_LOOPS = 8;
/** JSON values in the credential's subject: under VERIFY_MAX_JSON_NODES (2,000) with the rest. */
const CLAIMS = 600;
const TARGET_P99_MS = 50;
const ASSET = 'verify-coin';

interface FloodCounts {
  ok: number;
  refused: number;
  failed: number;
}

/** A self-issued credential with CLAIMS claims, signed with eddsa-rdfc-2022 by a fresh did:key. */
async function largeCredential(): Promise<Record<string, unknown>> {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  const publicKey = new Uint8Array(Buffer.from(jwk.x as string, 'base64url'));
  const did = didKeyFromEd25519(publicKey);
  const keyPair = await Ed25519Multikey.fromJwk({
    jwk: jwk as Record<string, unknown>,
    secretKey: true,
    id: `${did}#${ed25519Multikey(publicKey)}`,
    controller: did,
  });
  const resolver = createDidResolver('did:web:unused', async () => {
    throw new Error('no service DID here');
  });
  const claims = Object.fromEntries(Array.from({ length: CLAIMS }, (_, i) => [`claim${i}`, `value ${i}`]));
  return vc.issue({
    credential: {
      '@context': ['https://www.w3.org/ns/credentials/v2', 'https://www.w3.org/ns/credentials/examples/v2'],
      type: ['VerifiableCredential', 'ExampleLargeCredential'],
      issuer: did,
      validFrom: '2026-01-01T00:00:00Z',
      credentialSubject: { id: did, ...claims },
    },
    suite: new DataIntegrityProof({ signer: keyPair.signer(), cryptosuite: eddsaRdfc2022 }),
    documentLoader: offlineDocumentLoader((id) => resolver.resolve(id)),
  });
}

export async function verifyFlood(options: BenchOptions): Promise<void> {
  const credential = await largeCredential();
  const body = JSON.stringify({ credential });
  for (const kind of options.dbs) {
    const hello = await startHello();
    const service = await startService(kind);
    try {
      const studio = await createUser(service, 'studio');
      await createCollection(service, studio, 'bench-verify');
      await createCurrency(service, studio, ASSET, 'bench-verify');
      const [flooder, bystander] = [await createUser(service), await createUser(service)];
      await mint(service, studio, ASSET, bystander.wallet, '1000');
      const single = await call<{ verified: boolean }>(service.baseUrl, 'POST', '/identity/verify', {
        session: flooder,
        body: { credential },
      });
      heading(`verify flood on ${kind}: one user, ${FLOOD_LOOPS} loops of ${body.length}-byte credentials`, {
        'bystander connections per load': options.connections,
        'seconds per run': options.durationSeconds,
        'one credential verifies': String(single.verified),
      });
      const { helloA, helloB, healthz, wallet } = await bystanderLoads(
        options,
        hello.baseUrl,
        service.baseUrl,
        bystander,
      );
      const helloRun = await measureBystander<FloodCounts>(hello, 'Koa hello', helloA, helloB);
      const results = [
        await measureBystander<FloodCounts>(service, 'no flood', healthz, wallet),
        await measureBystander(
          service,
          'verify flood',
          healthz,
          wallet,
          () => flood(service.baseUrl, flooder, body),
          300,
        ),
      ];
      bystanderReport(
        helloRun,
        results,
        [
          [
            'verifications/s (429s, errors)',
            ...results.map((r) =>
              r.counts ? `${fixed(r.counts.ok / r.seconds)} (${r.counts.refused}, ${r.counts.failed})` : '-',
            ),
          ],
        ],
        TARGET_P99_MS,
      );
      record({
        benchmark: 'verify-flood',
        scenario: `bystander during ${FLOOD_LOOPS} loops verifying ${Math.round(body.length / 1000)} KB credentials, ${kind}`,
        ...bystanderFigures(helloRun, results[0], results[1]),
        targets: [{ figure: 'bystander p99', below: TARGET_P99_MS, source: 'finding 13.4' }],
      });
    } finally {
      await service.stop();
      await hello.stop();
    }
  }
}

/** FLOOD_LOOPS loops, each sending the next verification as soon as the last is answered. */
function flood(baseUrl: string, flooder: Session, body: string): Flood<FloodCounts> {
  const counts = { ok: 0, refused: 0, failed: 0 };
  let stopping = false;
  const loop = async () => {
    while (!stopping) {
      const response = await fetch(`${baseUrl}/identity/verify`, {
        method: 'POST',
        headers: { ...flooder.headers, 'content-type': 'application/json' },
        body,
      }).catch(() => null);
      await response?.arrayBuffer();
      if (response?.status === 200) counts.ok++;
      else if (response?.status === 429) counts.refused++;
      else counts.failed++;
    }
  };
  const loops = Array.from({ length: FLOOD_LOOPS }, loop);
  return {
    counts,
    async stop() {
      stopping = true;
      await Promise.all(loops);
    },
  };
}
