import type { Command } from 'commander';
import { endpointHash } from '../../core/domain/ids';
import { apiClient } from './api-client';
import { CliError, out, printJson, table, type GlobalOpts } from './io';

// `howk endpoints show | pause | resume | reset <hash or URL>`, over the /endpoints/:hash routes.

/** The endpoint_hash of a webhook, or the URL it hashes. */
export const hashOf = async (v: string): Promise<string> => {
  if (/^[0-9a-f]{32}$/.test(v)) return v;
  if (/^https?:\/\//i.test(v)) return endpointHash(v);
  throw new CliError(`not an endpoint: ${JSON.stringify(v)} (give its endpoint_hash, 32 hex characters, or its URL)`, 2);
};

type View = {
  endpoint_hash: string;
  circuit: { state: string; failures: number; open_until: number | null };
  paused: boolean;
  draining: boolean;
  parked_while_paused: number;
  inflight: number;
  concurrency: { limit: number; fast_lane_limit: number; latency_ms: { estimate: number | null; p50: number | null; p90: number | null }; slow: boolean; queued: number };
  last_errors: { at: string; error: string }[];
};

const show = (v: View): void => {
  const c = v.concurrency;
  out(
    table(
      ['field', 'value'],
      [
        ['endpoint_hash', v.endpoint_hash],
        ['circuit', `${v.circuit.state} (${v.circuit.failures} failures${v.circuit.open_until ? `, open until ${new Date(v.circuit.open_until).toISOString()}` : ''})`],
        ['paused', v.paused ? `yes (${v.parked_while_paused} held)` : v.draining ? 'draining' : 'no'],
        ['in flight', `${v.inflight} (limit ${c.limit}, fast lane ${c.fast_lane_limit}, ${c.queued} queued)`],
        ['latency ms', `estimate ${c.latency_ms.estimate ?? '-'}, p50 ${c.latency_ms.p50 ?? '-'}, p90 ${c.latency_ms.p90 ?? '-'}${c.slow ? ' (slow)' : ''}`],
        ...v.last_errors.slice(0, 5).map((e) => ['error', `${e.at} ${e.error}`]),
      ],
    ),
  );
};

export const registerEndpoints = (program: Command, globals: () => GlobalOpts): void => {
  const ep = program.command('endpoints').description('Circuit, limits, pause of one endpoint (/endpoints/:hash)');
  const target = '<endpoint>';
  const help = 'endpoint_hash (32 hex) or endpoint URL';
  ep.command('show')
    .description('Circuit state, adaptive limit, latency, in-flight, pause and last errors')
    .argument(target, help)
    .action(async (e: string) => {
      const v = await apiClient(globals()).get<View>(`/endpoints/${await hashOf(e)}`);
      if (globals().json) printJson(v);
      else show(v);
    });
  const action = (name: string, path: string, says: (r: Record<string, unknown>) => string) =>
    ep
      .command(name)
      .argument(target, help)
      .action(async (e: string) => {
        const h = await hashOf(e);
        const r = await apiClient(globals()).post<Record<string, unknown>>(`/endpoints/${h}/${path}`);
        if (globals().json) printJson(r.body);
        else out(says(r.body));
      });
  action('pause', 'pause', () => 'paused: deliveries to it are held (nothing is lost) until `howk endpoints resume`').description('Hold deliveries to the endpoint');
  action('resume', 'resume', (r) => `resumed: ${String(r.released ?? 0)} held webhook(s) released (${String(r.drain)})`).description('Release held deliveries in arrival order');
  action('reset', 'circuit/reset', (r) => `circuit reset: ${(r as unknown as View).circuit?.state ?? 'CLOSED'}`).description("Close the endpoint's circuit now");
};
