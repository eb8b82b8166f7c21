// The life of a benchmark run on real Kafka + Redis: its Redis database emptied, an API key,
// the services' start-up signal, and the clean-up (services, topics, database) at the end.
import type { Agent } from 'undici';
import { loadConfig } from '../../core/config/load';
import { runKeys } from '../../workers/cli/keys';
import { createRedis } from '../../workers/redis/client';
import { infraPorts, type Infra } from './bench-env';
import { apiReady, deleteRunTopics, freePort, log, pidListening, startProcess, stopProcess, waitUntil, type Svc } from './busy-harness';

export const flushDb = async (redisUrl: string): Promise<void> => {
  const redis = createRedis(redisUrl);
  await redis.flushdb();
  await redis.quit();
};

/** An API key with `scopes`, written to the run's keys topic before the api starts (the api replays that topic at start-up). */
export const createApiKey = async (env: Record<string, string>, scopes: string, name: string): Promise<string> => {
  const out: string[] = [];
  const code = await runKeys(loadConfig({ env }), ['create', '--scopes', scopes, '--name', name], { out: (l) => out.push(l), err: () => {} });
  if (code !== 0) throw new Error(`could not create an API key (exit ${code})`);
  return (JSON.parse(out.join('')) as { key: string }).key;
};

/** Each binary logs "howk-<role> started" once its loops run (consumer subscribed). */
export const hasStarted = (s: Svc) => () => s.lines.some((l) => l.includes(`"howk-${s.name} started"`));

/** The zero-work forwarder (busy-forwarder.ts), `conns` connections per origin as howk-worker's pool. */
const startForwarder = async (conns: number, logDir: string): Promise<Svc> =>
  startProcess('forwarder', 'test/bench/busy-forwarder.ts', { FORWARD_PORT: String(await freePort()), FORWARD_CONNS: String(conns) }, logDir);

/** The forwarder's URL, once it listens. */
const forwarderUrl = async (fwd: Svc, svcs: Svc[]): Promise<string> => {
  const listening = () => fwd.lines.find((l) => l.startsWith('forwarder listening'));
  await waitUntil('the forwarder', 30_000, () => listening() !== undefined, svcs);
  return `http://127.0.0.1:${/listening (\d+)/.exec(listening()!)![1]}`;
};

/** The processes of a run with the forwarder, as the CPU tables name them. */
const runProcesses = (infra: Infra, s: { api: Svc; worker: Svc; scheduler: Svc; forwarder: Svc }): { name: string; pid: number | undefined }[] => {
  const ports = infraPorts(infra);
  return [
    { name: 'howk-api', pid: s.api.child.pid },
    { name: 'howk-worker', pid: s.worker.child.pid },
    { name: 'howk-scheduler', pid: s.scheduler.child.pid },
    { name: 'kafka broker', pid: pidListening(ports.kafka) },
    { name: 'redis-server', pid: pidListening(ports.redis) },
    { name: 'forwarder', pid: s.forwarder.child.pid },
  ];
};

export type Stack = {
  api: Svc;
  worker: Svc;
  scheduler: Svc;
  forwarder: Svc;
  forwarderUrl: string;
  procs: { name: string; pid: number | undefined }[];
  /** The ports of howk-worker's and howk-scheduler's GET /metrics, when asked for. */
  metrics?: { worker: number; scheduler: number };
};
export type StackOptions = {
  infra: Infra;
  env: Record<string, string>;
  /** howk-api's base URL and the client that asks it /ready. */
  api: string;
  agent: Agent;
  logDir: string;
  /** Connections per origin of the forwarder (as howk-worker's pool). */
  conns: number;
  /** Each process is added here as it starts (stopped at the end, named when the run fails). */
  svcs: Svc[];
  /** howk-worker and howk-scheduler serve GET /metrics, each on a free port (HOWK_METRICS_PORT). */
  metrics?: boolean;
};
/** howk-api first (it creates the topics), then howk-worker, howk-scheduler and the forwarder once it is ready. */
export const startStack = async (o: StackOptions): Promise<Stack> => {
  const api = startProcess('api', 'workers/api/main.ts', o.env, o.logDir);
  o.svcs.push(api);
  await waitUntil('howk-api /ready', 90_000, () => apiReady(o.api, o.agent), o.svcs);
  // Chosen while the api listens, so that neither can be the api's port.
  const metrics = o.metrics ? { worker: await freePort(), scheduler: await freePort() } : undefined;
  const metricsEnv = (port: number | undefined): Record<string, string> => (port ? { HOWK_METRICS_PORT: String(port) } : {});
  const worker = startProcess('worker', 'workers/worker/main.ts', { ...o.env, ...metricsEnv(metrics?.worker) }, o.logDir);
  const scheduler = startProcess('scheduler', 'workers/scheduler/main.ts', { ...o.env, ...metricsEnv(metrics?.scheduler) }, o.logDir);
  const forwarder = await startForwarder(o.conns, o.logDir);
  o.svcs.push(worker, scheduler, forwarder);
  for (const s of [worker, scheduler]) await waitUntil(`howk-${s.name} to start`, 90_000, hasStarted(s), o.svcs);
  const url = await forwarderUrl(forwarder, o.svcs);
  return { api, worker, scheduler, forwarder, forwarderUrl: url, procs: runProcesses(o.infra, { api, worker, scheduler, forwarder }), metrics };
};

/** The error of a failed run, and the last lines each service wrote. */
export const logFailure = (e: unknown, svcs: Svc[]): void => {
  log(`error: ${(e as Error).stack ?? String(e)}`);
  for (const s of svcs) log(`--- last lines of ${s.name} (${s.logFile}):\n${s.lines.slice(-15).join('\n')}`);
};

export type RunEnd = {
  svcs: Svc[];
  agent: Agent;
  closeReceiver: () => Promise<void>;
  brokers: string;
  runId: string;
  topics: Record<string, string>;
  keepTopics: boolean;
  /** Emptied at the end when given (a run that leaves nothing behind). */
  flushRedisUrl?: string;
};
/** Stops the services (the last started first), closes the client and the receiver, deletes the topics unless kept. */
export const endRun = async (o: RunEnd): Promise<void> => {
  for (const s of [...o.svcs].reverse()) await stopProcess(s);
  await o.agent.close().catch(() => {});
  await o.closeReceiver();
  if (!o.keepTopics) await deleteRunTopics(o.brokers, o.runId, o.topics);
  if (o.flushRedisUrl) await flushDb(o.flushRedisUrl).catch(() => {});
};

/** Exits 1 once `ms` have passed, whatever the run is doing (a hung run never blocks a session). */
export const hardDeadline = (ms: number, label?: string): void => {
  setTimeout(() => {
    log(`hard deadline${label ? ` (${label})` : ''} passed; exiting`);
    process.exit(1);
  }, ms).unref();
};
