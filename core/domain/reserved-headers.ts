import { CLIENT_MANAGED_HEADERS, SIGNATURE_HEADERS } from './headers';

/**
 * Headers no webhook, transformer or delivery script may set: the signature and webhook
 * identity are made by the sender on every attempt, and framing and hop-by-hop headers
 * belong to the HTTP client (core/security/headers.ts).
 */
export const RESERVED_HEADERS: ReadonlySet<string> = new Set([...SIGNATURE_HEADERS, ...CLIENT_MANAGED_HEADERS]);

/**
 * The enqueue API also refuses content-type: the body is always JSON and the sender labels
 * it so. Only a delivery script, which may rewrite the body, may change it.
 */
export const ENQUEUE_RESERVED_HEADERS: ReadonlySet<string> = new Set([...RESERVED_HEADERS, 'content-type']);
