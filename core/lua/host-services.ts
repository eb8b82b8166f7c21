// Apart from types.ts because it names the engine and the credential session, which are
// built on types.ts themselves.

import type { CredentialSession } from './credentials';
import type { LuaEngine } from './engine';
import type { LuaServices } from './types';

/**
 * What the host process gives every script it runs, per namespace: the guarded fetch with
 * the namespace's http allowlist (plus a transformer's own `allowed_hosts`), and the
 * credential decrypter. Built once per process (workers/node/lua-services.ts).
 */
export type LuaHostServices = {
  /**
   * Services for ONE run in `namespace` (its http allowlist). Credentials open by
   * `credentialNamespace` (default `namespace`): where the running script is stored, so that a
   * parent's script applied to a child opens the parent's. The credential session records what the run
   * decrypted: its fetch refuses hosts outside those credentials' lists, and the caller
   * checks the delivery's destination and redacts outputs with it.
   */
  forNamespace(
    namespace: string,
    extraHosts?: readonly string[],
    credentialNamespace?: string,
  ): Pick<LuaServices, 'fetch' | 'http' | 'decryptCredential'> & { credentials?: CredentialSession };
  /** Reads an environment variable for ${VAR} delivery templates (the allowlist is checked by the caller). */
  env(name: string): string | undefined;
  /** Where this process runs scripts (Node: a pool of worker threads with a hard stop); default: in-process. */
  engine?: LuaEngine;
};
