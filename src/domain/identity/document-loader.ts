// The JSON-LD document loader for Data Integrity: contexts come only from the pinned list in
// contexts.ts, verification methods from the DID resolver. Nothing is ever
// fetched over the network: an unknown context is an error, so a credential cannot make this
// service reach out to an attacker's URL, and its meaning cannot change under our feet.
import type { DocumentLoader } from 'jsonld-signatures';
import { KNOWN_CONTEXTS } from './contexts.ts';
import { type DidDocument, findVerificationMethod } from './did-document.ts';
import { MULTIKEY_V1_CONTEXT } from './did-key.ts';

export type DidDocumentResolver = (did: string) => Promise<DidDocument>;

export class UnknownContextError extends Error {
  override name = 'UnknownContextError';
}

/**
 * A loader answering the known contexts and DID URLs (a verification method, returned as a
 * Multikey document, or a whole DID document) through `resolveDid`.
 */
export function offlineDocumentLoader(resolveDid: DidDocumentResolver): DocumentLoader {
  return async (url: string) => {
    const context = KNOWN_CONTEXTS.get(url);
    if (context) return { contextUrl: null, documentUrl: url, document: structuredClone(context) };
    if (url.startsWith('did:')) {
      const [did, fragment] = url.split('#');
      const document = await resolveDid(did);
      if (fragment === undefined) return { contextUrl: null, documentUrl: url, document };
      const method = findVerificationMethod(document, url);
      if (!method) throw new Error(`${did} has no verification method #${fragment}`);
      return { contextUrl: null, documentUrl: url, document: { '@context': MULTIKEY_V1_CONTEXT, ...method } };
    }
    throw new UnknownContextError(
      `${url} is neither a context this service knows nor a DID URL; nothing is ever fetched`,
    );
  };
}
