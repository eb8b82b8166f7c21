// How an api instance holding an enqueue that waits (?wait=) learns the first attempt's
// outcome from the worker that made it: the webhook record names its listener (`awaited_by`),
// and the worker publishes, once its outcomes are durable, one message per listener per
// outcome batch. At most once: a message lost leaves the wait to expire (202 pending).
// Redis pub/sub across processes (workers/redis/outcome-bus.ts), in memory within one
// (core/memory/outcome-bus.ts).

/** The first attempt of an awaited webhook, as its waiter is told it. */
export type FirstOutcome = {
  webhook_id: string;
  status: 'delivered' | 'retrying' | 'dead_lettered';
  attempts: number;
  status_code: number | null;
  error: string | null;
  /** When it is tried again (retrying only). */
  next_retry_at: string | null;
  /** Why it was dead-lettered (dead_lettered only). */
  dead_reason: string | null;
};

export type OutcomeBus = {
  publish(listener: string, outcomes: FirstOutcome[]): Promise<void>;
  /** Calls `on` with every batch published to `listener` from now on, until closed. */
  subscribe(listener: string, on: (outcomes: FirstOutcome[]) => void): Promise<{ close(): Promise<void> }>;
};
