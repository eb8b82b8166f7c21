import type { Webhook } from '../domain/webhook';
import { closedCircuit, type Circuit } from '../policy/circuit';
import type { Bucket } from '../policy/token-bucket';
import type { LabConfig, LabSubscriberSpec } from './config';
import { createRandom, type Random } from './random';
import type { Reaction } from './subscriber';
import { logRing, type LogRing } from './text';
import type { LabAttempt, Behaviour, LabDeadLetter, DeliveryState, Held, Scenario, ScriptedCommand } from './types';

// The engine's internal state: mutable, owned by one Lab; the snapshot is the public copy.

/** Simulated time 0 as a wall-clock instant: the ISO dates in webhook records start here. */
export const LAB_EPOCH = Date.UTC(2026, 0, 14, 9, 30);

export type SubscriberStats = {
  delivered: number;
  failed: number;
  deferred: number;
  deadLettered: number;
  effects: number;
  duplicates: number;
  requests: number;
  parked: number;
};

export type SubscriberState = {
  spec: LabSubscriberSpec;
  behaviour: Behaviour;
  circuit: Circuit;
  bucket: Bucket;
  /** Webhook ids whose effect this consumer has applied: its dedupe memory. */
  applied: Set<string>;
  stats: SubscriberStats;
};

export type DeliveryRecord = {
  id: string;
  seq: number;
  eventId: string;
  subscriberId: string;
  /** The record the policy functions read and return, as a worker holds it. */
  webhook: Webhook;
  state: DeliveryState;
  held: Held | null;
  dueAt: number | null;
  failures: number;
  requests: number;
  createdAt: number;
  history: LabAttempt[];
};

export type Flight = { id: string; seq: number; startedAt: number; endsAt: number; probe: boolean; reaction: Reaction };

export type LabState = {
  config: LabConfig;
  seed: number;
  rng: Random;
  now: number;
  /** Fraction of a millisecond stepped but not yet on the clock. */
  carry: number;
  paused: boolean;
  speed: number;
  scenario: Scenario | null;
  /** Scripted commands still to run, in time order. */
  script: ScriptedCommand[];
  subs: SubscriberState[];
  /** Every delivery still outstanding and the newest finished ones, in creation order. */
  deliveries: DeliveryRecord[];
  byId: Map<string, DeliveryRecord>;
  /** Due deliveries waiting for a worker, oldest first. */
  ready: DeliveryRecord[];
  flights: Flight[];
  deadLetters: LabDeadLetter[];
  totals: { events: number; deliveries: number; replays: number; rejected: number };
  seq: { flight: number };
  log: LogRing;
};

const freshStats = (): SubscriberStats => ({ delivered: 0, failed: 0, deferred: 0, deadLettered: 0, effects: 0, duplicates: 0, requests: 0, parked: 0 });

export const initialState = (config: LabConfig, seed: number, scenario: Scenario | null): LabState => ({
  config,
  seed,
  rng: createRandom(seed),
  now: 0,
  carry: 0,
  paused: false,
  speed: 1,
  scenario,
  script: scenario ? scenario.commands.map((c) => ({ at: c.at, command: c.command })).sort((a, b) => a.at - b.at) : [],
  subs: config.subscribers.map((spec) => ({
    spec,
    behaviour: { kind: 'healthy' },
    circuit: closedCircuit(),
    bucket: { tokens: config.rateLimit.burst, at: 0 },
    applied: new Set<string>(),
    stats: freshStats(),
  })),
  deliveries: [],
  byId: new Map(),
  ready: [],
  flights: [],
  deadLetters: [],
  totals: { events: 0, deliveries: 0, replays: 0, rejected: 0 },
  seq: { flight: 0 },
  log: logRing(config.logBound),
});

export const outstanding = (s: LabState): number => s.deliveries.filter((d) => d.state !== 'delivered' && d.state !== 'dead').length;
