import type { CircuitState } from '../policy/circuit';
import type { LabConfig } from './config';

// The Lab's public data: everything a UI reads is plain, JSON-serialisable data.

/** How a simulated subscriber answers, changeable at any moment. */
export type Behaviour =
  | { kind: 'healthy' }
  /** Answers `status` (a 5xx is retried; a 4xx other than 429 dead-letters at once). */
  | { kind: 'failing'; status: number }
  /** Answers 200 after `latencyMs`; at or past the timeout the sender gives up (the subscriber still processes it). */
  | { kind: 'slow'; latencyMs: number }
  /** Answers 429 with Retry-After: `retryAfterS` seconds. */
  | { kind: 'rate_limiting'; retryAfterS: number }
  /** Processes the request (applies the effect) but its answer never reaches the sender. */
  | { kind: 'lost_response' };

export type DeliveryState = 'queued' | 'in_flight' | 'waiting' | 'delivered' | 'dead';

/** Why a waiting delivery waits: a scheduled retry, a 429 deferral, or parked by admission (no attempt spent). */
export type Held = 'retry' | 'deferred' | 'circuit_open' | 'rate_limited';

export type LabAttempt = {
  /** The attempt number the request carried (x-webhook-attempt, 1-based). */
  attempt: number;
  startedAt: number;
  endedAt: number;
  probe: boolean;
  /** What the sender saw: "200", "503", "429 Retry-After 4 s", "timeout". */
  outcome: string;
  result: 'delivered' | 'retry' | 'deferred' | 'dead';
  /** The log line of this attempt. */
  text: string;
};

export type DeliveryView = {
  id: string;
  eventId: string;
  subscriberId: string;
  state: DeliveryState;
  held: Held | null;
  dueAt: number | null;
  /** The attempt number of the latest (or next) request, 1-based: a 429 deferral does not move it. */
  attempt: number;
  /** Attempts spent by failing; a 429 deferral spends none. */
  failures: number;
  deferrals: number;
  maxAttempts: number;
  /** HTTP requests made, deferred ones included. */
  requests: number;
  replayOf: string | null;
  createdAt: number;
  history: LabAttempt[];
};

export type LabDeadLetter = {
  id: string;
  eventId: string;
  subscriberId: string;
  reasonType: string;
  reason: string;
  /** Attempts spent (the last one included). */
  attempts: number;
  deferrals: number;
  requests: number;
  deadAt: number;
  replayOf: string | null;
  payload: string;
  history: LabAttempt[];
};

export type SubscriberView = {
  id: string;
  name: string;
  url: string;
  behaviour: Behaviour;
  circuit: { state: CircuitState; failures: number; openUntil: number | null; nextProbeAt: number | null; opened: number };
  tokens: number;
  burst: number;
  rate: number;
  delivered: number;
  /** Attempts that failed and spent an attempt (deferrals not included). */
  failed: number;
  deferred: number;
  deadLettered: number;
  /** Business effects this consumer applied (at most one per webhook id). */
  effects: number;
  /** Deliveries this consumer acknowledged but dropped as already applied. */
  duplicates: number;
  requests: number;
  /** Times admission parked a delivery to it (circuit open or no token). */
  parked: number;
  queued: number;
  waiting: number;
  inFlight: number;
};

export type Counters = {
  events: number;
  deliveries: number;
  delivered: number;
  deadLetters: number;
  queued: number;
  inFlight: number;
  waiting: number;
  requests: number;
  failed: number;
  deferred: number;
  parked: number;
  effects: number;
  duplicates: number;
  replays: number;
  circuitOpens: number;
  /** Sends and replays refused by the queue bound. */
  rejected: number;
};

export type LogLine = { seq: number; at: number; text: string };

export type ScenarioId = 'healthy' | 'failure' | 'recovery' | 'rate_limit' | 'lost_response';

export type Command =
  | { kind: 'send'; type?: string }
  | { kind: 'burst'; n: number }
  | { kind: 'behave'; subscriber: string; behaviour: Behaviour }
  | { kind: 'fail'; subscriber: string; status?: number }
  | { kind: 'repair'; subscriber: string };

export type ScriptedCommand = { at: number; command: Command };

export type Scenario = {
  id: ScenarioId;
  title: string;
  /** What happens, in a few sentences. */
  summary: string;
  /** What it teaches. */
  lesson: string;
  commands: ScriptedCommand[];
};

export type LabSnapshot = {
  now: number;
  /** The next scheduled moment (a command, an answer, a due retry), or null when nothing is scheduled. */
  nextAt: number | null;
  paused: boolean;
  speed: number;
  seed: number;
  scenario: { id: ScenarioId; title: string; summary: string; lesson: string } | null;
  counters: Counters;
  subscribers: SubscriberView[];
  /** Newest first. */
  deliveries: DeliveryView[];
  /** Oldest first. */
  deadLetters: LabDeadLetter[];
  /** Oldest first, at most config.logBound lines. */
  log: LogLine[];
  config: LabConfig;
};
