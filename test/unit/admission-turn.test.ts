import { describe, expect, it } from 'vitest';
import { createAdmission } from '../../core/pipeline/admission';
import { loadConfig } from '../../core/config/load';
import { systemClock } from '../../core/ports/clock';
import { silentLogger } from '../../core/ports/logger';
import type { Admission, Guards } from '../../core/ports/guards';
import { hook } from '../helpers/reconcile-fixtures';

// A worker given its host's end of turn (Node's setImmediate: workers/node/fleet-roles.ts)
// asks the guards then, not after a timer: at a light load every delivery waited at least
// 1 ms for its admission's timer. The calls of one turn still leave together.

const GO: Admission = { kind: 'go', probe: false, counted: { endpoint: false, domain: false } };

const setup = (afterTurn?: (fire: () => void) => void) => {
  const calls: string[][] = [];
  const completions: string[][] = [];
  const guards = {
    admit: async (reqs: { id: string }[]) => (calls.push(reqs.map((r) => r.id)), reqs.map(() => GO)),
    complete: async (done: { id: string }[]) => (completions.push(done.map((c) => c.id)), []),
    renew: async () => {},
  } as unknown as Guards;
  const admission = createAdmission({ config: loadConfig({ env: {} }), clock: systemClock, log: silentLogger, guards, ...(afterTurn ? { afterTurn } : {}) });
  const w = (i: number) => hook(`wh_turn_${i}`, { endpoint: `http://127.0.0.1:9/${i}`, endpoint_hash: String(i).padEnd(32, '0') });
  return { admission, calls, completions, w };
};

/** A host's end of turn the test runs by hand: `turn()` fires what waits for it. */
const handTurn = () => {
  const waiting: (() => void)[] = [];
  return { afterTurn: (fire: () => void) => void waiting.push(fire), turn: () => waiting.splice(0).forEach((f) => f()), waiting };
};

describe('admission at the end of the turn', () => {
  it('asks the guards when the host ends the turn (no timer), the admissions of one turn in one call', async () => {
    const h = handTurn();
    const { admission, calls, w } = setup(h.afterTurn);
    const a = admission.admit(w(1), 'fast');
    const b = admission.admit(w(2), 'fast');
    // Past any 1 ms timer: nothing asked until the turn ends.
    await new Promise((r) => setTimeout(r, 5));
    expect(calls).toEqual([]);
    expect(h.waiting).toHaveLength(1);
    h.turn();
    expect(calls).toEqual([['wh_turn_1', 'wh_turn_2']]);
    expect((await Promise.all([a, b])).map((x) => x.a.kind)).toEqual(['go', 'go']);
  });

  it('records completions when the host ends the turn too', async () => {
    const h = handTurn();
    const { admission, completions, w } = setup(h.afterTurn);
    const got = admission.admit(w(3), 'fast');
    await new Promise((r) => setTimeout(r, 5));
    h.turn();
    const { a, release } = await got;
    admission.record({
      id: 'wh_turn_3',
      endpointHash: w(3).endpoint_hash,
      host: '127.0.0.1',
      now: Date.now(),
      outcome: 'success',
      probe: false,
      counted: a.kind === 'go' ? a.counted : GO.counted,
    });
    release();
    await new Promise((r) => setTimeout(r, 5));
    expect(completions).toEqual([]);
    h.turn();
    expect(completions).toEqual([['wh_turn_3']]);
  });

  it('without it, waits for a timer as before (a host with no end of turn)', async () => {
    const { admission, calls, w } = setup();
    let timerFired = false;
    setTimeout(() => (timerFired = true), 0);
    let before: boolean | undefined;
    await admission.admit(w(4), 'fast').then(() => (before = timerFired));
    expect(calls).toEqual([['wh_turn_4']]);
    expect(before).toBe(true);
  });
});
