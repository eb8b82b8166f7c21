import type { Webhook } from '../domain/webhook';
import { NotFoundError, ValidationError } from '../errors/errors';
import { LAB_EPOCH, outstanding, type DeliveryRecord, type LabState, type SubscriberState } from './state';
import { checkBehaviour, describeBehaviour } from './subscriber';
import { pushLine } from './text';
import type { Behaviour, Command } from './types';

// The Lab's controls as transitions of its state at the current moment (engine.ts settles
// what they made possible afterwards). Each one also tells the log what it did.

const EVENT_TYPES = ['order.created', 'invoice.paid', 'shipment.dispatched'];
const pad = (n: number): string => String(n).padStart(4, '0');
const iso = (simMs: number): string => new Date(LAB_EPOCH + simMs).toISOString();

const subscriber = (s: LabState, id: string): SubscriberState => {
  const x = s.subs.find((v) => v.spec.id === id);
  if (!x) throw new NotFoundError(`subscriber ${id}`);
  return x;
};

/** A new webhook to one subscriber, queued now with fresh budgets. */
const newDelivery = (s: LabState, x: SubscriberState, eventId: string, payload: string, replayOf?: string): DeliveryRecord => {
  const n = ++s.totals.deliveries;
  const webhook: Webhook = {
    id: `wh-${pad(n)}`,
    config_id: x.spec.id,
    endpoint: x.spec.url,
    endpoint_hash: x.spec.id,
    payload,
    headers: {},
    attempt: 0,
    max_attempts: s.config.maxAttempts,
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

/** One event fanned out to every subscriber; null when the queue bound refuses it. */
export const send = (s: LabState, type?: string): string | null => {
  const { config } = s;
  if (outstanding(s) + s.subs.length > config.queueBound) {
    s.totals.rejected++;
    pushLine(s.log, s.now, `Send rejected: ${config.queueBound} deliveries are outstanding (the queue bound).`);
    return null;
  }
  const n = ++s.totals.events;
  const id = `evt-${pad(n)}`;
  const kind = type ?? EVENT_TYPES[(n - 1) % EVENT_TYPES.length]!;
  const payload = JSON.stringify({ id, type: kind, occurred_at: iso(s.now), data: { order_id: `ORD-${10_000 + n}`, amount: 1000 + ((n * 37) % 9000) } });
  for (const x of s.subs) newDelivery(s, x, id, payload);
  pushLine(s.log, s.now, `Event ${id} (${kind}) accepted: ${s.subs.length} deliveries queued.`);
  return id;
};

export const burst = (s: LabState, n: number): string[] => {
  if (!Number.isInteger(n) || n < 1) throw new ValidationError('a burst sends an integer number of events ≥ 1', 'n');
  const count = Math.min(n, s.config.burstBound);
  pushLine(s.log, s.now, `Burst of ${count} events${count < n ? ` (asked for ${n}; clamped to the burst bound)` : ''}.`);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const id = send(s);
    if (id) ids.push(id);
  }
  return ids;
};

export const behave = (s: LabState, id: string, b: Behaviour): void => {
  const x = subscriber(s, id);
  x.behaviour = checkBehaviour(b);
  pushLine(s.log, s.now, `${x.spec.name} is now ${describeBehaviour(x.behaviour)}.`);
};

/** A scripted or keyboard command, as the scenarios use them. */
export const runCommand = (s: LabState, c: Command): void => {
  if (c.kind === 'send') send(s, c.type);
  else if (c.kind === 'burst') burst(s, c.n);
  else if (c.kind === 'behave') behave(s, c.subscriber, c.behaviour);
  else if (c.kind === 'fail') behave(s, c.subscriber, { kind: 'failing', status: c.status ?? 503 });
  else if (c.kind === 'repair') behave(s, c.subscriber, { kind: 'healthy' });
  else throw new ValidationError('command.kind must be send, burst, behave, fail or repair', 'command.kind');
};

/** A dead letter sent again as a new webhook; null when the queue bound refuses it. */
export const replay = (s: LabState, deadLetterId: string): string | null => {
  const { config } = s;
  const dl = s.deadLetters.find((x) => x.id === deadLetterId);
  if (!dl) throw new NotFoundError(`dead letter ${deadLetterId}`);
  if (outstanding(s) + 1 > config.queueBound) {
    s.totals.rejected++;
    pushLine(s.log, s.now, `Replay of ${dl.id} rejected: ${config.queueBound} deliveries are outstanding (the queue bound).`);
    return null;
  }
  s.totals.replays++;
  const d = newDelivery(s, subscriber(s, dl.subscriberId), dl.eventId, dl.payload, dl.id);
  pushLine(s.log, s.now, `Dead letter ${dl.id} replayed as ${d.id}, a new webhook with fresh budgets; ${dl.id} and its history stay as they were.`);
  return d.id;
};
