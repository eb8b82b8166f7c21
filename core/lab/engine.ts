import { NotFoundError, ValidationError } from '../errors/errors';
import { behave, burst, replay, runCommand, send } from './commands';
import { labConfig, type LabConfig, type LabConfigOverrides } from './config';
import { complete, dispatch } from './deliver';
import { SCENARIOS } from './scenarios';
import { deliveryView, nextAt, snapshotOf } from './snapshot';
import { initialState, type LabState } from './state';
import { at, pushLine } from './text';
import type { Behaviour, Command, DeliveryView, LabSnapshot, Scenario, ScenarioId } from './types';

// The Lab: a pure state machine over a simulated clock. Nothing here reads a real clock,
// a timer or Math.random; every transition is a function of the state, the commands and
// the seed, so the same scenario and seed always tell the same story.

export type LabOptions = { seed?: number; scenario?: ScenarioId | null; config?: LabConfigOverrides };

const checkSeed = (seed: number): number => {
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new ValidationError('seed must be an integer from 0 to 4294967295', 'seed');
  return seed;
};

const scenarioOf = (id: ScenarioId | null | undefined): Scenario | null => {
  if (id == null) return null;
  const sc = SCENARIOS[id];
  if (!sc) throw new NotFoundError(`scenario ${id}`);
  return sc;
};

const presetLine = (st: LabState): void => {
  if (st.scenario) pushLine(st.log, 0, `Preset loaded: ${st.scenario.title}. ${st.script.length} scripted commands on the simulated clock.`);
};

/** Runs what is due at the current moment: commands, answers, due retries, then dispatch. */
const settle = (s: LabState): void => {
  while (s.script.length && s.script[0]!.at <= s.now) runCommand(s, s.script.shift()!.command);
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

/** Advances the clock by ms, settling at every moment something is due on the way. */
const step = (s: LabState, ms: number): void => {
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new ValidationError('step takes a duration in milliseconds ≥ 0', 'ms');
  // The clock is whole milliseconds; fractions (a UI's 16.67 ms frames) carry over.
  const total = s.carry + ms;
  const target = s.now + Math.floor(total);
  s.carry = total - Math.floor(total);
  settle(s);
  for (let t = nextAt(s); t !== null && t <= target; t = nextAt(s)) {
    s.now = t;
    settle(s);
  }
  s.now = target;
};

/** A fresh state at time 0 with `scenario`, its preset told and what is due at 0 settled. */
const startState = (config: LabConfig, seed: number, scenario: ScenarioId | null | undefined, ui?: Pick<LabState, 'paused' | 'speed'>): LabState => {
  const s = { ...initialState(config, checkSeed(seed), scenarioOf(scenario)), ...ui };
  presetLine(s);
  settle(s);
  return s;
};

export const createLab = (o: LabOptions = {}) => {
  const config = labConfig(o.config);
  // The one state of the machine; replaced as a whole by load and reset.
  let s: LabState = startState(config, o.seed ?? 1, o.scenario);

  /** A control: applied at the current moment, then whatever it made possible starts. */
  const act = <T>(fn: (st: LabState) => T): T => {
    const r = fn(s);
    settle(s);
    return r;
  };
  /** Time 0 with `scenario`; pause and speed are the UI's and stay as they were. */
  const load = (scenario: ScenarioId | null, seed = s.seed): void => {
    s = startState(config, seed, scenario, { paused: s.paused, speed: s.speed });
  };

  return {
    snapshot: (): LabSnapshot => snapshotOf(s),
    /** One delivery for an inspector (it may have been trimmed from the table). */
    delivery: (id: string): DeliveryView | null => {
      const d = s.byId.get(id);
      return d ? deliveryView(d) : null;
    },
    step: (ms: number): void => step(s, ms),
    /** A UI frame: advances `wallMs` × speed unless paused (speed is the UI's; the engine only steps). */
    frame: (wallMs: number): void => {
      if (!s.paused) step(s, wallMs * s.speed);
    },
    /** A scripted or keyboard command, as the scenarios use them. */
    command: (c: Command) => act((st) => runCommand(st, c)),
    sendOne: (type?: string) => act((st) => send(st, type)),
    burst: (n: number) => act((st) => burst(st, n)),
    setBehaviour: (id: string, b: Behaviour) => act((st) => behave(st, id, b)),
    fail: (id: string, status = 503) => act((st) => behave(st, id, { kind: 'failing', status })),
    repair: (id: string) => act((st) => behave(st, id, { kind: 'healthy' })),
    replay: (deadLetterId: string) => act((st) => replay(st, deadLetterId)),
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
