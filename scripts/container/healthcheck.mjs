#!/usr/bin/env node
// The image's HEALTHCHECK: one image runs every binary, so this finds which one the container
// runs (from the processes' command lines) and asks its /health on the port that binary
// serves. Exit 0 healthy, 1 not. Defaults are the config schema's (a unit test keeps them equal).
import { readdirSync, readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

export const DEFAULT_PORTS = { api: 8080, bridge: 8090, echo: 9000 };

/**
 * The URL to probe for a process command line, or null when that binary serves nothing
 * (howk-worker, howk-scheduler, howk-reconciler without metrics.port).
 */
export const probeTarget = (cmdline, env) => {
  const m = /howk-(dev|api|worker|scheduler|reconciler|bridge)\.mjs|container\/(echo)\.mjs/.exec(cmdline);
  if (!m) return undefined;
  const role = m[1] ?? m[2];
  const port =
    role === 'api' || role === 'dev'
      ? Number(env.HOWK_API_PORT || DEFAULT_PORTS.api)
      : role === 'bridge'
        ? Number(env.HOWK_BRIDGE_PORT || DEFAULT_PORTS.bridge)
        : role === 'echo'
          ? Number(env.ECHO_PORT || DEFAULT_PORTS.echo)
          : Number(env.HOWK_METRICS_PORT || 0);
  return port > 0 ? `http://127.0.0.1:${port}/health` : null;
};

const commandLines = () =>
  readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => {
      try {
        return readFileSync(`/proc/${d}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        return '';
      }
    });

const main = async () => {
  const target = commandLines()
    .map((c) => probeTarget(c, process.env))
    .find((t) => t !== undefined);
  if (target === undefined) {
    console.error('healthcheck: no howk process found');
    process.exit(1);
  }
  if (target === null) process.exit(0);
  try {
    const res = await fetch(target, { signal: AbortSignal.timeout(4000) });
    if (!res.ok) throw new Error(`${target} answered ${res.status}`);
    process.exit(0);
  } catch (e) {
    console.error(`healthcheck: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  }
};

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
