import type { Webhook } from '../domain/webhook';
import type { Step } from './attempt';
import type { DeliveryCtx } from './delivery-context';
import type { Leased } from './handoff';
import type { KnownPasses } from './known-passes';
import { afterElsewhere } from './elsewhere';

/** One batch on its way: its webhooks, what has become of each, and its config lanes. */
export type BatchRun = {
  hooks: Webhook[];
  /** Steps of webhooks not handed off, written with the batch (or by its ticker). */
  steps: Step[];
  finished: Set<Webhook>;
  leased: Map<Webhook, Leased>;
  /** When each config lane of the batch not yet done started. */
  progress: Map<string, number>;
  known: KnownPasses;
  onStep: (w: Webhook, s: Step) => void;
  /** Webhooks a cut lane gives up unattempted (a stop). */
  onCut: (ws: Webhook[]) => void;
  /** A webhook not to start: its partition went to another owner. */
  lost: (w: Webhook) => boolean;
};

/**
 * One config lane: its webhooks in order, `kafka.per_key_parallelism` at a time, each first
 * checked against what is known of its pass, then (slow lane) paced, then attempted.
 */
const runLane = async (x: DeliveryCtx, run: BatchRun, key: string, items: Webhook[], prev: Promise<void> | undefined, start: number) => {
  const { d } = x;
  let next = 0;
  // Its webhooks not taken yet are given up (a stop: at once, not after the one in flight).
  const cut = () => {
    if (next >= items.length) return;
    x.attempter.discard(items[next]!); // what was asked ahead for it is given back
    run.onCut(items.splice(next));
  };
  x.cuts.add(cut);
  try {
    if (prev) await prev;
    const n = Math.min(x.config.kafka.per_key_parallelism, items.length);
    // Asking ahead for the next webhook only works when this worker is the one that takes
    // it: with parallel workers another may, and the answer asked ahead (a lease and a
    // connection slot on a 'go') would be held by nobody.
    const ahead = n === 1;
    const worker = async () => {
      while (next < items.length && !x.state.stopping && !run.lost(items[next]!)) {
        const w = items[next++]!;
        let seen = run.known.check(w);
        if (seen instanceof Promise) seen = await seen;
        if (seen)
          x.attempter.discard(w); // what was asked ahead for it is given back
        // Slow lane: each endpoint at its own pace (limit / latency).
        else if (d.pacer) await d.pacer.pace(w.endpoint_hash);
        const copy = !seen && run.known.copy(w) ? run.known : undefined;
        // A copy is not asked for ahead: its admission must ask whether it is on the wire elsewhere.
        let step = seen ?? (await x.attemptOne({ webhook: w, next: ahead && !run.known.copy(items[next]) ? items[next] : undefined, fetchedAt: start, copy }));
        if (step.kind === 'elsewhere') step = await afterElsewhere(x, run, w, step, start);
        if (!seen) x.marks.step(step);
        run.onStep(w, step);
        x.moved.set(key, d.clock.now());
      }
    };
    await (n === 1 ? worker() : Promise.all(Array.from({ length: n }, worker)));
  } finally {
    cut();
    x.cuts.delete(cut);
    run.progress.delete(key);
  }
};

/** Runs the batch's lanes (one per config), each queued behind that config's lane of an earlier batch. */
export const runLanes = (x: DeliveryCtx, run: BatchRun): Promise<void> => {
  const groups = new Map<string, Webhook[]>();
  for (const w of run.hooks) {
    const g = groups.get(w.config_id);
    if (g) g.push(w);
    else groups.set(w.config_id, [w]);
  }
  const start = x.d.clock.now();
  const lanes = [...groups].map(([key, items]) => {
    const prev = x.tails.get(key);
    run.progress.set(key, start);
    // A lane is a few webhooks of a batch (one config each): its own promises are kept few.
    const lane = runLane(x, run, key, items, prev, start);
    const ended = () => {
      if (x.tails.get(key) !== tail) return;
      x.tails.delete(key);
      x.moved.delete(key);
    };
    const tail: Promise<void> = lane.then(ended, ended);
    x.tails.set(key, tail);
    return lane;
  });
  return Promise.all(lanes).then(() => undefined);
};
