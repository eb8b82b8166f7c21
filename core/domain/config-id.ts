import { ValidationError } from '../errors/errors';

/** Config ids go into Redis keys (core/domain/keys.ts) and URL paths. */
export const CONFIG_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export const checkConfigId = (id: string): void => {
  if (!CONFIG_ID.test(id)) throw new ValidationError('config id must be 1-128 characters of A-Z a-z 0-9 . _ : -', 'config');
};
