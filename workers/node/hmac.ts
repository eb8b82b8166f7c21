import { createHmac } from 'node:crypto';
import type { Hmac } from '../../core/signing/hmac';

/**
 * Node's synchronous HMAC-SHA256 for outbound signatures: a fraction of the CPU of
 * crypto.subtle.sign, which queues a thread-pool job per signature (core/signing/hmac.ts).
 */
export const nodeHmacSha256: Hmac = (keyBytes, data) => {
  const h = createHmac('sha256', keyBytes);
  return (typeof data === 'string' ? h.update(data, 'utf8') : h.update(data)).digest();
};
