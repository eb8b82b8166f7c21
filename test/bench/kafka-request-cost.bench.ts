// What one Kafka request costs the broker and the client, by shape: produces of 60 and 240
// records over 24 partitions (a worker's outcome produce: results + state, keyed by webhook
// id) and over 2, and empty fetches of 12 partitions (an idle lane's poll). Each shape runs
// twice; the second run is the warm one. The broker's CPU is read from /proc, so run it
// against a broker nobody else uses, e.g. a private one:
//
//   KAFKA_PORT=19156 KAFKA_CONTROLLER_PORT=19157 scripts/infra/kafka.sh start
//   KAFKA_BROKERS=127.0.0.1:19156 npx tsx test/bench/kafka-request-cost.bench.ts
//   KAFKA_PORT=19156 scripts/infra/kafka.sh stop
//
// BENCH_KCOST_IDEMPOTENT=1 produces with kafkajs's idempotent producer (kafka.idempotent_producer).
import { Kafka, logLevel } from 'kafkajs';
import { KafkaLog } from '../../workers/kafka/log';
import { cpuTicksOf, CLK_TCK, pidListening, sleep } from './busy-harness';

const brokers = (process.env.KAFKA_BROKERS ?? '').split(',').filter(Boolean);
if (!brokers.length || !brokers.every((b) => /^(127\.0\.0\.1|localhost):\d+$/.test(b))) throw new Error('KAFKA_BROKERS must name a broker on 127.0.0.1');
const brokerPid = pidListening(Number(brokers[0]!.split(':')[1]));
const N = Math.max(50, Number(process.env.BENCH_KCOST_N ?? 400));
const id = `kcost-${Date.now().toString(36)}`;
const idempotent = process.env.BENCH_KCOST_IDEMPOTENT === '1';
const log = new KafkaLog({ brokers, clientId: id, produceTimeoutMs: 10_000, maxWaitMs: 1, maxBytesPerPartition: 1 << 20, idempotent });
const topics = [`${id}.r`, `${id}.s`, `${id}.e`];

const measure = async (what: string, f: () => Promise<number>) => {
  const b0 = cpuTicksOf(brokerPid) ?? NaN;
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const n = await f();
  const ms = performance.now() - t0;
  const broker = (((cpuTicksOf(brokerPid) ?? NaN) - b0) / CLK_TCK) * 1e6;
  const c = process.cpuUsage(c0);
  console.log(`${what}: ${n} requests in ${(ms / 1000).toFixed(1)} s; broker ${(broker / n).toFixed(0)} us, client ${((c.user + c.system) / n).toFixed(0)} us per request`);
};

try {
  await log.admin.ensureTopics(topics.map((name) => ({ name, partitions: 12 })));
  const p = log.producer();
  const v = 'x'.repeat(230);
  const produce = (records: number, keyOf: (i: number, j: number) => string) => async () => {
    for (let i = 0; i < N; i++) await p.send(Array.from({ length: records }, (_, j) => ({ topic: topics[j % 2]!, key: keyOf(i, j), value: v })));
    return N;
  };
  for (let r = 0; r < 2; r++) {
    await measure(
      `produce 60 records over 24 partitions`,
      produce(60, (i, j) => `k${i}-${j}`),
    );
    await measure(
      `produce 240 records over 24 partitions`,
      produce(240, (i, j) => `k${i}-${j}`),
    );
    await measure(
      `produce 60 records over 2 partitions`,
      produce(60, () => 'k'),
    );
  }
  // An idle consumer with a 1 ms wait: nothing but empty fetches.
  const k = new Kafka({ clientId: `${id}-c`, brokers, logLevel: logLevel.NOTHING });
  const c = k.consumer({ groupId: `${id}-g`, maxWaitTimeInMs: 1 });
  let fetches = 0;
  c.on(c.events.REQUEST, (e) => void (e.payload.apiName === 'Fetch' && fetches++));
  await c.connect();
  await c.subscribe({ topics: [topics[2]!] });
  await c.run({ eachBatch: async () => {} });
  await sleep(3000);
  await measure('empty fetch of 12 partitions', async () => {
    const f0 = fetches;
    await sleep(8000);
    return fetches - f0;
  });
  await c.disconnect();
  await p.close();
} finally {
  const admin = new Kafka({ clientId: `${id}-cleanup`, brokers, logLevel: logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.deleteTopics({ topics }).catch(() => {});
  await admin.disconnect();
  await log.close();
}
process.exit(0);
