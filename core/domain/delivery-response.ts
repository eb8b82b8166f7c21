// What one send got back (the Sender port answers it; the retry and limit policies read it).

export type DeliveryResponse =
  | {
      kind: 'response';
      status: number;
      retryAfter: string | null;
      bodySnippet: string;
      durationMs: number;
      /** From the send call until the request was fully written (a wait for a pooled connection included), when the client can tell. */
      writtenMs?: number;
      /** Set by the pipeline, not the client: the attempt's timestamp and signature headers as sent (kept in the status history). */
      signed?: Record<string, string>;
    }
  | { kind: 'timeout' | 'network'; error: string; durationMs: number }
  /** Refused before any connection (SSRF guard): the target resolves to a forbidden address. */
  | { kind: 'blocked'; error: string; durationMs: number }
  /**
   * Refused on this side before the request left: a header the HTTP client will not send
   * (invalid_request), a signing secret that cannot sign (invalid_secret), or any other local
   * error (local_error). Says nothing about the endpoint.
   */
  | { kind: ClientFailure; error: string; durationMs: number };

export type ClientFailure = 'invalid_request' | 'invalid_secret' | 'local_error';
