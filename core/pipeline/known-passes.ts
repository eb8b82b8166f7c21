import type { Webhook } from '../domain/webhook';
import { retryUntil } from '../domain/retry-until';
import { errorMessage } from '../errors/errors';
import type { Clock } from '../ports/clock';
import type { EndedLookup, SentMark } from '../ports/hot-state';
import type { Logger } from '../ports/logger';
import type { Step } from './attempt';
import type { RecentOutcomes } from './recent-outcomes';
import { replayedStep } from './sent-marks';

type Stored = { ended: Map<string, number>; sent: Map<string, SentMark> };

/**
 * A webhook its lane reaches this long after its batch's lookup is looked up again before it
 * is sent (with the rest of the batch, in one round trip). A partition moved between live
 * workers: its old owner's deliveries on the wire get their 2xx (and marks) after the new
 * owner looked up, and under a backlog the new owner's lanes reach them tens of seconds later
 * (the copies 10-40 s after the first of the loaded full kill -9 chaos runs).
 */
export const RECHECK_AFTER_MS = 500;

/** Ended statuses and sent marks of `ids` in one round trip (ended statuses only, where the store keeps no marks). */
const readStored = async (ended: EndedLookup, ids: string[]): Promise<Stored> => (ended.lookup ? ended.lookup(ids) : { ended: await ended.endedAttempts(ids), sent: new Map() });

export type KnownDeps = {
  recent: RecentOutcomes;
  ended?: EndedLookup;
  clock: Clock;
  log: Logger;
  /**
   * While the lookup fails (Redis away), ask again this often instead of attempting the
   * webhooks (degraded.recheck_interval): unset, a failed lookup knows nothing.
   */
  lookupRetryMs?: number;
  /** True once the worker is stopping: a lookup still waiting then gives up (its batch stays uncommitted). */
  isStopping?: () => boolean;
  /**
   * True while this worker knows Redis does not answer (admission went local): the batch's
   * lookup is not asked again then. Each webhook of a lane would otherwise wait for its
   * re-read to fail (up to a second on a stopped Redis) before being attempted locally.
   */
  away?: () => boolean;
};

/** The batch's lookup; while Redis is away, asked again every lookupRetryMs when it has one (see knownPasses). */
const lookup = (d: KnownDeps, ended: EndedLookup, ids: string[], afterAssignment: boolean): Promise<Stored> => {
  const every = d.lookupRetryMs;
  // Past the partition's end at assignment its last owner had none of them: the lookup is
  // kept while Redis answers (it costs nothing then), not waited for while it does not.
  if (every === undefined || afterAssignment)
    return readStored(ended, ids).catch((e: unknown) => {
      d.log.warn('ended statuses not read; webhooks consumed again are attempted', { error: errorMessage(e) });
      return { ended: new Map(), sent: new Map() };
    });
  return retryUntil(() => readStored(ended, ids), {
    baseMs: every,
    capMs: every,
    retryIf: () => !d.isStopping?.(),
    onRetry: (e) => d.log.warn('ended statuses not read; webhooks consumed again wait for Redis', { error: errorMessage(e), webhooks: ids.length }),
  });
};

/**
 * The webhooks of one batch whose pass needs no attempt because it was made already, and
 * whose outcome is therefore written (or being written) by the pass that made it
 * (docs/RELIABILITY.md, *Duplicates*):
 * - made by this worker (RecentOutcomes): a rewound partition, a consumer restarted after a
 *   crash or a broker outage, a retry re-enqueued twice. Its batch commits only once that
 *   outcome is durable (`durable`).
 * - ended in the status store (delivered, failed, exhausted at this pass or later), looked up
 *   only for a batch that may have been consumed before by another owner (`maybeSeen`: the
 *   first records of a partition this consumer was just given): a worker killed after
 *   writing its outcomes and before its commit. A status is written after the outcome's
 *   Kafka records, so an ended one is durable. The lookup is one round trip for the batch,
 *   started at once. A failed lookup is asked again (lookupRetryMs) while Redis is away: what a
 *   partition's last owner delivered is known only there, and attempting it blind could send
 *   it twice (docs/RELIABILITY.md, "Redis unreachable"); without lookupRetryMs it knows nothing.
 */
export const knownPasses = (d: KnownDeps, hooks: readonly Webhook[], maybeSeen: boolean | readonly Webhook[], afterAssignment = false) => {
  // All of a batch that may have been consumed before, or only the records the scheduler put back.
  const asked = maybeSeen === true ? hooks : maybeSeen === false ? [] : maybeSeen;
  const stored =
    d.ended && asked.length
      ? lookup(
          d,
          d.ended,
          asked.map((w) => w.id),
          afterAssignment,
        )
      : undefined;
  stored?.catch(() => {}); // met again by each webhook's check
  let latest = stored && { at: d.clock.now(), p: stored };
  const reached = new Set<Webhook>();
  /** The lookup, asked again when it is older than RECHECK_AFTER_MS; a failed re-check keeps what was known. */
  const current = (earlier: Promise<Stored>): Promise<Stored> => {
    if (!latest || !d.ended || d.away?.() || d.clock.now() - latest.at < RECHECK_AFTER_MS) return latest?.p ?? earlier;
    // The webhooks not reached yet (this one included): those reached have been decided.
    const ids = asked.filter((x) => !reached.has(x)).map((x) => x.id);
    const ended = d.ended;
    const again = earlier.then((before) => readStored(ended, ids).catch(() => before));
    latest = { at: d.clock.now(), p: again };
    return again;
  };
  const waits: Promise<void>[] = [];
  // Found known when the batch's stragglers were leased: known for the rest of the batch,
  // even if the memory forgets them before their lane reaches them (the batch commits on it).
  const pinned = new Set<Webhook>();
  let skipped = 0;
  const known = (w: Webhook): Step => {
    skipped++;
    return { kind: 'known', webhook: w, at: d.clock.now() };
  };
  let replayed = 0;
  /** What the status store says of `w`'s pass: made (known), answered 2xx (replayed from its mark), or nothing. */
  const stepOf = (w: Webhook, { ended, sent }: Stored): Step | undefined => {
    const attempts = ended.get(w.id);
    // attempts counts every pass made (attempt + deferrals + 1): past this one, it was made.
    if (attempts !== undefined && attempts > w.attempt + w.deferrals) return known(w);
    // This very pass was answered 2xx and its outcome not written (its worker died first):
    // the outcome is written now, from the mark, and nothing is sent (sent-marks.ts).
    const mark = sent.get(w.id);
    if (mark?.pass !== w.attempt + w.deferrals) return undefined;
    replayed++;
    return replayedStep(w, mark);
  };
  const fromStore = async (w: Webhook, lookup: Promise<Stored>): Promise<Step | undefined> => {
    const now = current(lookup);
    reached.add(w);
    return stepOf(w, await now);
  };
  const copies = d.ended ? new Set(asked) : undefined;
  /** Whether this batch's lookup (if any) has `w` ended past its pass; a failed lookup knows nothing. */
  const endedPast = async (w: Webhook): Promise<boolean> => {
    const attempts = stored && (await stored.then((s) => s.ended.get(w.id)).catch(() => undefined));
    return attempts !== undefined && attempts > w.attempt + w.deferrals;
  };
  return {
    /** A 'known' step for `w`, or undefined when it is to be attempted (a promise only while the lookup is out). */
    check(w: Webhook): Step | undefined | Promise<Step | undefined> {
      if (pinned.has(w)) return { kind: 'known', webhook: w, at: d.clock.now() };
      const mine = d.recent.known(w);
      if (mine !== undefined) {
        if (mine !== true) {
          // Handled here too: a copy checked again after its batch resolved is awaited by nobody.
          mine.catch(() => {});
          waits.push(mine);
        }
        return known(w);
      }
      return stored ? fromStore(w, stored) : undefined;
    },
    /** True when this worker made `w`'s pass: it then stays known for the batch, and the batch awaits its outcome. */
    pin(w: Webhook): boolean {
      if (!d.recent.has(w) || !this.check(w)) return false;
      pinned.add(w);
      return true;
    },
    /**
     * Another copy of `w`'s pass, consumed earlier by this worker, is still running: this copy
     * stays known for the batch (not leased). Its lease would replace the retry the earlier
     * copy's outcome may already have scheduled, and acking it once this copy turns out known
     * would leave the webhook with nothing scheduled. The batch commits only once that copy's
     * outcome is durable (`earlier`: the copy's run), not once it is leased: the lease may be
     * gone already. It is what brings a copy enqueued again by the scheduler (a lease that ran
     * out under a stalled worker, then acked): committing that copy, skipped, while the first
     * still ran lost the webhook when this worker died before the first one's outcome.
     */
    pinCopy(w: Webhook, earlier: Promise<unknown>): true {
      pinned.add(w);
      const made = async (): Promise<void> => {
        const k = d.recent.known(w);
        // Ended at this pass or later in the status store, the rule every copy meets: the
        // earlier copy was skipped for it (a new owner's first batch holding a pass twice),
        // and rejecting would rewind the partition only to skip both copies again.
        if (k === undefined && (await endedPast(w))) return;
        // Given up, or forgotten: the batch is not committed, and its copy comes again.
        if (k === undefined) throw new Error('an earlier copy of this pass ended without its outcome');
        if (k !== true) await k;
      };
      const durable = earlier.then(made, made);
      durable.catch(() => {});
      waits.push(durable);
      return true;
    },
    /** Whether another worker may still be sending `w`: it was consumed before, and the status store can tell once that delivery ends. */
    copy: (w?: Webhook): boolean => w !== undefined && copies?.has(w) === true,
    /** `w` looked up again on its own, now (a delivery of it elsewhere just ended): a 'known' or replayed step, or undefined to attempt it. */
    recheck: async (w: Webhook): Promise<Step | undefined> => {
      if (!d.ended) return undefined;
      const found = await readStored(d.ended, [w.id]).catch(() => undefined);
      return found && stepOf(w, found);
    },
    /** Resolves once the outcome of every pass found here is durable; rejects when one will not be written. */
    durable: (): Promise<unknown> => (waits.length ? Promise.all(waits) : Promise.resolve()),
    skipped: () => skipped,
    /** Webhooks whose outcome was written from a sent mark, not sent. */
    replayed: () => replayed,
  };
};

export type KnownPasses = ReturnType<typeof knownPasses>;
