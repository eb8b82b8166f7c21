// Counts the Kafka requests of this process by API (requests, request and response bytes, time
// until the answer) and the records its producers send and its consumers take, from inside
// kafkajs (its request queue: every producer, consumer and admin client of every Kafka
// instance goes through it). Installed by kafka-requests-role.ts; SIGUSR2 writes the totals
// so far to the file named by KREQ_OUT, so a benchmark can take them before and after a window.
// Redis commands are counted the same way, inside ioredis (every client of the process): by
// command (a script call by its sha), and round trips (a single command or a whole pipeline).
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { createHash } from 'node:crypto';
import { BATCH_SCRIPTS, SCRIPTS } from '../../workers/redis/scripts';

export type ApiStats = { requests: number; requestBytes: number; responseBytes: number; waitMs: number };
export type Counts = {
  apis: Record<string, ApiStats>;
  /** Fetch requests and response bytes by consumer group. */
  fetches: Record<string, { requests: number; responseBytes: number }>;
  produced: Record<string, number>;
  producedBatches: number;
  taken: number;
  takenBatches: number;
  redis: { commands: Record<string, number>; roundTrips: number };
};

/** Named after the field of kafkajs's RequestQueue it mirrors (`entry`). */
type RequestEntry = { apiName: string; correlationId: number };
type Pushed = { entry: RequestEntry; sendRequest: () => void };
type Queue = { inflight: Map<number, { sentAt?: number; entry: RequestEntry }> };
type QueueProto = {
  push: (this: Queue, r: Pushed) => void;
  fulfillRequest: (this: Queue, r: { correlationId: number; size: number }) => void;
};

const require = createRequire(import.meta.url);

export const counts: Counts = { apis: {}, fetches: {}, produced: {}, producedBatches: 0, taken: 0, takenBatches: 0, redis: { commands: {}, roundTrips: 0 } };
const api = (name: string): ApiStats => (counts.apis[name] ??= { requests: 0, requestBytes: 0, responseBytes: 0, waitMs: 0 });

let sending: ApiStats | undefined;
const write = Socket.prototype.write as (this: Socket, ...a: unknown[]) => boolean;
Socket.prototype.write = function (this: Socket, ...a: unknown[]) {
  const b = a[0];
  if (sending && Buffer.isBuffer(b)) sending.requestBytes += b.length;
  return write.apply(this, a);
} as typeof Socket.prototype.write;

const q = (require('kafkajs/src/network/requestQueue/index.js') as { prototype: QueueProto }).prototype;
const push = q.push;
q.push = function (r) {
  const s = api(r.entry.apiName);
  s.requests++;
  const send = r.sendRequest;
  r.sendRequest = () => {
    sending = s;
    try {
      send();
    } finally {
      sending = undefined;
    }
  };
  push.call(this, r);
};
const fulfill = q.fulfillRequest;
q.fulfillRequest = function (r) {
  const req = this.inflight.get(r.correlationId);
  if (req) {
    const s = api(req.entry.apiName);
    s.responseBytes += r.size;
    if (req.sentAt) s.waitMs += Date.now() - req.sentAt;
  }
  fulfill.call(this, r);
};

type Kafka = { producer: (...a: unknown[]) => Producer; consumer: (...a: unknown[]) => Consumer };
type Producer = { sendBatch: (b: { topicMessages: { topic: string; messages: unknown[] }[] }) => Promise<unknown> };
type Consumer = {
  run: (o: { eachBatch?: (p: { batch: { messages: unknown[] } }) => Promise<void> }) => Promise<void>;
  on: (e: string, f: (e: { payload: { apiName: string; size: number } }) => void) => void;
  events: { REQUEST: string };
};
const kafka = (require('kafkajs') as { Kafka: { prototype: Kafka } }).Kafka.prototype;
const producer = kafka.producer;
kafka.producer = function (this: Kafka, ...a: unknown[]) {
  const p = producer.apply(this, a);
  const sendBatch = p.sendBatch;
  p.sendBatch = (b) => {
    counts.producedBatches++;
    for (const t of b.topicMessages) counts.produced[t.topic] = (counts.produced[t.topic] ?? 0) + t.messages.length;
    return sendBatch(b);
  };
  return p;
};
const consumer = kafka.consumer;
kafka.consumer = function (this: Kafka, ...a: unknown[]) {
  const c = consumer.apply(this, a);
  const group = (a[0] as { groupId?: string } | undefined)?.groupId ?? '?';
  c.on(c.events.REQUEST, ({ payload }) => {
    if (payload.apiName !== 'Fetch') return;
    const f = (counts.fetches[group] ??= { requests: 0, responseBytes: 0 });
    f.requests++;
    f.responseBytes += payload.size;
  });
  const run = c.run;
  c.run = (o) => {
    const each = o.eachBatch;
    return run({
      ...o,
      ...(each
        ? {
            eachBatch: (p) => {
              if (p.batch.messages.length) counts.takenBatches++;
              counts.taken += p.batch.messages.length;
              return each(p);
            },
          }
        : {}),
    });
  };
  return c;
};

type RedisCommand = { name: string; args?: unknown[] };
/** Script calls are named by their script (a sha not found here keeps its first 8 digits). */
const scriptNames = new Map<string, string>();
for (const [name, v] of Object.entries({ ...SCRIPTS, ...BATCH_SCRIPTS })) {
  const lua = typeof v === 'string' ? v : (v as { lua?: unknown }).lua;
  if (typeof lua === 'string') scriptNames.set(createHash('sha1').update(lua).digest('hex'), name);
}
const ioredis = require('ioredis') as { Redis: { prototype: { sendCommand: (c: RedisCommand, stream?: unknown) => unknown } }; Pipeline: { prototype: { exec: () => unknown } } };
const redisProto = ioredis.Redis.prototype;
const sendCommand = redisProto.sendCommand;
redisProto.sendCommand = function (this: unknown, c: RedisCommand, stream?: unknown) {
  // A pipeline hands its commands over with a stream of its own: they count, the trip is the pipeline's.
  if (!stream) counts.redis.roundTrips++;
  const a0 = c.args?.[0];
  const sha = c.name === 'evalsha' ? ((c as { script?: { sha?: string } }).script?.sha ?? (typeof a0 === 'string' ? a0 : undefined)) : undefined;
  const name = sha ? `script:${scriptNames.get(sha) ?? sha.slice(0, 8)}` : c.name;
  counts.redis.commands[name] = (counts.redis.commands[name] ?? 0) + 1;
  return sendCommand.call(this, c, stream);
};
const exec = ioredis.Pipeline.prototype.exec;
ioredis.Pipeline.prototype.exec = function (this: unknown) {
  counts.redis.roundTrips++;
  return exec.call(this);
};

process.on('SIGUSR2', () => {
  if (process.env.KREQ_OUT) writeFileSync(process.env.KREQ_OUT, JSON.stringify(counts));
});
