import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { createLab, SCENARIO_IDS, SCENARIOS, summarize, type Lab, type LabSnapshot, type ScenarioId } from '../../core/lab';
import { useShortcuts, type Shortcut } from '../keys';
import { CounterPanel, DeadLetters, Log, SubscriberCard, subscriberNames } from './panels';
import { SigningDemo } from './signing';

// The Lab (docs/LAB.md) in the browser: core/lab driven by animation frames. The panels
// re-render ten times a second; the aria-live summary speaks after each control, not on
// every frame.

const BURST = 10;
const REDRAW_MS = 100;
const STEP_MS = 1000;

const initial = (): { scenario: ScenarioId | null; seed: number } => {
  const q = new URLSearchParams(location.search);
  const sc = q.get('scenario');
  const seed = Number(q.get('seed') ?? '1');
  return { scenario: sc === 'none' ? null : SCENARIO_IDS.includes(sc as ScenarioId) ? (sc as ScenarioId) : 'healthy', seed: Number.isInteger(seed) && seed >= 0 ? seed : 1 };
};

type Pick = { scenario: string; seed: string };
/** A control: wraps fn to run it, redraw at once, and say what the state is now. */
type Act = (what: string, fn: () => void) => () => void;
type Controls = Record<'step' | 'send' | 'burst' | 'fail' | 'repair' | 'reset' | 'pause' | 'speed1' | 'speed4', () => void>;

export const LabPage = () => {
  const start = useMemo(initial, []);
  const lab = useMemo(() => createLab(start), []);
  const [snap, setSnap] = useState<LabSnapshot>(() => lab.snapshot());
  const [announce, setAnnounce] = useState('');
  const [pick, setPick] = useState<Pick>({ scenario: start.scenario ?? 'none', seed: String(start.seed) });
  const [target, setTarget] = useState('billing');
  const [error, setError] = useState<string | null>(null);
  useFrames(lab, setSnap);

  const act: Act = (what, fn) => () => {
    try {
      fn();
      setError(null);
      const s = lab.snapshot();
      setSnap(s);
      setAnnounce(`${what}. ${summarize(s, 1)}`);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const load = act('Scenario loaded', () => {
    const seed = Number(pick.seed);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new Error('The seed must be an integer from 0 to 4294967295.');
    lab.load(pick.scenario === 'none' ? null : (pick.scenario as ScenarioId), seed);
  });
  const controls = controlsOf(lab, act, snap, target);
  useShortcuts('Lab', shortcutsOf(controls));

  return (
    <section aria-labelledby="lab-title" class="lab">
      <h1 id="lab-title">Lab</h1>
      <p class="intro">
        A deterministic simulation of Howk's delivery pipeline on its real retry, classification, circuit-breaker and rate-limit code. Nothing here touches the server: it runs in
        this tab.
      </p>
      <ScenarioForm pick={pick} setPick={setPick} onLoad={load} />
      {snap.scenario && (
        <div class="story">
          <p>{snap.scenario.summary}</p>
          <p>
            <strong>Teaches:</strong> {snap.scenario.lesson}
          </p>
        </div>
      )}
      <ControlBar snap={snap} controls={controls} target={target} setTarget={setTarget} />
      {error && <p role="alert">{error}</p>}
      <p class="visually-hidden" aria-live="polite" data-testid="announce">
        {announce}
      </p>
      <CounterPanel c={snap.counters} />
      <section aria-labelledby="subs-title" class="panel">
        <h2 id="subs-title">Subscribers</h2>
        <div class="cards">
          {snap.subscribers.map((s) => (
            <SubscriberCard key={s.id} s={s} onFail={act(`${s.name} now fails with 503`, () => lab.fail(s.id))} onRepair={act(`${s.name} repaired`, () => lab.repair(s.id))} />
          ))}
        </div>
      </section>
      <DeadLetters list={snap.deadLetters} names={subscriberNames(snap)} onReplay={(id) => act(`Replayed ${id}`, () => lab.replay(id))()} />
      <Log lines={snap.log} />
      <SigningDemo />
      <details class="panel">
        <summary>The state in words</summary>
        <p class="summary" data-testid="summary">
          {summarize(snap)}
        </p>
      </details>
    </section>
  );
};

/** Steps the lab on every animation frame; redraws at most every REDRAW_MS. */
const useFrames = (lab: Lab, setSnap: (s: LabSnapshot) => void): void => {
  const last = useRef({ frame: 0, redraw: 0 });
  useEffect(() => {
    let id = 0;
    const loop = (t: number) => {
      const l = last.current;
      // A hidden tab or a long pause does not replay minutes at once.
      if (l.frame) lab.frame(Math.min(t - l.frame, 100));
      l.frame = t;
      if (t - l.redraw >= REDRAW_MS) {
        l.redraw = t;
        setSnap(lab.snapshot());
      }
      id = requestAnimationFrame(loop);
    };
    id = requestAnimationFrame(loop);
    return () => cancelAnimationFrame(id);
  }, [lab]);
};

/** The buttons' and keys' controls; fail and repair act on the chosen subscriber. */
const controlsOf = (lab: Lab, act: Act, snap: LabSnapshot, target: string): Controls => {
  const targetName = snap.subscribers.find((s) => s.id === target)?.name ?? target;
  return {
    step: act('Stepped one simulated second', () => lab.step(STEP_MS)),
    send: act('Sent one event', () => lab.sendOne()),
    burst: act(`Sent a burst of ${BURST} events`, () => lab.burst(BURST)),
    fail: act(`${targetName} now fails with 503`, () => lab.fail(target)),
    repair: act(`${targetName} repaired`, () => lab.repair(target)),
    reset: act('Reset to time 0', () => lab.reset()),
    pause: act(snap.paused ? 'Resumed' : 'Paused', () => lab.togglePause()),
    speed1: act('Speed ×1', () => lab.setSpeed(1)),
    speed4: act('Speed ×4', () => lab.setSpeed(4)),
  };
};

const shortcutsOf = (controls: Controls): Shortcut[] => [
  { key: 'p', label: 'Pause or resume the simulated clock', run: controls.pause },
  { key: '.', label: 'Step one simulated second', run: controls.step },
  { key: 's', label: 'Send one event', run: controls.send },
  { key: 'b', label: `Send a burst of ${BURST} events`, run: controls.burst },
  { key: 'f', label: 'Make the chosen subscriber fail (503)', run: controls.fail },
  { key: 'r', label: 'Repair the chosen subscriber', run: controls.repair },
  { key: '0', label: 'Reset to time 0 (same scenario and seed)', run: controls.reset },
  { key: '1', label: 'Speed ×1', run: controls.speed1 },
  { key: '4', label: 'Speed ×4', run: controls.speed4 },
];

const ScenarioForm = ({ pick, setPick, onLoad }: { pick: Pick; setPick: (p: Pick) => void; onLoad: () => void }) => (
  <form
    class="scenario"
    aria-label="Choose a scenario"
    onSubmit={(e) => {
      e.preventDefault();
      onLoad();
    }}
  >
    <label for="lab-scenario">Scenario</label>
    <select id="lab-scenario" value={pick.scenario} onChange={(e) => setPick({ ...pick, scenario: e.currentTarget.value })}>
      {SCENARIO_IDS.map((id) => (
        <option key={id} value={id}>
          {SCENARIOS[id].title}
        </option>
      ))}
      <option value="none">None (free play)</option>
    </select>
    <label for="lab-seed">Seed</label>
    <input id="lab-seed" type="number" min={0} max={4294967295} step={1} value={pick.seed} onInput={(e) => setPick({ ...pick, seed: e.currentTarget.value })} />
    <button type="submit">Load</button>
  </form>
);

type ControlBarProps = { snap: LabSnapshot; controls: Controls; target: string; setTarget: (id: string) => void };

const ControlBar = ({ snap, controls, target, setTarget }: ControlBarProps) => (
  <div class="controls" role="group" aria-label="Controls">
    <p class="clock" data-testid="clock" data-now={snap.now}>
      {(snap.now / 1000).toFixed(1)} s · seed {snap.seed} · {snap.paused ? 'paused' : `running ×${snap.speed}`}
    </p>
    <button type="button" aria-pressed={snap.paused} aria-keyshortcuts="p" onClick={controls.pause}>
      {snap.paused ? 'Resume' : 'Pause'} (p)
    </button>
    <button type="button" aria-keyshortcuts="." onClick={controls.step}>
      Step 1 s (.)
    </button>
    <button type="button" aria-keyshortcuts="s" onClick={controls.send}>
      Send one (s)
    </button>
    <button type="button" aria-keyshortcuts="b" onClick={controls.burst}>
      Burst {BURST} (b)
    </button>
    <label for="lab-target">Subscriber</label>
    <select id="lab-target" value={target} onChange={(e) => setTarget(e.currentTarget.value)}>
      {snap.subscribers.map((s) => (
        <option key={s.id} value={s.id}>
          {s.name}
        </option>
      ))}
    </select>
    <button type="button" aria-keyshortcuts="f" onClick={controls.fail}>
      Fail (f)
    </button>
    <button type="button" aria-keyshortcuts="r" onClick={controls.repair}>
      Repair (r)
    </button>
    <button type="button" aria-keyshortcuts="0" onClick={controls.reset}>
      Reset (0)
    </button>
    <span role="group" aria-label="Speed" class="speed">
      {[1, 4].map((n) => (
        <button key={n} type="button" aria-pressed={snap.speed === n} aria-keyshortcuts={String(n)} onClick={n === 1 ? controls.speed1 : controls.speed4}>
          ×{n} ({n})
        </button>
      ))}
    </span>
  </div>
);
