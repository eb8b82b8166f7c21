// A small closed set of typed errors. Only core/http turns them into responses,
// so the rest of the code never thinks in status codes.

export class HowkError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
    this.name = new.target.name;
  }
}

/** Input that does not match a schema; `field` names the offending path. */
export class ValidationError extends HowkError {
  readonly field: string | undefined;
  readonly issues: { path: string; message: string }[];
  constructor(message: string, field?: string, issues: { path: string; message: string }[] = []) {
    super('invalid_request', message);
    this.field = field;
    this.issues = issues;
  }
}

/** A signing secret that cannot sign (a malformed whsec_ stored before secrets were checked). */
export class InvalidSecretError extends HowkError {
  constructor(message: string) {
    super('invalid_secret', message);
  }
}

export class TooLargeError extends HowkError {
  readonly limit: number;
  constructor(what: string, limit: number) {
    super('too_large', `${what} exceeds the limit of ${limit}`);
    this.limit = limit;
  }
}

export class NotFoundError extends HowkError {
  constructor(what: string) {
    super('not_found', `${what} not found`);
  }
}

/** A dependency (Kafka, Redis) cannot take the work now; the caller may retry later. */
export class UnavailableError extends HowkError {
  readonly retryAfterSec: number;
  constructor(message: string, retryAfterSec = 5) {
    super('unavailable', message);
    this.retryAfterSec = retryAfterSec;
  }
}

/** The request's headers are over a limit (count or bytes). */
export class HeadersTooLargeError extends TooLargeError {}

/** No credentials, or credentials that do not name a live API key. */
export class AuthError extends HowkError {
  constructor(message = 'an API key is required: Authorization: Bearer howk_...') {
    super('unauthorized', message);
  }
}

/** A valid key that lacks the scope, or is bound to other configs. */
export class ForbiddenError extends HowkError {
  constructor(message: string) {
    super('forbidden', message);
  }
}

export class RateLimitedError extends HowkError {
  readonly retryAfterSec: number;
  constructor(message: string, retryAfterSec: number) {
    super('rate_limited', message);
    this.retryAfterSec = retryAfterSec;
  }
}

/** The server lacks what the operation needs (e.g. HOWK_SECRETS_KEY for stored secrets). */
export class NotConfiguredError extends HowkError {
  constructor(message: string) {
    super('not_configured', message);
  }
}

export const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));
