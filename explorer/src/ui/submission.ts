// One Idempotency-Key per form submission: a double click sends nothing twice (the second click is
// ignored while the first is in flight), and a retry of the same body after a failure reuses the key,
// so if the first attempt did go through the service answers with its result instead of acting again.
import { randomToken } from '../auth/pkce.ts';

export class SubmissionGuard {
  private key: string | null = null;
  private body: string | null = null;
  private inFlight = false;

  get busy(): boolean {
    return this.inFlight;
  }

  /** Runs `send` with the submission's key; undefined when a submission is already in flight. */
  async run<T>(body: unknown, send: (idempotencyKey: string) => Promise<T>): Promise<T | undefined> {
    if (this.inFlight) return undefined;
    const serialized = JSON.stringify(body);
    if (this.key === null || serialized !== this.body) {
      // A changed body is a new submission: reusing the key would be refused (422).
      this.key = randomToken();
      this.body = serialized;
    }
    this.inFlight = true;
    try {
      const result = await send(this.key);
      this.key = null;
      this.body = null;
      return result;
    } finally {
      this.inFlight = false;
    }
  }
}
