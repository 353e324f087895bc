// An HTTP client that goes through the Prism proxy and keeps score: requests sent, and every way an
// exchange failed: a response Prism found departing from the contract (its 500 under --errors, or
// the sl-violations header), a request Prism refused itself (the flow left the contract), or a
// status other than the one the flow expected.
/**
 * A response body as the flow reads it. Loosely typed on purpose: Prism has already checked its
 * shape against the contract, which is the point of the run.
 */
export type Loose = any;

export interface ProxyResponse<T = Loose> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  body?: unknown;
  /** Sent as application/x-www-form-urlencoded (the OAuth token endpoint). */
  form?: Record<string, string>;
  headers?: Record<string, string>;
  /** The status the flow expects. */
  expect: number;
}

const PRISM_ERRORS = 'https://stoplight.io/prism/errors#';

export class ProxyClient {
  readonly baseUrl: string;
  sent = 0;
  readonly violations: string[] = [];
  readonly failures: string[] = [];

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  async call<T = Loose>(method: string, path: string, options: CallOptions): Promise<ProxyResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | undefined;
    if (options.form) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(options.form).toString();
    } else if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.body);
    }
    const response = await fetch(this.baseUrl + path, {
      method,
      headers,
      body,
      redirect: 'manual',
    });
    this.sent += 1;
    const text = await response.text();
    let answer: Loose = text;
    try {
      answer = text === '' ? undefined : JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    const where = `${method} ${path} -> ${response.status}`;
    const header = response.headers.get('sl-violations');
    const prismType =
      typeof answer?.type === 'string' && answer.type.startsWith(PRISM_ERRORS) ? answer.type : '';
    // One entry per exchange: the 500's list, else the header (warnings such as an undeclared
    // status come only there).
    if (prismType.endsWith('#VIOLATIONS')) {
      this.violations.push(`${where}: ${JSON.stringify(answer.validation ?? answer.detail)}`);
    } else if (prismType) {
      this.failures.push(
        `${where}: Prism answered itself (${prismType}): ${JSON.stringify(answer.validation ?? answer.detail)}`,
      );
    } else if (header) {
      this.violations.push(`${where}: ${header}`);
    } else if (response.status !== options.expect) {
      this.failures.push(`${where}: expected ${options.expect}; ${text.slice(0, 300)}`);
    }
    return { status: response.status, headers: response.headers, body: answer };
  }
}
