import type { Decision } from '../policy/retry';

// Counted events of the pipeline (docs/OPERATIONS.md, Metrics). Core code calls them; the
// host decides what they are (plain counters exported to Prometheus in Node, nothing on the
// edge and in unit tests). Every call is on the hot path: an implementation adds to a
// number and returns, and the export happens at scrape time.

/** What an attempt's response was, as the latency histogram groups them. */
export type OutcomeClass = '2xx' | '3xx' | '4xx' | '5xx' | 'timeout' | 'network' | 'local';

export const OUTCOME_CLASSES: readonly OutcomeClass[] = ['2xx', '3xx', '4xx', '5xx', 'timeout', 'network', 'local'];

/** An attempt's response (or the failure that stopped it before a response). */
export const outcomeClass = (r: { kind: string; status?: number }): OutcomeClass => {
  if (r.kind === 'response') {
    const s = r.status ?? 0;
    return s >= 500 ? '5xx' : s >= 400 ? '4xx' : s >= 300 ? '3xx' : '2xx';
  }
  if (r.kind === 'timeout') return 'timeout';
  if (r.kind === 'network') return 'network';
  // Blocked destinations, invalid requests and secrets, scripts: nothing reached the endpoint.
  return 'local';
};

export type PipelineEvents = {
  /** One enqueue request answered: 'accepted' (2xx) or 'rejected' with its error code. */
  enqueueRequest(outcome: 'accepted' | 'rejected', reason: string): void;
  /** Webhooks of accepted requests: new ones and duplicates of an idempotency key. */
  enqueued(outcome: 'accepted' | 'duplicate', n: number): void;
  /** One attempt ended: its outcome class and how long it took (ms). */
  attempt(cls: OutcomeClass, ms: number): void;
  /** What the attempt led to. */
  decided(decision: Decision): void;
  /** A record dead-lettered before any attempt (an undecodable record). */
  deadLettered(reason: string): void;
  /** A new message of the Svix API that reached no endpoint (none, all disabled, or none listens to its event type or channels). */
  messageUnrouted(): void;
};

const nothing = () => {};
export const noEvents: PipelineEvents = { enqueueRequest: nothing, enqueued: nothing, attempt: nothing, decided: nothing, deadLettered: nothing, messageUnrouted: nothing };
