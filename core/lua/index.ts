// Public surface of the Lua engine (docs/LUA.md). Everything else in core/lua is internal.
export { checkSyntax, createLuaEngine, defaultLuaEngine, type LuaEngine, type LuaEngineOptions, type RunOptions } from './engine';
export { runDeliveryScript, type DeliveryInput, type DeliveryScriptResult } from './delivery';
export { runTransformer, type TransformerInput, type TransformerOptions, type TransformerResult } from './transformer';
export { LuaError, LuaMemoryError, LuaRuntimeError, LuaSyntaxError, LuaTimeoutError, type LuaErrorCode } from './errors';
export { defaultWasmLoader, type LuaWasmLoader } from './wasm-api';
export { DEFAULT_LIMITS, type FetchLike, type HttpPolicy, type KvStore, type LuaLimits, type LuaLogLevel, type LuaLogSink, type LuaServices } from './types';
export { namespaceChain } from './types';
export type { LuaHostServices } from './host-services';
export {
  checkScope,
  credentialKeysFromEnv,
  credentialSession,
  decryptCredential,
  encryptCredential,
  importCredentialKey,
  namespaceAllowed,
  parseEnvelope,
  CREDENTIAL_KEY_ENV,
  CREDENTIAL_PREFIX,
  CREDENTIAL_V1_PREFIX,
  CredentialError,
  type CredentialScope,
  type CredentialSession,
  type CredentialUse,
} from './credentials';
export { redactDeep, redactor, REDACTED, type Redactor } from './taint';
