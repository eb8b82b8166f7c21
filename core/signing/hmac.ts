import { utf8 } from './encoding';

/**
 * HMAC-SHA256 of `data` under `keyBytes`. The default below is WebCrypto (any runtime);
 * a runtime with a synchronous native HMAC passes its own (workers/node/hmac.ts): on Node,
 * crypto.subtle.sign is a thread-pool job per call and costs several times the HMAC of a
 * small body, which showed in the worker's CPU profile.
 */
export type Hmac = (keyBytes: Uint8Array, data: string | Uint8Array) => Uint8Array | Promise<Uint8Array>;

// Imported keys are cached: importKey costs more than the HMAC of a small body.
const cache = new Map<string, Promise<CryptoKey>>();
const CACHE_MAX = 1000;

const keyBytesKey = (bytes: Uint8Array): string => String.fromCharCode(...bytes);

export const hmacKey = (keyBytes: Uint8Array): Promise<CryptoKey> => {
  const id = keyBytesKey(keyBytes);
  let k = cache.get(id);
  if (!k) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value as string);
    k = crypto.subtle.importKey('raw', keyBytes as BufferSource, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    cache.set(id, k);
  }
  return k;
};

export const hmacSha256 = async (keyBytes: Uint8Array, data: string | Uint8Array): Promise<Uint8Array> => {
  const key = await hmacKey(keyBytes);
  const sig = await crypto.subtle.sign('HMAC', key, (typeof data === 'string' ? utf8(data) : data) as BufferSource);
  return new Uint8Array(sig);
};
