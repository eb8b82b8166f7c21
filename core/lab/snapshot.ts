import type { DeliveryRecord, LabState, SubscriberState } from './state';
import type { Counters, LabDeadLetter, DeliveryView, LabSnapshot, SubscriberView } from './types';

// The public copy of the state: plain data only (no Map, Set or shared references), so a
// UI can keep, diff or JSON-encode it without touching the engine.

/** The next scheduled moment: a scripted command, an answer, or a due retry. */
export const nextAt = (s: LabState): number | null => {
  let t = s.script[0]?.at ?? Infinity;
  for (const f of s.flights) t = Math.min(t, f.endsAt);
  for (const d of s.deliveries) if (d.state === 'waiting' && d.dueAt !== null) t = Math.min(t, d.dueAt);
  return t === Infinity ? null : t;
};

export const deliveryView = (d: DeliveryRecord): DeliveryView => ({
  id: d.id,
  eventId: d.eventId,
  subscriberId: d.subscriberId,
  state: d.state,
  held: d.held,
  dueAt: d.dueAt,
  attempt: d.webhook.attempt + 1,
  failures: d.failures,
  deferrals: d.webhook.deferrals,
  maxAttempts: d.webhook.max_attempts,
  requests: d.requests,
  replayOf: d.webhook.replay_of ?? null,
  createdAt: d.createdAt,
  history: d.history.map((h) => ({ ...h })),
});

export const deadLetterView = (dl: LabDeadLetter): LabDeadLetter => ({ ...dl, history: dl.history.map((h) => ({ ...h })) });

const subscriberView = (s: LabState, x: SubscriberState): SubscriberView => {
  const { rate, burst } = s.config.rateLimit;
  const c = x.circuit;
  // Read-only refill to now (takeToken would move the bucket's clock).
  const tokens = rate > 0 ? Math.min(burst, x.bucket.tokens + (Math.max(0, s.now - x.bucket.at) / 1000) * rate) : burst;
  const mine = s.deliveries.filter((d) => d.subscriberId === x.spec.id);
  return {
    id: x.spec.id,
    name: x.spec.name,
    url: x.spec.url,
    behaviour: { ...x.behaviour },
    circuit: {
      state: c.state,
      failures: c.failures,
      openUntil: c.state === 'OPEN' ? c.open_until : null,
      // A slot already passed means: the next delivery that asks.
      nextProbeAt: c.state === 'OPEN' ? Math.max(c.open_until, s.now) : c.state === 'HALF_OPEN' ? Math.max(c.probe_at + s.config.circuit.probe_interval, s.now) : null,
      opened: c.opened_count,
    },
    tokens: Math.round(tokens * 100) / 100,
    burst,
    rate,
    ...x.stats,
    queued: mine.filter((d) => d.state === 'queued').length,
    waiting: mine.filter((d) => d.state === 'waiting').length,
    inFlight: mine.filter((d) => d.state === 'in_flight').length,
  };
};

export const snapshotOf = (s: LabState): LabSnapshot => {
  const subscribers = s.subs.map((x) => subscriberView(s, x));
  const sum = (k: keyof SubscriberView) => subscribers.reduce((n, v) => n + (v[k] as number), 0);
  const counters: Counters = {
    events: s.totals.events,
    deliveries: s.totals.deliveries,
    delivered: sum('delivered'),
    deadLetters: sum('deadLettered'),
    queued: sum('queued'),
    inFlight: sum('inFlight'),
    waiting: sum('waiting'),
    requests: sum('requests'),
    failed: sum('failed'),
    deferred: sum('deferred'),
    parked: sum('parked'),
    effects: sum('effects'),
    duplicates: sum('duplicates'),
    replays: s.totals.replays,
    circuitOpens: s.subs.reduce((n, x) => n + x.circuit.opened_count, 0),
    rejected: s.totals.rejected,
  };
  const sc = s.scenario;
  return {
    now: s.now,
    nextAt: nextAt(s),
    paused: s.paused,
    speed: s.speed,
    seed: s.seed,
    scenario: sc ? { id: sc.id, title: sc.title, summary: sc.summary, lesson: sc.lesson } : null,
    counters,
    subscribers,
    deliveries: s.deliveries.map(deliveryView).reverse(),
    deadLetters: s.deadLetters.map(deadLetterView),
    log: s.log.lines.map((l) => ({ ...l })),
    config: JSON.parse(JSON.stringify(s.config)) as LabSnapshot['config'],
  };
};
