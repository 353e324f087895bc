// Errors of the identity domain. A DID that cannot be parsed, or uses a method or key type this
// service does not resolve, is the caller's input problem (400), named precisely.
import { AppError, ValidationError } from '../errors.ts';

export class InvalidDidError extends ValidationError {
  constructor(detail: string) {
    super(detail, undefined, '/problems/invalid-did');
  }
}

/** A well-formed did:key whose key type this service does not handle (secp256k1, BLS, RSA, ...). */
export class UnsupportedKeyTypeError extends AppError {
  constructor(detail: string) {
    super(400, '/problems/unsupported-key-type', { detail });
  }
}

export class DidMethodNotSupportedError extends AppError {
  constructor(detail: string) {
    super(400, '/problems/did-method-not-supported', { detail });
  }
}
