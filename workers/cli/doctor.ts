import type { Command } from 'commander';
import type { Config } from '../../core/config/schema';
import { burstAbsorption, type BurstParams, type BurstReport } from '../../core/policy/burst';
import { configFromProcess } from '../node/config';
import { apiClient } from './api-client';
import { kafkaChecks, redisChecks, type Check } from './doctor-checks';
import { hashOf } from './endpoints';
import { CliError, durationArg, fractionArg, intArg, out, printJson, type GlobalOpts } from './io';

// `howk doctor`: reachability, topics, clock skew, canary, consumer lag, and the burst
// arithmetic (core/policy/burst.ts) per endpoint or for given parameters.

const defaults = (c: Config): BurstParams => ({
  // A new endpoint starts at the adaptive initial limit, within its fast-lane share.
  limit: c.concurrency.max_inflight_per_endpoint > 0 ? Math.min(c.concurrency.initial_limit, c.concurrency.max_inflight_per_endpoint) : c.concurrency.initial_limit,
  timeoutMs: c.delivery.timeout,
  maxAttempts: c.retry.max_attempts,
  baseDelayMs: c.retry.base_delay,
  maxDelayMs: c.retry.max_delay,
  jitter: c.retry.jitter,
});

const secs = (ms: number) =>
  ms >= 3_600_000 ? `${(ms / 3_600_000).toFixed(1)} h` : ms >= 60_000 ? `${(ms / 60_000).toFixed(1)} min` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 0)} s`;

export const burstSentence = (who: string, p: BurstParams, r: BurstReport): string => {
  const head = `${who}: limit ${p.limit}, timeout ${secs(p.timeoutMs)}, ${p.maxAttempts} attempts (retries over ${secs(r.scheduleMs)}, worst-case jitter): throughput ${r.throughputPerSec.toFixed(2)}/s when every attempt times out; absorbs a burst of ${r.absorbable} webhook(s) before one dead-letters`;
  if (!r.burst) return head;
  return `${head}; a burst of ${r.burst.size} needs ${secs(r.burst.drainMs)}: ${r.burst.deadLetters ? `${r.burst.deadLetters} would dead-letter` : 'none dead-letters'}`;
};

const print = (checks: Check[]): void => {
  const w = Math.max(...checks.map((c) => c.check.length));
  for (const c of checks) {
    out(`${c.status === 'fail' ? 'FAIL' : c.status === 'warn' ? 'warn' : 'ok  '}  ${c.check.padEnd(w)}  ${c.detail}`);
    if (c.fix && c.status !== 'ok') out(`      ${''.padEnd(w)}  fix: ${c.fix}`);
  }
};

type DoctorFlags = { endpoint?: string[]; maxLag: number; burst?: number };

const endpointBursts = async (g: GlobalOpts, config: Config, o: DoctorFlags): Promise<{ endpoint: string; params: BurstParams; report: BurstReport }[]> => {
  const api = apiClient(g);
  const rows = [];
  for (const e of o.endpoint ?? []) {
    const v = await api.get<{ concurrency: { limit: number; fast_lane_limit: number } }>(`/endpoints/${await hashOf(e)}`);
    const params = { ...defaults(config), limit: v.concurrency.fast_lane_limit || v.concurrency.limit };
    rows.push({ endpoint: e, params, report: burstAbsorption(params, o.burst) });
  }
  return rows;
};

const runDoctor = async (g: GlobalOpts, o: DoctorFlags): Promise<void> => {
  const config = configFromProcess({ config: g.config });
  const [k, r] = await Promise.all([kafkaChecks(config, { maxLag: o.maxLag }), redisChecks(config)]);
  const checks = [...k, ...r];
  const base = defaults(config);
  const bursts = [{ endpoint: 'a new endpoint', params: base, report: burstAbsorption(base, o.burst) }];
  try {
    bursts.push(...(await endpointBursts(g, config, o)));
  } catch (e) {
    checks.push({
      check: 'endpoints',
      status: 'warn',
      detail: `could not read the endpoints' limits: ${(e as Error).message}`,
      fix: 'give --url (or HOWK_URL) and a key with the read scope',
    });
  }
  const failed = checks.filter((c) => c.status === 'fail').length;
  if (g.json) printJson({ ok: failed === 0, checks, burst: bursts });
  else {
    print(checks);
    out('');
    for (const b of bursts) out(burstSentence(b.endpoint, b.params, b.report));
    out('');
    out(failed ? `${failed} check(s) failed` : `all checks passed (${checks.filter((c) => c.status === 'warn').length} warning(s))`);
  }
  if (failed) throw new CliError('', 1);
};

export const registerDoctor = (program: Command, globals: () => GlobalOpts): void => {
  const doctor = program
    .command('doctor')
    .description('Checks Kafka, Redis, topics, clock skew, canary and consumer lag; exit 1 on a failed check')
    .option('--endpoint <endpoint...>', 'also print the burst figure of these endpoints (hash or URL; needs --url)')
    .option('--max-lag <n>', 'consumer lag above which to warn', intArg(0), 10_000)
    .option('--burst <n>', 'also say how a burst of this many fares', intArg(1))
    .action((o: DoctorFlags) => runDoctor(globals(), o));
  doctor
    .command('burst')
    .description('Burst absorption for given parameters (the rest from the config)')
    .option('--limit <n>', 'in-flight limit of the endpoint', intArg(1))
    .option('--timeout <duration>', 'delivery timeout', durationArg)
    .option('--attempts <n>', 'attempts before dead-lettering', intArg(1, 1000))
    .option('--base-delay <duration>', 'backoff base', durationArg)
    .option('--max-delay <duration>', 'backoff cap', durationArg)
    .option('--jitter <fraction>', 'backoff spread (±fraction)', fractionArg)
    .option('--burst <n>', 'a burst size to check', intArg(1))
    .action((o: { limit?: number; timeout?: number; attempts?: number; baseDelay?: number; maxDelay?: number; jitter?: number; burst?: number }) => {
      const d = defaults(configFromProcess({ config: globals().config }));
      const p: BurstParams = {
        limit: o.limit ?? d.limit,
        timeoutMs: o.timeout ?? d.timeoutMs,
        maxAttempts: o.attempts ?? d.maxAttempts,
        baseDelayMs: o.baseDelay ?? d.baseDelayMs,
        maxDelayMs: o.maxDelay ?? d.maxDelayMs,
        jitter: o.jitter ?? d.jitter,
      };
      const r = burstAbsorption(p, o.burst);
      if (globals().json) printJson({ params: p, ...r });
      else out(burstSentence('endpoint', p, r));
    });
};
