import { parseArgs } from 'node:util';
import type { Config } from '../../core/config/schema';
import { createLogger } from '../../core/ports/logger';
import { topicSpecs } from '../../core/pipeline/topics';
import { systemClock } from '../../core/ports/clock';
import { SCOPES, type Scope } from '../../core/security/api-keys';
import { startSecurityState } from '../../core/security/runtime';
import { kafkaLogFrom } from '../node/adapters';

// `howk keys create|list|revoke`: talks to Kafka directly (the keys topic is the source of
// truth), so it works before any admin key exists and while no api instance runs. Every
// api instance picks the change up through its replica of the topic.

export const KEYS_USAGE = `usage:
  howk keys create --scopes enqueue,read,admin [--configs cfg1,cfg2] [--name text]
  howk keys list
  howk keys revoke <key id>
options: --config file.yaml (Kafka settings, as for the binaries; or HOWK_KAFKA_* variables)`;

export type Out = { out: (s: string) => void; err: (s: string) => void };

const parseScopes = (raw: string | undefined): Scope[] => {
  const scopes = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!scopes.length) throw new Error('--scopes is required (enqueue, read, admin)');
  for (const s of scopes) if (!(SCOPES as readonly string[]).includes(s)) throw new Error(`unknown scope ${JSON.stringify(s)} (enqueue, read, admin)`);
  return scopes as Scope[];
};

/** Runs one `keys` command; returns the exit code. */
export const runKeys = async (config: Config, argv: string[], io: Out): Promise<number> => {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { scopes: { type: 'string' }, configs: { type: 'string' }, name: { type: 'string' }, config: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const [cmd, ...rest] = positionals;
  if (!cmd || !['create', 'list', 'revoke'].includes(cmd) || (cmd === 'revoke' && rest.length !== 1)) {
    io.err(KEYS_USAGE);
    return 2;
  }
  const scopes = cmd === 'create' ? parseScopes(values.scopes) : [];
  const log = createLogger('howk-keys', 'warn', (l) => io.err(l));
  const logStore = kafkaLogFrom(config, 'keys-cli');
  try {
    await logStore.admin.ensureTopics(topicSpecs(config).filter((t) => t.name === config.kafka.topics.keys));
    const state = startSecurityState({ config, logStore, log, clock: systemClock, keys: true, secrets: false, instance: 'cli' });
    try {
      await state.ready;
      const keys = state.keys!;
      if (cmd === 'create') {
        const configIds = values.configs
          ?.split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        const created = await keys.create({ name: values.name, scopes, config_ids: configIds });
        io.out(JSON.stringify(created));
        io.err(`created API key ${created.id}: store the key now, it is not shown again (only its SHA-256 is kept)`);
      } else if (cmd === 'list') {
        for (const k of keys.list()) io.out(JSON.stringify(k));
      } else {
        io.out(JSON.stringify(await keys.revoke(rest[0]!)));
      }
      return 0;
    } finally {
      await state.stop();
    }
  } finally {
    await logStore.close();
  }
};
