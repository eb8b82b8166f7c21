import { settleWithin } from '../../core/domain/deadline';
import { KafkaTopicReader } from '../../workers/kafka/topic-reader';
import { uniq } from '../helpers/env';

// The whole story Kafka keeps of a few webhooks, for the report of a run that lost one: every
// record of theirs on the delivery, state and results topics (a lost retry shows there as the
// pass whose outcome scheduled it, and whatever came after), and the fleet's log lines that
// name them. Read after the run, from the earliest offsets; bounded in records and in time.

const TOPICS = ['pending', 'slow', 'state', 'results', 'deadletter'];
/** Fields worth a line on the timeline, from whatever record kind carries them. */
const FIELDS = ['attempt', 'deferrals', 'state', 'attempts', 'next_retry_at', 'held', 'outcome', 'decision', 'error', 'worker', 'at'];
const MAX_PER_ID = 40;

type Line = { topic: string; p: number; offset: string; at: number; headers?: string[]; v: Record<string, unknown> | null };

const summary = (value: string | null): Record<string, unknown> | null => {
  if (value === null) return null; // a tombstone
  try {
    const o = JSON.parse(value) as Record<string, unknown>;
    const flat = { ...o, ...(typeof o.webhook === 'object' && o.webhook ? (o.webhook as Record<string, unknown>) : {}) };
    return Object.fromEntries(FIELDS.filter((f) => flat[f] !== undefined).map((f) => [f, typeof flat[f] === 'object' ? JSON.stringify(flat[f]).slice(0, 120) : flat[f]]));
  } catch {
    return { unparsed: value.slice(0, 80) };
  }
};

/** Each id's records on the fleet's topics (offset order per partition), and its log lines. */
export const webhookHistory = async (brokers: string[], prefix: string, ids: string[], logs: { role: string; out: string }[]) => {
  const wanted = new Set(ids);
  const out = new Map<string, Line[]>(ids.map((id) => [id, []]));
  const reader = new KafkaTopicReader({ brokers, clientId: 'chaos-history', groupPrefix: uniq('chaos-history') });
  try {
    for (const t of TOPICS) {
      await reader.readToEnd(
        `${prefix}.${t}`,
        async (b) => {
          for (const r of b.records) {
            const id = r.key !== null && wanted.has(r.key) ? r.key : ids.find((x) => r.value?.includes(x));
            const lines = id === undefined ? undefined : out.get(id);
            if (!lines || lines.length >= MAX_PER_ID) continue;
            lines.push({ topic: t, p: r.partition, offset: r.offset, at: r.timestamp, ...(r.headers ? { headers: Object.keys(r.headers) } : {}), v: summary(r.value) });
          }
        },
        { idleTimeoutMs: 2000 },
      );
    }
  } finally {
    await reader.close();
  }
  return ids.map((id) => ({
    id,
    records: out.get(id)!.sort((a, b) => a.at - b.at),
    log: logs
      .flatMap((l) =>
        l.out
          .split('\n')
          .filter((s) => s.includes(id))
          .map((s) => `${l.role}: ${s.slice(0, 300)}`),
      )
      .slice(0, MAX_PER_ID),
  }));
};

/** The story of up to three lost webhooks as one printable line, with the receiver's answers to each; within 30 s. */
export const tellHistory = (
  fleet: { brokers: string[]; prefix: string; logs: { role: string; out: string }[] },
  ids: string[],
  answersOf: (id: string) => string[],
): Promise<string> =>
  settleWithin(webhookHistory(fleet.brokers, fleet.prefix, ids.slice(0, 3), fleet.logs), 30_000, () => new Error('not read within 30 s'))
    .then((h) => JSON.stringify(h.map((x) => ({ ...x, answers: answersOf(x.id) }))))
    .catch((e: unknown) => String(e));
