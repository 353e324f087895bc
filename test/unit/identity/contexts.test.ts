// The fixed list of JSON-LD contexts (finding 13.1): pinned content, nothing else loaded, no inline
// or embedded context accepted in a Data Integrity document.
import { describe, expect, it } from 'vitest';
import {
  ContextPinError,
  contextProblems,
  KNOWN_CONTEXTS,
  pinContexts,
} from '../../../src/domain/identity/contexts.ts';
import { offlineDocumentLoader } from '../../../src/domain/identity/document-loader.ts';

const V2 = 'https://www.w3.org/ns/credentials/v2';

describe('known contexts', () => {
  it('13.1: a bundled context whose content is not the pinned one stops the service', () => {
    const changed = { ...(KNOWN_CONTEXTS.get(V2) as object), extra: 'x' };
    expect(() =>
      pinContexts([
        {
          url: V2,
          sha256: 'bf6fd611e6773d58f649459a45dbbb81f94e8cfd058a756644cd5a4a882c4050',
          load: () => changed,
        },
      ]),
    ).toThrow(ContextPinError);
    expect(() => pinContexts([{ url: V2, sha256: '00', load: () => undefined }])).toThrow(/missing/);
  });

  it('13.1: the loader answers only the pinned contexts', async () => {
    const loader = offlineDocumentLoader(async () => {
      throw new Error('no DIDs here');
    });
    expect((await loader(V2)).document).toEqual(KNOWN_CONTEXTS.get(V2));
    await expect(loader('https://example.com/context.jsonld')).rejects.toThrow(/nothing is ever fetched/);
  });

  it('13.1: refuses inline, unknown and embedded contexts, and accepts known URLs', () => {
    expect(
      contextProblems({ '@context': [V2, 'https://www.w3.org/ns/credentials/undefined-terms/v2'] }),
    ).toEqual([]);
    expect(contextProblems({ '@context': [V2, { t: '@type' }] })).toEqual([
      '@context[1] is an inline context; only known context URLs are accepted',
    ]);
    expect(contextProblems({ '@context': 'https://example.com/x' })).toEqual([
      '@context[0] https://example.com/x is not a known context',
    ]);
    expect(contextProblems({ '@context': V2, credentialSubject: [{ '@context': { p: '@index' } }] })).toEqual(
      ['credentialSubject[0] has an embedded @context'],
    );
    // A presentation's credentials carry their own context lists, checked one by one.
    expect(
      contextProblems({ '@context': V2, verifiableCredential: [{ '@context': V2 }] }, [
        'verifiableCredential',
      ]),
    ).toEqual([]);
  });
});

describe('proof contexts', () => {
  it('13.1: a proof may repeat known context URLs, nothing else', () => {
    expect(
      contextProblems({ '@context': V2, proof: { '@context': [V2], type: 'DataIntegrityProof' } }),
    ).toEqual([]);
    expect(contextProblems({ '@context': V2, proof: [{ '@context': [V2, { t: '@type' }] }] })).toEqual([
      'proof[0] names a context that is not known',
    ]);
    expect(contextProblems({ '@context': V2, proof: { nested: { '@context': V2 } } })).toEqual([
      'proof[0].nested has an embedded @context',
    ]);
  });
});
