// The CPU-heavy part of checking a Data Integrity document (13.4): JSON-LD expansion, compaction
// and RDF canonicalization with the proof check. Pure (no database), so it can run on a worker
// thread (jsonld-worker.ts) as well as inline; everything it needs travels in the task.

import type { DocumentLoader } from 'jsonld-signatures';
import { contextProblems } from './contexts.ts';
import { type ProofVerification, verifyDataIntegrityProofs } from './data-integrity.ts';
import { jsonLdProblems } from './data-model.ts';
import type { DidDocument } from './did-document.ts';
import { createDidResolver } from './did-resolver.ts';
import { offlineDocumentLoader } from './document-loader.ts';

type Json = Record<string, unknown>;

export interface JsonLdTask {
  document: Json;
  purpose: 'assertionMethod' | 'authentication';
  /** Top-level members whose own contexts are checked elsewhere (a presentation's credentials). */
  skip: string[];
  /** For a worker's document loader: this service's did:web and its document. */
  serviceDid: string;
  serviceDidDocument: DidDocument | null;
}

export interface JsonLdOutcome {
  /** Unknown, inline or embedded contexts: nothing else was done. */
  refused: string[];
  /** JSON-LD processing problems (standard error codes). */
  jsonLd: string[];
  /** The document as its proof covers it (compacted with its own known contexts), or null. */
  covered: Json | null;
  proofs: ProofVerification | null;
}

/**
 * What a Data Integrity document says, as its proof covers it: the document (without proofs)
 * compacted with its own context list, which contextProblems has limited to known contexts. A
 * Data Integrity proof signs the canonical RDF, not the JSON, so JSON that says the same RDF
 * differently (`@nest`, `@index`, value objects, full IRIs) is read back in one form; every claim
 * is read from that form. Null when the document is not valid JSON-LD (a format failure).
 */
async function coveredForm(document: Json, documentLoader: DocumentLoader): Promise<Json | null> {
  const { proof: _proof, ...unsecured } = document;
  // jsonld is loaded at its first use (./data-integrity.ts), not at every start.
  const { default: jsonld } = await import('jsonld');
  try {
    return await jsonld.compact(
      unsecured,
      { '@context': unsecured['@context'] },
      { documentLoader, safe: true },
    );
  } catch {
    return null;
  }
}

export function workerDocumentLoader(task: JsonLdTask): DocumentLoader {
  const resolver = createDidResolver(task.serviceDid, async () => {
    if (!task.serviceDidDocument) throw new Error('no service DID document');
    return task.serviceDidDocument;
  });
  return offlineDocumentLoader((did) => resolver.resolve(did));
}

export async function processJsonLd(
  task: JsonLdTask,
  documentLoader: DocumentLoader,
): Promise<JsonLdOutcome> {
  const refused = contextProblems(task.document, task.skip);
  if (refused.length) return { refused, jsonLd: [], covered: null, proofs: null };
  const jsonLd = await jsonLdProblems(task.document, documentLoader);
  const covered = await coveredForm(task.document, documentLoader);
  const proofs = await verifyDataIntegrityProofs(task.document, task.purpose, documentLoader);
  return { refused, jsonLd, covered, proofs };
}
