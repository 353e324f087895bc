// Types for the independent Data Integrity library used only by the identity tests.
declare module '@digitalbazaar/vc' {
  type DocumentLoader = (url: string) => Promise<unknown>;
  export function issue(options: {
    credential: Record<string, unknown>;
    suite: unknown;
    documentLoader: DocumentLoader;
  }): Promise<Record<string, unknown>>;
  export function signPresentation(options: {
    presentation: Record<string, unknown>;
    suite: unknown;
    challenge: string;
    domain?: string;
    documentLoader: DocumentLoader;
  }): Promise<Record<string, unknown>>;
  export function verifyCredential(options: {
    credential: Record<string, unknown>;
    suite: unknown;
    documentLoader: DocumentLoader;
    checkStatus?: (options: unknown) => Promise<{ verified: boolean }>;
  }): Promise<{ verified: boolean; error?: unknown; results?: unknown[] }>;
}
