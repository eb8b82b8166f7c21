import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configLeaves, loadConfig } from '../../core/config/load';
import { ConfigSchema } from '../../core/config/schema';
import { resolveReplication, topicSpecs } from '../../core/pipeline/topics';
import { lintHcl } from '../helpers/hcl-lint';

// `terraform fmt -check` runs in `npm test` where a terraform binary exists; `terraform
// validate` needs the providers, which `terraform init` downloads from the registry. This
// checks, everywhere, that each file reads as HCL laid out as `terraform fmt` lays it out, and
// that the modules agree with the config schema, package.json and wrangler.toml.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TF = join(ROOT, 'infra/terraform');
const walk = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
const files = walk(TF).filter((f) => /\.tf$|\.tfvars(\.example)?$/.test(f) && !f.includes('/.terraform/'));
const read = (path: string) => readFileSync(join(TF, path), 'utf8');
const defaults = ConfigSchema.parse({});
const envNames = new Set(configLeaves().flatMap((l) => [l.env, ...l.aliases]));

/** `variable "name" { … default = <number> }` */
const numberDefault = (src: string, name: string): number => Number(new RegExp(`variable "${name}" \\{[^}]*?default\\s*=\\s*(\\d+)`, 's').exec(src)?.[1]);

describe('infra/terraform files', () => {
  it('are there: the edge, the Kafka topics and Node fleet modules, and a root that uses both', () => {
    const names = files.map((f) => relative(TF, f));
    for (const f of ['edge/main.tf', 'modules/kafka-topics/main.tf', 'modules/node-fleet/main.tf', 'fleet/main.tf']) expect(names).toContain(f);
  });

  it('read as HCL and follow the layout of terraform fmt', () => {
    for (const f of files) expect(lintHcl(readFileSync(f, 'utf8')), relative(TF, f)).toEqual([]);
  });

  it('name only HOWK_* variables that the config schema reads', () => {
    for (const f of files) {
      for (const name of readFileSync(f, 'utf8').match(/HOWK_[A-Z0-9_]+/g) ?? []) expect(envNames.has(name), `${relative(TF, f)}: ${name}`).toBe(true);
    }
  });
});

describe('the layout check', () => {
  it('catches what terraform fmt would change, and unbalanced brackets', () => {
    expect(lintHcl('locals {\n  a = 1\n  bbb = 2\n}\n')).toHaveLength(1);
    expect(lintHcl('locals {\n    a = 1\n}\n')[0]?.message).toMatch(/indent/);
    expect(lintHcl('locals {\n\ta = 1\n}\n').map((p) => p.message)).toContain('tab');
    expect(lintHcl('locals {\n  a = [1, 2\n}\n').length).toBeGreaterThan(0);
    expect(lintHcl('locals {\n  a = "x\n}\n').length).toBeGreaterThan(0);
    expect(lintHcl('locals {\n  a   = 1\n  bbb = "${x["k"]}" # c\n\n  list = [{\n    x = 1\n  }]\n}\n')).toEqual([]);
  });
});

describe('modules/kafka-topics', () => {
  const vars = read('modules/kafka-topics/variables.tf');
  const main = read('modules/kafka-topics/main.tf');

  it('declares one kafka_topic per Howk topic, shaped like the ones the binaries create', () => {
    expect(main).toMatch(/resource "kafka_topic" "howk" \{\s*for_each\s*=\s*local\.topics/);
    const names = Object.fromEntries([...vars.matchAll(/^\s{4}(\w+)\s*=\s*"([^"]+)"$/gm)].map((m) => [m[1], m[2]]));
    const shapes = [...main.matchAll(/^\s*(\w+)\s*=\s*\{ partitions = (var\.partitions|\d+), compacted = (true|false) \}/gm)];
    const partitions = numberDefault(vars, 'partitions');
    const declared = shapes.map((m) => ({ name: names[m[1]!], partitions: m[2] === 'var.partitions' ? partitions : Number(m[2]), compacted: m[3] === 'true' }));
    const expected = topicSpecs(defaults).map((s) => ({ name: s.name, partitions: s.partitions, compacted: s.compacted ?? false }));
    expect(declared).toEqual(expected);
  });

  it('defaults to the config: partitions, replication factor, retention', () => {
    expect(numberDefault(vars, 'partitions')).toBe(defaults.kafka.partitions);
    // The module cannot count brokers: it defaults to what `auto` gives on a production
    // cluster of three or more, 3 replicas of which 2 hold each acknowledged write.
    const onThree = resolveReplication(topicSpecs(defaults)[0]!, 3);
    expect(numberDefault(vars, 'replication_factor')).toBe(3);
    expect(numberDefault(vars, 'replication_factor')).toBe(onThree.replicationFactor);
    expect(numberDefault(vars, 'min_insync_replicas')).toBe(2);
    expect(numberDefault(vars, 'min_insync_replicas')).toBe(onThree.minInsyncReplicas);
    expect(main).toContain('var.min_insync_replicas == null ? {} : { "min.insync.replicas" = tostring(var.min_insync_replicas) }');
    expect(numberDefault(vars, 'retention_ms')).toBe(defaults.kafka.retention);
    expect(main).toContain('"cleanup.policy" = "compact"');
    expect(main).toContain('"retention.ms" = tostring(var.retention_ms)');
  });
});

describe('modules/node-fleet', () => {
  const main = read('modules/node-fleet/main.tf');
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  const binaries = [...main.matchAll(/^\s*(\w+)\s*=\s*\{ args = \[([^\]]*)\], port = (\d+), env = \{ ([^}]*) \} \}/gm)].map((m) => ({
    name: m[1]!,
    port: Number(m[3]),
    env: Object.fromEntries([...m[4]!.matchAll(/(HOWK_\w+) = "([^"]*)"/g)].map((e) => [e[1]!, e[2]!])),
  }));

  it('runs a Deployment for every production binary of package.json', () => {
    // howk-dev is the single-process mode and `howk` the operators' CLI: neither is a service.
    const production = Object.keys(pkg.bin)
      .filter((b) => b !== 'howk-dev' && b !== 'howk')
      .map((b) => b.replace(/^howk-/, ''))
      .sort();
    expect(binaries.map((b) => b.name).sort()).toEqual(production);
    expect(main).toContain('command = concat(["node", "bin/howk-${each.key}.mjs"], each.value.args)');
    for (const b of binaries) expect(pkg.bin[`howk-${b.name}`]).toBe(`bin/howk-${b.name}.mjs`);
  });

  it('probes /health (liveness) and /ready (readiness) on the port each binary serves them on', () => {
    expect(main).toMatch(/liveness_probe \{\s*http_get \{\s*path = "\/health"\s*port = each\.value\.port/);
    expect(main).toMatch(/readiness_probe \{\s*http_get \{\s*path = "\/ready"\s*port = each\.value\.port/);
    for (const b of binaries) {
      const c = loadConfig({ env: b.env });
      const [port, host] = b.name === 'api' ? [c.api.port, c.api.host] : b.name === 'bridge' ? [c.bridge.port, c.bridge.host] : [c.metrics.port, c.metrics.host];
      expect(port, b.name).toBe(b.port);
      expect(host, `${b.name} listens on the pod's address`).toBe('0.0.0.0');
    }
  });

  it('takes HOWK_* settings from a ConfigMap and a Secret, and scales howk-worker on consumer lag', () => {
    expect(main).toMatch(/env_from \{\s*config_map_ref/);
    expect(main).toMatch(/env_from \{\s*secret_ref/);
    expect(main).toMatch(/resource "kubernetes_horizontal_pod_autoscaler_v2" "worker"[\s\S]*type = "External"[\s\S]*name = var\.lag_metric_name/);
    expect(read('modules/node-fleet/variables.tf')).toMatch(/consumergroup = "howk-workers"/);
    expect(defaults.kafka.consumer_group).toBe('howk-workers');
  });
});

describe('a Redis Cluster and replicated topics in the fleet', () => {
  const fleetVars = read('modules/node-fleet/variables.tf');
  const fleetMain = read('modules/node-fleet/main.tf');
  const root = read('fleet/main.tf');
  const rootVars = read('fleet/variables.tf');
  /** The HOWK_* map the ConfigMap holds, as the module's expressions compute it. */
  const configMapOf = (env: Record<string, string>, nodes: string[]): Record<string, string> => {
    const local = /redis_env = length\(var\.redis_cluster_nodes\) == 0 \? \{\} : \{ (HOWK_\w+) = join\("(.)", var\.redis_cluster_nodes\) \}/.exec(fleetMain);
    expect(local, 'locals.redis_env').not.toBeNull();
    expect(fleetMain).toMatch(/resource "kubernetes_config_map_v1" "howk" \{[\s\S]*?data = merge\(var\.env, local\.redis_env\)\n\}/);
    return { ...env, ...(nodes.length ? { [local![1]!]: nodes.join(local![2]!) } : {}) };
  };
  const deployments = [...fleetMain.matchAll(/^\s*(\w+)\s*=\s*\{ args = \[/gm)].map((m) => m[1]!);

  it('gives every binary HOWK_REDIS_CLUSTER_NODES when redis_cluster_nodes is set, and a cluster config it loads', () => {
    expect(fleetVars).toMatch(/variable "redis_cluster_nodes" \{[^}]*type\s*=\s*list\(string\)\s*default\s*=\s*\[\]/s);
    const nodes = ['redis-0.redis:6379', 'redis-1.redis:6379', 'redis-2.redis:6379'];
    const env = configMapOf({ HOWK_REDIS_URL: 'redis://:pw@redis:6379' }, nodes);
    expect(env.HOWK_REDIS_CLUSTER_NODES).toBe('redis-0.redis:6379,redis-1.redis:6379,redis-2.redis:6379');
    // Each Deployment takes the whole ConfigMap (env_from), not a per-binary subset.
    expect(deployments).toEqual(expect.arrayContaining(['api', 'worker', 'scheduler', 'reconciler', 'bridge']));
    expect(fleetMain).toMatch(
      /resource "kubernetes_deployment_v1" "howk" \{\s*for_each = local\.binaries[\s\S]*env_from \{\s*config_map_ref \{\s*name = kubernetes_config_map_v1\.howk\.metadata\[0\]\.name/,
    );
    expect(loadConfig({ env }).redis).toMatchObject({ cluster_nodes: nodes });
  });

  it('leaves HOWK_REDIS_CLUSTER_NODES unset without a cluster: one Redis through HOWK_REDIS_URL', () => {
    const env = configMapOf({ HOWK_REDIS_URL: 'redis://redis:6379' }, []);
    expect(env).toEqual({ HOWK_REDIS_URL: 'redis://redis:6379' });
    expect(loadConfig({ env }).redis.url).toBe('redis://redis:6379');
  });

  it('the root passes the cluster nodes, and replication 3 with 2 in sync to the topics and the binaries', () => {
    expect(root).toMatch(/module "fleet" \{[\s\S]*redis_cluster_nodes = var\.redis_cluster_nodes/);
    expect(rootVars).toMatch(/variable "redis_cluster_nodes" \{[^}]*default\s*=\s*\[\]/s);
    expect(numberDefault(rootVars, 'replication_factor')).toBe(3);
    expect(numberDefault(rootVars, 'min_insync_replicas')).toBe(2);
    expect(root).toMatch(/module "topics" \{[^}]*min_insync_replicas\s*=\s*var\.min_insync_replicas/);
    expect(root).toMatch(/HOWK_KAFKA_MIN_INSYNC_REPLICAS = tostring\(var\.min_insync_replicas\)/);
    const c = loadConfig({ env: { HOWK_KAFKA_REPLICATION_FACTOR: '3', HOWK_KAFKA_MIN_INSYNC_REPLICAS: '2' } });
    expect([c.kafka.replication_factor, c.kafka.min_insync_replicas]).toEqual([3, 2]);
  });
});

describe('edge', () => {
  const main = read('edge/main.tf');

  it('leaves every Durable Object migration to wrangler deploy', () => {
    expect(main).not.toMatch(/^\s*migrations\s*=/m);
    const tags = [...readFileSync(join(ROOT, 'wrangler.toml'), 'utf8').matchAll(/^tag\s*=\s*"([^"]+)"/gm)].map((m) => m[1]);
    expect(tags.length).toBeGreaterThan(0);
    expect(main).toMatch(/precondition \{\s*condition\s*=\s*var\.deployed_migration_tag == local\.latest_tag/);
    expect(readFileSync(join(ROOT, 'scripts/edge-deploy.sh'), 'utf8')).toContain('deploy --env');
  });

  it('uses the Cloudflare provider v5 resources for the DNS record, route, versions and deployments only', () => {
    const types = [...main.matchAll(/^resource "(\w+)"/gm)].map((m) => m[1]).sort();
    expect(types).toEqual(['cloudflare_dns_record', 'cloudflare_worker_version', 'cloudflare_workers_deployment', 'cloudflare_workers_route']);
  });
});
