import { expect, it } from 'vitest';
import { decodeWebhook, encodeWebhook } from '../../core/records/webhook';
import { MemoryLog } from '../../core/memory/log';
import { resumeAndDrain } from '../../core/pipeline/pause';
import type { PauseScope } from '../../core/ports/guards';
import type { LogProducer, LogRecord } from '../../core/ports/log';
import { CFG, EP, EP2, T0, guardsSuite, params, req, webhook, type MakeGuards } from './guards.fixtures';

// Pause, hold, resume and drain (core/ports/guards.ts), run against every adapter. The drain
// is owned by one resume at a time (a lease), and the webhooks it moves pass its pause.

const L = 30_000;
const EPS: PauseScope = { kind: 'endpoint', id: EP };
const CFGS: PauseScope = { kind: 'config', id: CFG };

export const guardsPauseContract = (name: string, make: MakeGuards): void => {
  guardsSuite(`Guards contract (pause): ${name}`, make, (h) => {
    const { admit1 } = h;

    it('holds only while paused, in arrival order; peek does not remove', async () => {
      expect(await h.guards.holdPaused(CFGS, 'early')).toBe('gone');
      expect(await h.guards.peekHeld(CFGS, 10)).toEqual([]);
      await h.guards.pause(CFGS);
      for (const d of ['a', 'b', 'c', 'd']) expect(await h.guards.holdPaused(CFGS, d)).toBe('held');
      expect(await h.guards.peekHeld(CFGS, 10)).toEqual(['a', 'b', 'c', 'd']);
      expect(await h.guards.peekHeld(CFGS, 2)).toEqual(['a', 'b']);
      expect(await h.guards.peekHeld(CFGS, 0)).toEqual([]);
      expect(await h.guards.peekHeld({ kind: 'endpoint', id: CFG }, 10)).toEqual([]);
    });

    it('keeps queueing arrivals while draining; the pause ends when the drain empties the queue', async () => {
      await h.guards.pause(CFGS);
      await h.guards.holdPaused(CFGS, 'a');
      await h.guards.holdPaused(CFGS, 'b');
      expect(await h.guards.resume(CFGS, 'd1', T0, L)).toBe('drain');
      expect(await admit1()).toEqual({ kind: 'paused', scope: 'config' });
      expect(await h.guards.holdPaused(CFGS, 'c')).toBe('held');
      expect(await h.guards.takeHeld(CFGS, 'd1', 1, T0, L)).toEqual({ kind: 'batch', items: ['a'] });
      expect(await h.guards.dropHeld(CFGS, 'd1', 1)).toBe(2);
      expect(await h.guards.takeHeld(CFGS, 'd1', 10, T0, L)).toEqual({ kind: 'batch', items: ['b', 'c'] });
      expect(await h.guards.dropHeld(CFGS, 'd1', 2)).toBe(0);
      expect(await admit1()).toMatchObject({ kind: 'go' });
      expect(await h.guards.holdPaused(CFGS, 'd')).toBe('gone');
      expect(await h.guards.endpoint(EP, T0, params())).toMatchObject({ paused: false, draining: false });
    });

    it('drops nothing for a drain that does not own the scope (a pause without a resume stays)', async () => {
      await h.guards.pause(EPS);
      await h.guards.holdPaused(EPS, 'a');
      expect(await h.guards.dropHeld(EPS, 'x', 5)).toBe(-1);
      expect(await h.guards.takeHeld(EPS, 'x', 5, T0, L)).toEqual({ kind: 'lost' });
      expect(await h.guards.peekHeld(EPS, 10)).toEqual(['a']);
      expect(await admit1()).toEqual({ kind: 'paused', scope: 'endpoint' });
    });

    it('ends a resumed pause with nothing held at the first take', async () => {
      await h.guards.pause(EPS);
      expect(await h.guards.resume(EPS, 'd1', T0, L)).toBe('drain');
      expect(await h.guards.endpoint(EP, T0, params())).toMatchObject({ paused: false, draining: true });
      expect(await h.guards.takeHeld(EPS, 'd1', 10, T0, L)).toEqual({ kind: 'done' });
      expect(await admit1()).toMatchObject({ kind: 'go' });
      expect(await h.guards.endpoint(EP, T0, params())).toMatchObject({ paused: false, draining: false });
    });

    it('a pause during the drain stops it at its next step, keeping what is held, and frees the scope', async () => {
      await h.guards.pause(CFGS);
      for (const d of ['a', 'b', 'c']) await h.guards.holdPaused(CFGS, d);
      await h.guards.resume(CFGS, 'd1', T0, L);
      expect(await h.guards.takeHeld(CFGS, 'd1', 2, T0, L)).toEqual({ kind: 'batch', items: ['a', 'b'] });
      await h.guards.pause(CFGS);
      expect(await h.guards.endpoint(EP, T0, params())).toMatchObject({ paused: false }); // a config pause
      // The batch taken before the pause was produced: it is dropped all the same.
      expect(await h.guards.dropHeld(CFGS, 'd1', 2)).toBe(1);
      expect(await h.guards.takeHeld(CFGS, 'd1', 2, T0, L)).toEqual({ kind: 'paused' });
      expect(await admit1()).toEqual({ kind: 'paused', scope: 'config' });
      expect(await h.guards.holdPaused(CFGS, 'd', ['d1'])).toBe('held');
      expect(await h.guards.peekHeld(CFGS, 10)).toEqual(['c', 'd']);
      // The lease was given up: the next resume drains at once, well within the old lease.
      expect(await h.guards.resume(CFGS, 'd2', T0 + 1, L)).toBe('drain');
      expect(await h.guards.takeHeld(CFGS, 'd1', 10, T0 + 1, L)).toEqual({ kind: 'lost' });
      expect(await h.guards.takeHeld(CFGS, 'd2', 10, T0 + 1, L)).toEqual({ kind: 'batch', items: ['c', 'd'] });
    });

    it('one drain at a time: a second resume leaves the scope to the live one until its lease ends', async () => {
      await h.guards.pause(EPS);
      await h.guards.holdPaused(EPS, 'a');
      expect(await h.guards.resume(EPS, 'd1', T0, L)).toBe('drain');
      expect(await h.guards.takeHeld(EPS, 'd1', 10, T0 + 1000, L)).toEqual({ kind: 'batch', items: ['a'] });
      // Paused and resumed again while d1 produces: d1 keeps the scope, d2 moves nothing.
      await h.guards.pause(EPS);
      expect(await h.guards.resume(EPS, 'd2', T0 + 2000, L)).toBe('running');
      expect(await h.guards.takeHeld(EPS, 'd2', 10, T0 + 2000, L)).toEqual({ kind: 'lost' });
      expect(await h.guards.dropHeld(EPS, 'd2', 1)).toBe(-1);
      expect(await h.guards.peekHeld(EPS, 10)).toEqual(['a']);
      // d1 renewed its lease at its last take (T0 + 1000); it stalls, and past the lease d3 takes over.
      expect(await h.guards.resume(EPS, 'd3', T0 + 1000 + L - 1, L)).toBe('running');
      expect(await h.guards.resume(EPS, 'd3', T0 + 1000 + L + 1, L)).toBe('drain');
      expect(await h.guards.dropHeld(EPS, 'd1', 1)).toBe(-1);
      expect(await h.guards.takeHeld(EPS, 'd3', 10, T0 + 1000 + L + 1, L)).toEqual({ kind: 'batch', items: ['a'] });
    });

    it('a webhook the current drain released passes its draining pause, and only that one', async () => {
      await h.guards.pause(CFGS);
      await h.guards.pause(EPS);
      await h.guards.resume(CFGS, 'd1', T0, L);
      expect(await h.guards.holdPaused(CFGS, 'x', ['d0'])).toBe('held');
      expect(await h.guards.holdPaused(CFGS, 'y', ['d0', 'd1'])).toBe('released');
      expect(await admit1({ passPause: ['config'] })).toEqual({ kind: 'paused', scope: 'endpoint' });
      expect(await h.guards.holdPaused(EPS, 'y', ['d1'])).toBe('held');
      await h.guards.resume(EPS, 'e1', T0, L);
      expect(await admit1({ passPause: ['config', 'endpoint'] })).toMatchObject({ kind: 'go' });
      // Paused again: the drain's webhooks are held like any other.
      await h.guards.pause(CFGS);
      expect(await h.guards.holdPaused(CFGS, 'z', ['d1'])).toBe('held');
      expect(await h.guards.peekHeld(CFGS, 10)).toEqual(['x', 'z']);
    });

    it('does nothing on resume of a scope that is not paused', async () => {
      expect(await h.guards.resume(CFGS, 'd1', T0, L)).toBe('none');
      expect(await admit1()).toMatchObject({ kind: 'go' });
      expect(await h.guards.dropHeld(CFGS, 'd1', 3)).toBe(-1);
      expect(await h.guards.holdPaused(CFGS, 'a')).toBe('gone');
    });

    it('resumeAndDrain releases every held webhook to the pending topic in order, across batches, marked with its drain', async () => {
      const log = new MemoryLog(4);
      await h.guards.pause(CFGS);
      const held = Array.from({ length: 450 }, (_, i) => webhook(i));
      for (const w of held) expect(await h.guards.holdPaused(CFGS, encodeWebhook(w))).toBe('held');
      expect(await resumeAndDrain(h.guards, log.producer(), 'howk.pending', CFGS, () => T0)).toEqual({ released: 450, outcome: 'drained' });
      const out = log.records('howk.pending').map((r) => ({ key: r.key, w: decodeWebhook(r.value ?? '') }));
      expect(out.map((r) => r.w.id)).toEqual(held.map((w) => w.id));
      expect(out.every((r) => r.key === CFG)).toBe(true);
      expect(out.map((r) => r.w.payload)).toEqual(held.map((w) => w.payload));
      expect(new Set(out.map((r) => r.w.released_by?.length))).toEqual(new Set([1]));
      expect(await h.guards.peekHeld(CFGS, 1000)).toEqual([]);
      expect(await admit1()).toMatchObject({ kind: 'go' });
      expect(await h.guards.holdPaused(CFGS, encodeWebhook(webhook(999)))).toBe('gone');
    });

    it('resumeAndDrain also releases arrivals that queue during the drain, after the earlier ones', async () => {
      const log = new MemoryLog(4);
      await h.guards.pause(EPS);
      const first = Array.from({ length: 250 }, (_, i) => webhook(i));
      const late = Array.from({ length: 3 }, (_, i) => webhook(1000 + i, 'cfg_late'));
      for (const w of first) await h.guards.holdPaused(EPS, encodeWebhook(w));
      const producer = log.producer();
      let arrived = false;
      const racing: LogProducer = {
        send: async (records) => {
          await producer.send(records);
          if (arrived) return;
          arrived = true;
          for (const w of late) expect(await h.guards.holdPaused(EPS, encodeWebhook(w))).toBe('held');
        },
        close: () => producer.close(),
      };
      expect(await resumeAndDrain(h.guards, racing, 'howk.pending', EPS, () => T0)).toEqual({ released: 253, outcome: 'drained' });
      const ids = log.records('howk.pending').map((r) => decodeWebhook(r.value ?? '').id);
      expect(ids).toEqual([...first, ...late].map((w) => w.id));
      expect(await h.guards.endpoint(EP, T0, params())).toMatchObject({ paused: false, draining: false, parked_while_paused: 0 });
    });

    it('pause and resume toggled during drains with a worker re-admitting: every webhook moves and is delivered once, every resume answers', async () => {
      // The "worker": every produced webhook is admitted again at once, as a worker reading
      // the pending topic would; paused ones are held (or pass, when their drain released them).
      const delivered = new Map<string, number>();
      let produced = 0;
      const worker = async (records: LogRecord[]) => {
        for (const r of records) {
          const w = decodeWebhook(r.value ?? '');
          produced++;
          const pass: PauseScope['kind'][] = [];
          for (let guard = 0; ; guard++) {
            if (guard > 5) throw new Error(`webhook ${w.id} goes round the pause`);
            const a = (await h.guards.admit([req({ passPause: [...pass] })], params()))[0]!;
            if (a.kind !== 'paused') {
              delivered.set(w.id, (delivered.get(w.id) ?? 0) + 1);
              break;
            }
            const held = await h.guards.holdPaused(CFGS, r.value ?? '', w.released_by);
            if (held === 'held') break;
            if (held === 'released') pass.push('config');
          }
        }
      };
      let sends = 0;
      const resumes: Promise<unknown>[] = [];
      const producer: LogProducer = {
        send: async (records) => {
          await worker(records);
          // A pause, then a second resume racing the first drain, on every other batch.
          if (++sends % 2 === 1) {
            await h.guards.pause(CFGS);
            resumes.push(resumeAndDrain(h.peer, producer, 'howk.pending', CFGS, () => T0));
          }
        },
        close: async () => {},
      };
      await h.guards.pause(CFGS);
      const ids = Array.from({ length: 1000 }, (_, i) => webhook(i).id);
      for (let i = 0; i < 1000; i++) await h.guards.holdPaused(CFGS, encodeWebhook(webhook(i)));
      const first = await resumeAndDrain(h.guards, producer, 'howk.pending', CFGS, () => T0);
      expect(['paused', 'drained']).toContain(first.outcome);
      // Every resume answers; resume until the pause has ended.
      for (let round = 0; round < 50; round++) {
        await Promise.all(resumes.splice(0));
        const r = await resumeAndDrain(h.guards, { send: worker, close: async () => {} }, 'howk.pending', CFGS, () => T0);
        if (r.outcome === 'drained' || r.outcome === 'not_paused') break;
      }
      await Promise.all(resumes.splice(0));
      expect(await h.guards.peekHeld(CFGS, 10)).toEqual([]);
      expect([...delivered.keys()].sort()).toEqual(ids);
      expect([...delivered.values()].every((n) => n === 1)).toBe(true);
      // Nothing was moved twice by one drain; a webhook moves again only after a pause held it again.
      expect(produced).toBeLessThan(3000);
      expect(await admit1()).toMatchObject({ kind: 'go' });
    });
  });
};

/** What admission answers for a paused scope (part of guardsContract; hold, resume and drain above). */
export const pauseAdmissionCases = (make: MakeGuards): void => {
  guardsSuite('pause, hold, resume, drain', make, (h) => {
    const { admit1, openAt, state } = h;
    it('answers paused for a paused endpoint or config, endpoint first', async () => {
      await h.guards.pause(CFGS);
      expect(await admit1()).toEqual({ kind: 'paused', scope: 'config' });
      expect(await admit1({ configId: 'cfg_other' })).toMatchObject({ kind: 'go' });
      await h.guards.pause(EPS);
      expect(await admit1()).toEqual({ kind: 'paused', scope: 'endpoint' });
      expect(await admit1({ configId: 'cfg_other' })).toEqual({ kind: 'paused', scope: 'endpoint' });
      expect(await admit1({ endpointHash: EP2, configId: 'cfg_other' })).toMatchObject({ kind: 'go' });
    });

    it('pauses before the circuit: a paused scope takes no probe', async () => {
      const openUntil = await openAt();
      await h.guards.pause(EPS);
      expect(await admit1({ now: openUntil })).toEqual({ kind: 'paused', scope: 'endpoint' });
      expect(await state(openUntil - 1)).toMatchObject({ state: 'OPEN' });
    });
  });
};
