// The Standard Webhooks test vectors, copied from the specification's reference JavaScript library:
// github.com/standard-webhooks/standard-webhooks, libraries/javascript/src/webhook.test.ts
// @ 10d3e46d720c4e5861a792bec25792a04ad4e2b3 (MIT). `signed` is its "sign function works" vector
// (a fixed id, timestamp and payload with the signature every implementation must produce); the
// `cases` are its verification cases, rebuilt around a fresh timestamp as that file does
// (TestPayload): each names the header change and whether verification must pass.

export const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
/** The same key without the `whsec_` prefix ("verification works with and without signature prefix"). */
export const SECRET_UNPREFIXED = 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
export const MSG_ID = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
export const PAYLOAD = '{"test": 2432232314}';

export const signed = {
  secret: SECRET,
  id: MSG_ID,
  timestamp: 1614265330,
  payload: PAYLOAD,
  signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
};

/** A valid signature of another message, used by the library's "multi sig payload" case. */
export const OTHER_SIGNATURE = 'Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=';
export const TOLERANCE_MS = 5 * 60 * 1000;

export type Headers3 = Record<string, string>;

/** Each case rewrites the headers of a correctly signed message (made at `now + skewMs`). */
export const cases: { name: string; skewMs?: number; edit?: (headers: Headers3) => void; valid: boolean }[] =
  [
    { name: 'valid signature is valid and returns valid json', valid: true },
    { name: 'missing id raises error', edit: (h) => delete h['webhook-id'], valid: false },
    { name: 'missing timestamp raises error', edit: (h) => delete h['webhook-timestamp'], valid: false },
    {
      name: 'invalid timestamp throws error',
      edit: (h) => {
        h['webhook-timestamp'] = 'hello';
      },
      valid: false,
    },
    { name: 'missing signature raises error', edit: (h) => delete h['webhook-signature'], valid: false },
    {
      name: 'invalid signature throws error',
      edit: (h) => {
        h['webhook-signature'] = 'v1,dawfeoifkpqwoekfpqoekf';
      },
      valid: false,
    },
    {
      name: 'partial signature throws error',
      edit: (h) => {
        h['webhook-signature'] = h['webhook-signature'].slice(0, 8);
      },
      valid: false,
    },
    {
      name: 'partial signature throws error (empty)',
      edit: (h) => {
        h['webhook-signature'] = 'v1,';
      },
      valid: false,
    },
    { name: 'old timestamp fails', skewMs: -(TOLERANCE_MS + 1000), valid: false },
    { name: 'new timestamp fails', skewMs: TOLERANCE_MS + 1000, valid: false },
    {
      name: 'multi sig payload is valid',
      edit: (h) => {
        h['webhook-signature'] = [
          `v1,${OTHER_SIGNATURE}`,
          `v2,${OTHER_SIGNATURE}`,
          h['webhook-signature'],
          `v1,${OTHER_SIGNATURE}`,
        ].join(' ');
      },
      valid: true,
    },
  ];
