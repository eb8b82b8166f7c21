import { expect, it } from 'vitest';
import { encodeWebhook } from '../../core/records/webhook';
import type { PauseScope } from '../../core/ports/guards';
import { CB, CFG, EP, EP2, T0, completion, guardsSuite, params, webhook, type MakeGuards } from './guards.fixtures';

// What a rebuild relies on (core/ports/guards.ts, GuardRestore and the transitions `complete`
// reports), run against every adapter: the transitions are what howk.guards records, and the
// restores put pauses, open circuits and held webhooks back without replacing live state.

const EPS: PauseScope = { kind: 'endpoint', id: EP };
const CFGS: PauseScope = { kind: 'config', id: CFG };
const DAY = 86_400_000;

export const guardsRestoreContract = (name: string, make: MakeGuards): void => {
  guardsSuite(`Guards contract (restore): ${name}`, make, (h) => {
    const { admit1 } = h;
    const fail = (now: number, probe = false) => h.guards.complete([completion({ outcome: 'failure', now, probe })], params());

    it('reports the completions that open, re-open and close a circuit, and only those', async () => {
      expect(await h.guards.complete([completion({ outcome: 'success' })], params())).toEqual([]);
      expect(await fail(T0)).toEqual([]);
      expect(await fail(T0 + 1)).toEqual([]);
      // The third failure opens it; a late failure while OPEN says nothing new.
      const moved = await h.guards.complete([completion({ outcome: 'failure', now: T0 + 2 }), completion({ outcome: 'failure', now: T0 + 3 })], params());
      expect(moved).toEqual([{ endpointHash: EP, state: 'OPEN', at: T0 + 2, openUntil: T0 + 2 + CB.recovery_timeout, openedCount: 1 }]);
      // The probe fails: open again for a probe interval.
      const t1 = T0 + 2 + CB.recovery_timeout;
      expect(await admit1({ now: t1 })).toMatchObject({ kind: 'go', probe: true });
      expect(await fail(t1 + 5, true)).toEqual([{ endpointHash: EP, state: 'OPEN', at: t1 + 5, openUntil: t1 + 5 + CB.probe_interval, openedCount: 1 }]);
      // Two probe successes close it: the first is no transition.
      const t2 = t1 + 5 + CB.probe_interval;
      expect(await admit1({ now: t2 })).toMatchObject({ kind: 'go', probe: true });
      expect(await h.guards.complete([completion({ outcome: 'success', now: t2 + 1, probe: true })], params())).toEqual([]);
      expect(await admit1({ now: t2 + 2 })).toMatchObject({ kind: 'go', probe: true });
      expect(await h.guards.complete([completion({ outcome: 'success', now: t2 + 3, probe: true })], params())).toEqual([
        { endpointHash: EP, state: 'CLOSED', at: t2 + 3, openUntil: 0, openedCount: 1 },
      ]);
    });

    it('restores pauses where none is set, keeping a live drain as it is', async () => {
      await h.guards.pause(CFGS);
      await h.guards.holdPaused(CFGS, 'a');
      expect(await h.guards.resume(CFGS, 'd1', T0, 30_000)).toBe('drain');
      expect(await h.guards.restorePauses([EPS, CFGS])).toBe(1);
      expect(await admit1()).toEqual({ kind: 'paused', scope: 'endpoint' });
      expect(await h.guards.endpoint(EP, T0, params())).toMatchObject({ paused: true, draining: false });
      // The config's drain goes on: the restore did not pause it again.
      expect(await h.guards.takeHeld(CFGS, 'd1', 10, T0, 30_000)).toEqual({ kind: 'batch', items: ['a'] });
    });

    it('opens a restored circuit until its open_until, then lets a probe through; a live open circuit is kept, a closed one replaced', async () => {
      // EP: a failure since the loss (closed). EP2: nothing. The third: re-opened live.
      const EP3 = 'cd'.repeat(16);
      await fail(T0);
      for (let i = 0; i < CB.failure_threshold; i++) await h.guards.complete([completion({ outcome: 'failure', now: T0 + i, endpointHash: EP3 })], params());
      const restore = (hash: string) => ({ endpointHash: hash, openUntil: T0 + 10_000, openedCount: 4, ttlMs: DAY });
      expect(await h.guards.restoreCircuits([restore(EP2), restore(EP), restore(EP3)])).toBe(2);
      for (const hash of [EP, EP2]) {
        expect(await admit1({ endpointHash: hash, now: T0 + 9_999 })).toEqual({ kind: 'park', reason: 'circuit_open', until: T0 + 10_000 });
        expect(await h.guards.endpoint(hash, T0, params())).toMatchObject({ circuit: { state: 'OPEN', open_until: T0 + 10_000, opened_count: 4 } });
        expect(await admit1({ endpointHash: hash, now: T0 + 10_000 })).toMatchObject({ kind: 'go', probe: true });
      }
      expect(await h.guards.endpoint(EP3, T0, params())).toMatchObject({ circuit: { state: 'OPEN', open_until: T0 + 2 + CB.recovery_timeout, opened_count: 1 } });
    });

    it('puts held webhooks back behind a paused scope in order, once each, and says when the scope is not paused', async () => {
      const [a, b, c] = [1, 2, 3].map((i) => encodeWebhook(webhook(i)));
      expect(await h.guards.restoreHeld(EPS, [{ id: 'wh_0001', data: a! }])).toBeNull();
      await h.guards.pause(EPS);
      await h.guards.holdPaused(EPS, b!);
      expect(
        await h.guards.restoreHeld(EPS, [
          { id: 'wh_0001', data: a! },
          { id: 'wh_0002', data: b! },
          { id: 'wh_0003', data: c! },
        ]),
      ).toBe(2);
      expect(await h.guards.restoreHeld(EPS, [{ id: 'wh_0001', data: a! }])).toBe(0);
      expect(await h.guards.peekHeld(EPS, 10)).toEqual([b, a, c]);
      expect(await h.guards.restoreHeld(CFGS, [])).toBe(0);
    });
  });
};
