import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

// Readers of the container files for the structural test (no Docker engine runs the tests).

export const ROOT = new URL('../../', import.meta.url);
export const readRepo = (path: string): string => readFileSync(new URL(path, ROOT), 'utf8');

export type ComposeService = {
  image?: string;
  build?: unknown;
  command?: string[] | string;
  environment?: Record<string, string | number | boolean> | string[];
  ports?: (string | { target: number; published?: string | number; host_ip?: string })[];
  depends_on?: string[] | Record<string, { condition?: string }>;
  healthcheck?: { test?: unknown; disable?: boolean };
  deploy?: { replicas?: number };
  networks?: string[] | Record<string, { ipv4_address?: string } | null>;
};
export type Compose = { services: Record<string, ComposeService>; networks?: Record<string, { ipam?: { config?: { subnet?: string }[] } }> };

export const readCompose = (path = 'docker-compose.yml'): Compose => parse(readRepo(path), { merge: true }) as Compose;

/** `${VAR:-default}` / `${VAR-default}` as Compose resolves them with VAR unset; `${VAR}` → ''. */
export const interpolate = (value: string): string => value.replace(/\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}/g, (_m, _name, def: string | undefined) => def ?? '');

export const envOf = (s: ComposeService): Record<string, string> => {
  const e = s.environment ?? {};
  const pairs = Array.isArray(e) ? e.map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]) : Object.entries(e).map(([k, v]) => [k, String(v)] as [string, string]);
  return Object.fromEntries(pairs.map(([k, v]) => [k, interpolate(v ?? '')]));
};

export const commandOf = (s: ComposeService): string[] | undefined => (typeof s.command === 'string' ? s.command.split(/\s+/) : s.command);

export type PublishedPort = { host: string | undefined; published: number; target: number };

/** "127.0.0.1:8080:8080", "8080:8080", "8080" or the long form. */
export const portsOf = (s: ComposeService): PublishedPort[] =>
  (s.ports ?? []).map((p) => {
    if (typeof p !== 'string') return { host: p.host_ip, published: Number(p.published ?? p.target), target: p.target };
    const parts = p.split('/')[0]!.split(':');
    const target = Number(parts.pop());
    const published = parts.length ? Number(parts.pop()) : target;
    return { host: parts.pop(), published, target };
  });

export const dependsOn = (s: ComposeService): Record<string, string | undefined> =>
  Array.isArray(s.depends_on)
    ? Object.fromEntries(s.depends_on.map((d) => [d, undefined]))
    : Object.fromEntries(Object.entries(s.depends_on ?? {}).map(([k, v]) => [k, v?.condition]));

export type DockerInstruction = { op: string; args: string };
export type DockerStage = { from: string; name: string | undefined; instructions: DockerInstruction[] };

/** Stages of a Dockerfile, each with its instructions (continuation lines joined, comments dropped). */
export const readDockerfile = (path = 'Dockerfile'): DockerStage[] => {
  const lines = readRepo(path)
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const stages: DockerStage[] = [];
  for (const line of lines) {
    const [, op, args] = /^(\S+)\s+(.*)$/s.exec(line) ?? [];
    if (!op) continue;
    const instr = { op: op.toUpperCase(), args: args!.trim() };
    if (instr.op === 'FROM') {
      const [, from, name] = /^(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/i.exec(instr.args) ?? [];
      stages.push({ from: from!, name, instructions: [] });
    } else stages.at(-1)?.instructions.push(instr);
  }
  return stages;
};

/** The exec form `["a", "b"]` of CMD / HEALTHCHECK CMD, as a list. */
export const execForm = (args: string): string[] => {
  const json = args.slice(args.indexOf('['));
  return JSON.parse(json) as string[];
};
