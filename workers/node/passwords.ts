import bcrypt from 'bcryptjs';
import { cachedHashVerifier, type BcryptVerifierOptions } from '../../core/transformers/bcrypt-cache';
import type { HashVerifier } from '../../core/transformers/registry';

// bcrypt for transformer passwd files: pure-JS bcryptjs (no native build, same results as the
// C implementations for $2a$/$2b$/$2y$); its async compare yields to the event loop between
// rounds, so other requests go on. The cache of good credentials is core's.

export type { BcryptVerifierOptions };

export const bcryptVerifier = (o: BcryptVerifierOptions = {}): HashVerifier => cachedHashVerifier((password, hash) => bcrypt.compare(password, hash), o);
