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

export const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));
