import { Kafka } from '@upstash/kafka';
import { UnavailableError, errorMessage } from '../../core/errors/errors';
import { settleWithin } from '../../core/domain/deadline';
import { retryUntil } from '../../core/domain/retry-until';
import type { KafkaRestAck, KafkaRestRecord } from '../../core/ports/kafka-rest';

// Produce over REST with @upstash/kafka, with the client's own retries bounded. Left to
// itself the client retries any failure 5 times over ~15 s; a producer waiting for its 202
// must instead hear 503 + Retry-After within 2 s. So each attempt goes through the client's
// HTTP layer with `retries: 0` (its Request type has the option; Producer just never passes
// it), and this adapter retries within one deadline.

type UpstashRequest = { path: string[]; body?: unknown; retries?: number; headers?: Record<string, string> };
type UpstashHttp = { post<T>(req: UpstashRequest): Promise<T>; get<T>(req: UpstashRequest): Promise<T> };

export type RestProducerOptions = {
  url: string;
  username: string;
  password: string;
  /** Total time for one produce, retries included. */
  deadlineMs: number;
  retryAfterSec: number;
  /** Sent with every request (e.g. a Cloudflare Access service token). */
  headers?: Record<string, string>;
  now?: () => number;
};

export type RestProducer = {
  /** Resolves once every record is acknowledged (one call, one request when all goes well). */
  produce(records: KafkaRestRecord[]): Promise<KafkaRestAck[]>;
  /** Topics the endpoint serves (readiness). */
  topics(): Promise<Record<string, number>>;
};

const within = <T>(p: Promise<T>, ms: number): Promise<T> => settleWithin(p, ms, () => new Error(`no answer within ${ms} ms`));

/** A retry is worth starting only with this much of the deadline left. */
const MIN_ATTEMPT_MS = 250;

export const createRestProducer = (o: RestProducerOptions): RestProducer => {
  const now = o.now ?? Date.now;
  const kafka = new Kafka({ url: o.url, username: o.username, password: o.password });
  const http = (kafka as unknown as { client?: UpstashHttp }).client;
  if (!http || typeof http.post !== 'function') throw new Error('@upstash/kafka has no internal HTTP client: the pinned version (1.3.5) is required');

  const bounded = async <T>(what: string, send: () => Promise<T>): Promise<T> => {
    const end = now() + o.deadlineMs;
    try {
      return await retryUntil(() => within(send(), end - now()), {
        baseMs: 100,
        capMs: 800,
        // Another try only when it would start with enough of the deadline left.
        retryIf: (_e, wait) => end - now() - wait >= MIN_ATTEMPT_MS,
      });
    } catch (e) {
      throw new UnavailableError(`kafka REST ${what} failed: ${errorMessage(e)}`, o.retryAfterSec);
    }
  };

  return {
    produce: (records) => bounded('produce', () => http.post<KafkaRestAck[]>({ path: ['produce'], body: records, retries: 0, headers: o.headers })),
    topics: () => bounded('topics', () => http.get<Record<string, number>>({ path: ['topics'], retries: 0, headers: o.headers })),
  };
};
