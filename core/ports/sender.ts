// Outbound HTTP. The Node fleet uses a keep-alive undici pool; tests and the edge may use fetch.

export type DeliveryRequest = {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
};

export type DeliveryResponse =
  | { kind: 'response'; status: number; retryAfter: string | null; bodySnippet: string; durationMs: number }
  | { kind: 'timeout' | 'network'; error: string; durationMs: number }
  /** Refused before any connection (SSRF guard): the target resolves to a forbidden address. */
  | { kind: 'blocked'; error: string; durationMs: number };

export type Sender = {
  send(req: DeliveryRequest): Promise<DeliveryResponse>;
  close(): Promise<void>;
};
