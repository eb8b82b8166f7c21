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

export type Issue = { path: string; message: string };

/** What fromZod reads of a zod error, so that this file needs no zod. */
type ZodErrorLike = { readonly issues: readonly { readonly path: readonly PropertyKey[]; readonly message: string }[] };

export type FromZodOptions = {
  /** Where the checked value sits (e.g. "webhooks.3"): put before every issue's path. */
  at?: string;
  /** The field an issue about the whole value (empty path) names, e.g. "body". */
  root?: string;
  /** Put before the message, e.g. "invalid config: ". */
  prefix?: string;
};

/** Input that does not match a schema; `field` names the offending path. */
export class ValidationError extends HowkError {
  readonly field: string | undefined;
  readonly issues: Issue[];
  constructor(message: string, field?: string, issues: Issue[] = []) {
    super('invalid_request', message);
    this.field = field;
    this.issues = issues;
  }

  /** "path: message; path: message", the first path as `field`. */
  static fromIssues(issues: Issue[], prefix = ''): ValidationError {
    return new ValidationError(`${prefix}${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues[0]?.path, issues);
  }

  /**
   * A zod error, every issue named by its dotted path: `at` first, empty segments (an empty
   * `at`, an empty record key) left out, `root` when nothing is left.
   */
  static fromZod(error: ZodErrorLike, o: FromZodOptions = {}): ValidationError {
    const issues = error.issues.map((i) => ({
      path: [o.at ?? '', ...i.path.map(String)].filter((p) => p !== '').join('.') || (o.root ?? ''),
      message: i.message,
    }));
    return ValidationError.fromIssues(issues, o.prefix);
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
  constructor(message: string, retryAfterSec = 5, code = 'unavailable') {
    super(code, message);
    this.retryAfterSec = retryAfterSec;
  }
}

/**
 * An API key that could not be checked (the edge's key mirror unreachable, and no record of
 * the key read within its cache time): refused with 503, never let in and never called unknown.
 */
export class KeyCheckUnavailableError extends UnavailableError {
  constructor(retryAfterSec: number) {
    super('the API key could not be checked (the key table is unreachable); nothing was accepted, retry later', retryAfterSec, 'key_check_unavailable');
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
  constructor(message: string, retryAfterSec: number, code = 'rate_limited') {
    super(code, message);
    this.retryAfterSec = retryAfterSec;
  }
}

/** This api instance has as many requests in hand as it takes (api.max_inflight_requests); nothing was recorded. */
export class OverloadedError extends HowkError {
  readonly retryAfterSec: number;
  constructor(message: string, retryAfterSec = 1) {
    super('overloaded', message);
    this.retryAfterSec = retryAfterSec;
  }
}

/** A config has as many webhooks outstanding as it may (api.max_outstanding_per_config); nothing was enqueued. */
export class BackloggedError extends RateLimitedError {
  readonly config: string;
  constructor(config: string, outstanding: number, bound: number, retryAfterSec = 1) {
    super(`config ${config} has ${outstanding} webhooks outstanding (bound ${bound}); retry once some are delivered`, retryAfterSec, 'too_many_outstanding');
    this.config = config;
  }
}

/** The request is valid, but the server's present state or settings forbid it (e.g. `auth_disabled`). */
export class ConflictError extends HowkError {}

/** A body in a media type the route does not read (a JSON route given text/plain, a form...); nothing was done. */
export class UnsupportedMediaTypeError extends HowkError {
  constructor(message: string) {
    super('unsupported_media_type', message);
  }
}

/** A state-changing request a browser sent from another site (Origin, Sec-Fetch-Site); nothing was done. */
export class CrossOriginError extends HowkError {
  constructor(message: string) {
    super('cross_origin_refused', message);
  }
}

/** A Host this server does not answer for (api.allowed_hosts): a DNS-rebound name, say. */
export class HostNotAllowedError extends HowkError {
  constructor(message: string) {
    super('host_not_allowed', message);
  }
}

/** The server lacks what the operation needs (e.g. HOWK_SECRETS_KEY for stored secrets). */
export class NotConfiguredError extends HowkError {
  constructor(message: string) {
    super('not_configured', message);
  }
}

export const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));
