// The JSON-LD document loader for Data Integrity: contexts come from npm packages bundled with the
// service (and any the caller adds), verification methods from the DID resolver. Nothing is ever
// fetched over the network: an unknown context is an error, so a credential cannot make this
// service reach out to an attacker's URL, and its meaning cannot change under our feet.
import { contexts as credentialsContexts } from '@digitalbazaar/credentials-context';
import { contexts as dataIntegrityContexts } from '@digitalbazaar/data-integrity-context';
import { contexts as multikeyContexts } from '@digitalbazaar/multikey-context';
import type { DocumentLoader } from 'jsonld-signatures';
import { type DidDocument, findVerificationMethod } from './did-document.ts';
import { MULTIKEY_V1_CONTEXT } from './did-key.ts';

/**
 * The VC Data Model 2.0 examples context (https://www.w3.org/ns/credentials/examples/v2), which
 * the W3C test suite requires verifiers to accept: it maps every term to the examples vocabulary.
 */
const EXAMPLES_V2 = { '@context': { '@vocab': 'https://www.w3.org/ns/credentials/examples#' } };

export const BUNDLED_CONTEXTS: ReadonlyMap<string, unknown> = new Map<string, unknown>([
  ...credentialsContexts,
  ...dataIntegrityContexts,
  ...multikeyContexts,
  ['https://www.w3.org/ns/credentials/examples/v2', EXAMPLES_V2],
]);

export type DidDocumentResolver = (did: string) => Promise<DidDocument>;

export class UnknownContextError extends Error {
  override name = 'UnknownContextError';
}

/**
 * A loader answering bundled contexts, `extraContexts`, and DID URLs (a verification method,
 * returned as a Multikey document, or a whole DID document) through `resolveDid`.
 */
export function offlineDocumentLoader(
  resolveDid: DidDocumentResolver,
  extraContexts: ReadonlyMap<string, unknown> = new Map(),
): DocumentLoader {
  return async (url: string) => {
    const context = BUNDLED_CONTEXTS.get(url) ?? extraContexts.get(url);
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
