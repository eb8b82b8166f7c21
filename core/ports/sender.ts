import type { DeliveryResponse } from '../domain/delivery-response';

// Outbound HTTP. The Node fleet uses a keep-alive undici pool; tests and the edge may use fetch.

export type DeliveryRequest = {
  url: string;
  headers: Record<string, string>;
  /** JSON text, or a raw body's bytes */
  body: string | Uint8Array;
  timeoutMs: number;
};

export type { ClientFailure, DeliveryResponse } from '../domain/delivery-response';

export type Sender = {
  send(req: DeliveryRequest): Promise<DeliveryResponse>;
  close(): Promise<void>;
};
