import type { Webhook } from '../domain/webhook';
import { NotFoundError, ValidationError } from '../errors/errors';
import { labConfig, type LabConfigOverrides } from './config';
import { complete, dispatch } from './deliver';
import { SCENARIOS } from './scenarios';
import { deliveryView, nextAt, snapshotOf } from './snapshot';
import { initialState, LAB_EPOCH, outstanding, type DeliveryRecord, type LabState, type SubscriberState } from './state';
import { checkBehaviour, describeBehaviour } from './subscriber';
import { at, pushLine } from './text';
import type { Behaviour, Command, DeliveryView, LabSnapshot, ScenarioId } from './types';

// The Lab: a pure state machine over a simulated clock. Nothing here reads a real clock,
// a timer or Math.random; every transition is a function of the state, the commands and
// the seed, so the same scenario and seed always tell the same story.

export type LabOptions = { seed?: number; scenario?: ScenarioId | null; config?: LabConfigOverrides };

const EVENT_TYPES = ['order.created', 'invoice.paid', 'shipment.dispatched'];
const pad = (n: number) => String(n).padStart(4, '0');
const iso = (simMs: number) => new Date(LAB_EPOCH + simMs).toISOString();

const checkSeed = (seed: number): number => {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new ValidationError('seed must be an integer from 0 to 4294967295', 'seed');
  return seed;
};

export const createLab = (o: LabOptions = {}) => {
  const config = labConfig(o.config);
  const scenarioOf = (id: ScenarioId | null | undefined) => {
    if (id == null) return null;
    const sc = SCENARIOS[id];
    if (!sc) throw new NotFoundError(`scenario ${id}`);
    return sc;
  };
  let s: LabState = initialState(config, checkSeed(o.seed ?? 1), scenarioOf(o.scenario));

  const presetLine = (st: LabState) => {
    if (st.scenario) pushLine(st.log, 0, `Preset loaded: ${st.scenario.title}. ${st.script.length} scripted commands on the simulated clock.`);
  };
  presetLine(s);

  const subscriber = (id: string): SubscriberState => {
    const x = s.subs.find((v) => v.spec.id === id);
    if (!x) throw new NotFoundError(`subscriber ${id}`);
    return x;
  };

  const newDelivery = (x: SubscriberState, eventId: string, payload: string, replayOf?: string): DeliveryRecord => {
    const n = ++s.totals.deliveries;
    const webhook: Webhook = {
      id: `wh-${pad(n)}`,
      config_id: x.spec.id,
      endpoint: x.spec.url,
      endpoint_hash: x.spec.id,
      payload,
      headers: {},
      attempt: 0,
      max_attempts: config.maxAttempts,
      deferrals: 0,
      created_at: iso(s.now),
      scheduled_at: iso(s.now),
      ...(replayOf ? { replay_of: replayOf } : {}),
    };
    const d: DeliveryRecord = {
      id: webhook.id,
      seq: n,
      eventId,
      subscriberId: x.spec.id,
      webhook,
      state: 'queued',
      held: null,
      dueAt: null,
      failures: 0,
      requests: 0,
      createdAt: s.now,
      history: [],
    };
    s.deliveries.push(d);
    s.byId.set(d.id, d);
    s.ready.push(d);
    return d;
  };

  const send = (type?: string): string | null => {
    if (outstanding(s) + s.subs.length > config.queueBound) {
      s.totals.rejected++;
      pushLine(s.log, s.now, `Send rejected: ${config.queueBound} deliveries are outstanding (the queue bound).`);
      return null;
    }
    const n = ++s.totals.events;
    const id = `evt-${pad(n)}`;
    const kind = type ?? EVENT_TYPES[(n - 1) % EVENT_TYPES.length]!;
    const payload = JSON.stringify({ id, type: kind, occurred_at: iso(s.now), data: { order_id: `ORD-${10_000 + n}`, amount: 1000 + ((n * 37) % 9000) } });
    for (const x of s.subs) newDelivery(x, id, payload);
    pushLine(s.log, s.now, `Event ${id} (${kind}) accepted: ${s.subs.length} deliveries queued.`);
    return id;
  };

  const burst = (n: number): string[] => {
    if (!Number.isInteger(n) || n < 1) throw new ValidationError('a burst sends an integer number of events ≥ 1', 'n');
    const count = Math.min(n, config.burstBound);
    pushLine(s.log, s.now, `Burst of ${count} events${count < n ? ` (asked for ${n}; clamped to the burst bound)` : ''}.`);
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const id = send();
      if (id) ids.push(id);
    }
    return ids;
  };

  const behave = (id: string, b: Behaviour): void => {
    const x = subscriber(id);
    x.behaviour = checkBehaviour(b);
    pushLine(s.log, s.now, `${x.spec.name} is now ${describeBehaviour(x.behaviour)}.`);
  };

  const run = (c: Command): void => {
    if (c.kind === 'send') send(c.type);
    else if (c.kind === 'burst') burst(c.n);
    else if (c.kind === 'behave') behave(c.subscriber, c.behaviour);
    else if (c.kind === 'fail') behave(c.subscriber, { kind: 'failing', status: c.status ?? 503 });
    else if (c.kind === 'repair') behave(c.subscriber, { kind: 'healthy' });
    else throw new ValidationError('command.kind must be send, burst, behave, fail or repair', 'command.kind');
  };

  const replay = (deadLetterId: string): string | null => {
    const dl = s.deadLetters.find((x) => x.id === deadLetterId);
    if (!dl) throw new NotFoundError(`dead letter ${deadLetterId}`);
    if (outstanding(s) + 1 > config.queueBound) {
      s.totals.rejected++;
      pushLine(s.log, s.now, `Replay of ${dl.id} rejected: ${config.queueBound} deliveries are outstanding (the queue bound).`);
      return null;
    }
    s.totals.replays++;
    const d = newDelivery(subscriber(dl.subscriberId), dl.eventId, dl.payload, dl.id);
    pushLine(s.log, s.now, `Dead letter ${dl.id} replayed as ${d.id}, a new webhook with fresh budgets; ${dl.id} and its history stay as they were.`);
    return d.id;
  };

  /** Runs what is due at the current moment: commands, answers, due retries, then dispatch. */
  const settle = (): void => {
    while (s.script.length && s.script[0]!.at <= s.now) run(s.script.shift()!.command);
    const done = s.flights.filter((f) => f.endsAt <= s.now).sort((a, b) => a.endsAt - b.endsAt || a.seq - b.seq);
    if (done.length) {
      s.flights = s.flights.filter((f) => f.endsAt > s.now);
      for (const f of done) complete(s, f);
    }
    const due = s.deliveries.filter((d) => d.state === 'waiting' && d.dueAt! <= s.now).sort((a, b) => a.dueAt! - b.dueAt! || a.seq - b.seq);
    for (const d of due) {
      d.state = 'queued';
      d.dueAt = null;
      s.ready.push(d);
    }
    dispatch(s);
  };

  /** A control: applied at the current moment, then whatever it made possible starts. */
  const act = <T>(fn: () => T): T => {
    const r = fn();
    settle();
    return r;
  };

  const step = (ms: number): void => {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new ValidationError('step takes a duration in milliseconds ≥ 0', 'ms');
    // The clock is whole milliseconds; fractions (a UI's 16.67 ms frames) carry over.
    const total = s.carry + ms;
    const target = s.now + Math.floor(total);
    s.carry = total - Math.floor(total);
    settle();
    for (let t = nextAt(s); t !== null && t <= target; t = nextAt(s)) {
      s.now = t;
      settle();
    }
    s.now = target;
  };

  /** Time 0 with `scenario`; pause and speed are the UI's and stay as they were. */
  const load = (scenario: ScenarioId | null, seed = s.seed): void => {
    const { paused, speed } = s;
    s = { ...initialState(config, checkSeed(seed), scenarioOf(scenario)), paused, speed };
    presetLine(s);
    settle();
  };

  settle();

  return {
    snapshot: (): LabSnapshot => snapshotOf(s),
    /** One delivery for an inspector (it may have been trimmed from the table). */
    delivery: (id: string): DeliveryView | null => {
      const d = s.byId.get(id);
      return d ? deliveryView(d) : null;
    },
    step,
    /** A UI frame: advances `wallMs` × speed unless paused (speed is the UI's; the engine only steps). */
    frame: (wallMs: number): void => {
      if (!s.paused) step(wallMs * s.speed);
    },
    /** A scripted or keyboard command, as the scenarios use them. */
    command: (c: Command) => act(() => run(c)),
    sendOne: (type?: string) => act(() => send(type)),
    burst: (n: number) => act(() => burst(n)),
    setBehaviour: (id: string, b: Behaviour) => act(() => behave(id, b)),
    fail: (id: string, status = 503) => act(() => behave(id, { kind: 'failing', status })),
    repair: (id: string) => act(() => behave(id, { kind: 'healthy' })),
    replay: (deadLetterId: string) => act(() => replay(deadLetterId)),
    /** Back to time 0 with the same scenario; the same seed unless another is given. */
    reset: (seed?: number) => load(s.scenario?.id ?? null, seed),
    load,
    pause: () => void (s.paused = true),
    resume: () => void (s.paused = false),
    togglePause: () => void (s.paused = !s.paused),
    setSpeed: (speed: number) => {
      if (!Number.isFinite(speed) || speed <= 0) throw new ValidationError('speed must be a number > 0', 'speed');
      s.speed = speed;
    },
    /** When the clock is: "12.3 s". */
    clock: () => at(s.now),
  };
};

export type Lab = ReturnType<typeof createLab>;
