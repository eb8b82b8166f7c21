// Runs a command with real Kafka + Redis available (started here unless given).
import { spawnSync } from 'node:child_process';
import { root, withInfra } from './infra.mjs';

const [cmd, ...args] = process.argv.slice(2);
const code = await withInfra(async () => spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: process.env, shell: false }).status ?? 1);
process.exit(code);
