/**
 * What a Svix endpoint sets for itself over the global delivery policy: its own attempt
 * timeout, backoff cap and concurrency ceiling. Undefined fields fall back to the global ones.
 */
export type EndpointPolicy = { timeoutMs?: number; maxBackoffMs?: number; maxConcurrency?: number };
