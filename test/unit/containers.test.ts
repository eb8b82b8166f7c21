import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configLeaves, loadConfig } from '../../core/config/load';
import { ConfigSchema } from '../../core/config/schema';
import { checkAddress, destinationPolicy } from '../../core/security/destination';
// @ts-expect-error: plain ESM script without types, run by the image's HEALTHCHECK
import { DEFAULT_PORTS, probeTarget } from '../../scripts/container/healthcheck.mjs';
import { applyDevDefaults, bindRefusal, parseBindArgs } from '../../workers/dev/bind';
import { parseDevArgs } from '../../workers/dev/storage';
import { loadProcessConfig, parseFlags } from '../../workers/node/config';
import { commandOf, dependsOn, envOf, execForm, portsOf, readCompose, readDockerfile, readRepo, ROOT, type ComposeService } from '../helpers/container-files';

// No Docker engine runs here: this reads docker-compose.yml and the Dockerfile the way Compose
// and BuildKit would and checks them against the config schema, package.json and the repo.

const compose = readCompose();
const pkg = JSON.parse(readRepo('package.json')) as { bin: Record<string, string> };
const stages = readDockerfile();
const runtime = stages.at(-1)!;
const exists = (path: string) => existsSync(new URL(path, ROOT));
const envNames = new Set(configLeaves().flatMap((l) => [l.env, ...l.aliases]));
const defaults = ConfigSchema.parse({});

type Role = 'api' | 'worker' | 'scheduler' | 'reconciler' | 'bridge' | 'dev' | 'echo';
const roleOf = (s: ComposeService): Role | undefined => {
  const m = /howk-(\w+)\.mjs$|container\/(echo)\.mjs$/.exec(commandOf(s)?.[1] ?? '');
  return (m?.[1] ?? m?.[2]) as Role | undefined;
};
const services = Object.entries(compose.services);
// Services built from this repo; only the echo receiver reads a variable of its own.
const fromRepo = services.filter(([, s]) => s.build || s.image?.startsWith('howk'));
const OTHER_ENV = new Set(['ECHO_PORT']);
const howk = services.filter(([, s]) => roleOf(s) && roleOf(s) !== 'echo');
const byRole = (role: Role) => services.filter(([, s]) => roleOf(s) === role);

/** Where the binary listens, as the config it would load from the service's environment says. */
const listenOf = (s: ComposeService): { port: number; host: string } | undefined => {
  const env = envOf(s);
  if (roleOf(s) === 'echo') return { port: Number(env.ECHO_PORT ?? DEFAULT_PORTS.echo), host: '0.0.0.0' };
  const c = loadConfig({ env });
  if (roleOf(s) === 'api' || roleOf(s) === 'dev') return { port: c.api.port, host: c.api.host };
  if (roleOf(s) === 'bridge') return { port: c.bridge.port, host: c.bridge.host };
  return c.metrics.port > 0 ? { port: c.metrics.port, host: c.metrics.host } : undefined;
};

describe('docker-compose.yml', () => {
  it('starts the whole fleet: Kafka (KRaft), Redis, api, two workers, scheduler, reconciler, bridge and a receiver', () => {
    expect(services.some(([, s]) => s.image?.startsWith('apache/kafka'))).toBe(true);
    expect(services.some(([, s]) => s.image?.startsWith('redis'))).toBe(true);
    for (const role of ['api', 'scheduler', 'reconciler', 'bridge', 'echo'] as const) expect(byRole(role).length, `a service running ${role}`).toBeGreaterThan(0);
    const workers = byRole('worker').reduce((n, [, s]) => n + (s.deploy?.replicas ?? 1), 0);
    expect(workers).toBeGreaterThanOrEqual(2);
    expect(
      byRole('reconciler').every(([, s]) => commandOf(s)!.includes('--watch')),
      'a reconciler service keeps running (--watch)',
    ).toBe(true);
  });

  it('sets only HOWK_* variables the config schema reads, and each service loads its config', () => {
    for (const [name, s] of fromRepo) {
      const env = envOf(s);
      for (const v of Object.keys(env)) expect(envNames.has(v) || OTHER_ENV.has(v), `${name}: ${v} is not a setting`).toBe(true);
      expect(() => loadConfig({ env }), name).not.toThrow();
    }
    for (const [name, s] of howk) {
      const env = envOf(s);
      expect(env.HOWK_KAFKA_BROKERS, `${name}: HOWK_KAFKA_BROKERS`).toMatch(/^kafka:\d+$/);
      expect(env.HOWK_REDIS_URL, `${name}: HOWK_REDIS_URL`).toMatch(/^redis:\/\/redis:\d+/);
    }
  });

  it('runs commands that exist: package.json bins and files of the repo', () => {
    const bins = new Set(Object.values(pkg.bin));
    for (const [name, s] of fromRepo) {
      const cmd = commandOf(s);
      expect(cmd?.[0], `${name} runs node`).toBe('node');
      expect(exists(cmd![1]!), `${name}: ${cmd![1]} exists`).toBe(true);
      if (cmd![1]!.startsWith('bin/')) expect(bins.has(cmd![1]!), `${name}: ${cmd![1]} is in package.json bin`).toBe(true);
    }
  });

  it('publishes each port to the one its binary listens on, bound to every interface inside the container', () => {
    const published = services.flatMap(([name, s]) => portsOf(s).map((p) => ({ name, s, ...p })));
    for (const role of ['api', 'bridge', 'echo'] as const)
      expect(
        published.some((p) => roleOf(p.s) === role),
        `${role} is published`,
      ).toBe(true);
    for (const p of published.filter((x) => roleOf(x.s))) {
      const listen = listenOf(p.s);
      expect(listen?.port, `${p.name} publishes ${p.target}`).toBe(p.target);
      expect(listen?.host, `${p.name} must listen on 0.0.0.0 for a published port`).toBe('0.0.0.0');
      expect(p.host, `${p.name}: published on loopback only`).toBe('127.0.0.1');
    }
    const hostPorts = published.map((p) => p.published);
    expect(new Set(hostPorts).size).toBe(hostPorts.length);
  });

  it("health-checks every service: the image's probe finds a port the binary serves", () => {
    for (const [name, s] of services) {
      if (roleOf(s)) {
        const target = probeTarget(commandOf(s)!.join(' '), envOf(s)) as string | null;
        expect(target, `${name} has something to probe`).toBeTruthy();
        expect(new URL(target!).port, name).toBe(String(listenOf(s)!.port));
      } else expect(s.healthcheck?.test, `${name} has a healthcheck`).toBeTruthy();
    }
    expect(DEFAULT_PORTS.api).toBe(defaults.api.port);
    expect(DEFAULT_PORTS.bridge).toBe(defaults.bridge.port);
  });

  it('starts the Howk services after Kafka and Redis are healthy', () => {
    for (const [name, s] of howk) {
      expect(dependsOn(s).kafka, name).toBe('service_healthy');
      expect(dependsOn(s).redis, name).toBe('service_healthy');
    }
  });

  it('lets the workers deliver to the receiver through the SSRF guard, and nowhere else private', () => {
    const [echoName, echo] = byRole('echo')[0]!;
    const nets = echo.networks as Record<string, { ipv4_address?: string }>;
    const ip = Object.values(nets).find((n) => n?.ipv4_address)?.ipv4_address;
    expect(ip, 'the receiver has a fixed address').toBeTruthy();
    for (const [name, s] of byRole('worker')) {
      const policy = destinationPolicy(loadConfig({ env: envOf(s) }).delivery.allowed_networks);
      expect(checkAddress(ip!, policy).allowed, name).toBe(true);
      expect(checkAddress('172.28.0.2', policy).allowed, `${name}: other containers stay refused`).toBe(false);
    }
    const readme = readRepo('README.md');
    const port = listenOf(echo)!.port;
    expect(readme).toContain(`http://${echoName}:${port}/`);
  });
});

describe('Dockerfile', () => {
  const ops = (op: string) => runtime.instructions.filter((i) => i.op === op);

  it('builds in one stage with dev dependencies and runs from another with production ones only', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const build = stages.find((st) => st.name && st.instructions.some((i) => i.op === 'RUN' && /npm ci\b/.test(i.args)))!;
    expect(build, 'a named build stage runs npm ci').toBeTruthy();
    expect(build.instructions.some((i) => i.op === 'RUN' && /npm (prune|ci) [^&]*--omit=dev/.test(i.args))).toBe(true);
    expect(
      ops('RUN').some((i) => /npm (ci|install)(?![^&]*--omit=dev)/.test(i.args)),
      'the runtime stage installs nothing with dev deps',
    ).toBe(false);
    expect(ops('COPY').some((i) => i.args.includes(`--from=${build.name}`) && i.args.includes('node_modules'))).toBe(true);
  });

  it('copies files that exist, runs as a non-root user, and starts a binary of package.json', () => {
    for (const c of ops('COPY').filter((i) => !i.args.includes('--from='))) {
      const parts = c.args.split(/\s+/).filter((a) => !a.startsWith('--'));
      for (const src of parts.slice(0, -1)) expect(exists(src), `COPY ${src}`).toBe(true);
    }
    const user = ops('USER').at(-1)?.args;
    expect(user && !/^(root|0)(:|$)/.test(user), `USER ${user}`).toBe(true);
    const cmd = execForm(ops('CMD').at(-1)!.args);
    expect(Object.values(pkg.bin)).toContain(cmd[1]);
  });

  it('runs howk-dev on every interface of the container with API keys on, which howk-dev accepts', () => {
    const cmd = execForm(ops('CMD').at(-1)!.args);
    expect(cmd.slice(0, 2)).toEqual(['node', 'bin/howk-dev.mjs']);
    // The image's ENV, as the process sees it; then howk-dev's own start-up reading of it.
    const env = Object.fromEntries(ops('ENV').flatMap((i) => i.args.split(/\s+/).map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string])));
    const start = (e: Record<string, string>) => {
      const bind = parseBindArgs(parseDevArgs(cmd.slice(2)).rest);
      const { config, sources } = loadProcessConfig(parseFlags(bind.rest), e);
      applyDevDefaults(config, sources);
      return { config, refusal: bindRefusal(config, bind.insecureOpen) };
    };
    const { config, refusal } = start(env);
    expect(config.api.host, 'reachable through a published port').toBe('0.0.0.0');
    expect(config.api.auth.enabled).toBe(true);
    expect(refusal).toBeUndefined();
    expect(start({ ...env, HOWK_API_AUTH_ENABLED: 'false' }).refusal, 'keys off on 0.0.0.0 is refused').toMatch(/refusing to listen on 0\.0\.0\.0/);
  });

  it('has a HEALTHCHECK running a script of the image', () => {
    const hc = ops('HEALTHCHECK').at(-1);
    expect(hc, 'HEALTHCHECK present').toBeTruthy();
    const cmd = execForm(hc!.args);
    expect(cmd[0]).toBe('node');
    expect(exists(cmd[1]!)).toBe(true);
    expect(ops('COPY').some((i) => i.args.includes(cmd[1]!.split('/').slice(0, -1).join('/')))).toBe(true);
  });
});

describe('.dockerignore', () => {
  it('keeps installed modules, git history and local data out of the build context', () => {
    const lines = readRepo('.dockerignore').split('\n');
    for (const p of ['node_modules', '.git', '.howk', '.env']) expect(lines, p).toContain(p);
  });
});
