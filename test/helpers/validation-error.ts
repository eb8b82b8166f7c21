import { expect } from 'vitest';
import { ValidationError } from '../../core/errors/errors';

/** Runs `f`, expects a ValidationError and returns it. */
export const validationError = (f: () => unknown): ValidationError => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return e as ValidationError;
  }
  throw new Error('expected a ValidationError, nothing was thrown');
};
