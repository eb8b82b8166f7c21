import { Command, Option } from 'commander';
import { registerDeliveries } from './deliveries';
import { registerDlq } from './dlq';
import { registerDoctor } from './doctor';
import { registerEndpoints } from './endpoints';
import { registerTopics } from './topics';
import type { GlobalOpts } from './io';

// The `howk` command line: one program, subcommands, --json on every one of them.

/** Commands that keep their own argument parsing (they predate this program). */
export const OWN_PARSERS = ['keys', 'credentials', 'redis-keys'] as const;

export const buildProgram = (): Command => {
  const program = new Command('howk');
  const globals = () => program.opts<GlobalOpts>();
  program
    .description('Operate Howk: webhook status and listings, dead-letter replay, endpoints, topics, and a doctor')
    .option('--json', 'machine output: one JSON document on stdout')
    .addOption(new Option('--url <url>', 'howk-api base URL (default http://127.0.0.1:8080)').env('HOWK_URL'))
    .addOption(new Option('--key <key>', 'API key (Bearer)').env('HOWK_API_KEY'))
    .option('--config <file>', 'YAML config, as for the binaries (Kafka and Redis settings of doctor and topics; HOWK_* variables apply too)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    .configureOutput({ writeErr: (s) => process.stderr.write(s) });
  registerDeliveries(program, globals);
  registerDlq(program, globals);
  registerEndpoints(program, globals);
  registerTopics(program, globals);
  registerDoctor(program, globals);
  program.command('keys').description('API keys: create | list | revoke (Kafka directly; `howk keys --help`)');
  program.command('credentials').description('Lua credentials: new-key | encrypt (offline; `howk credentials --help`)');
  program.command('redis-keys').description('Redis key migrations: migrate-kv (`howk redis-keys --help`)');
  // Every subcommand stops on a usage error instead of exiting by itself (main.ts maps it to 2).
  const walk = (c: Command): void => {
    c.exitOverride();
    c.showHelpAfterError('(run with --help for usage)');
    c.commands.forEach(walk);
  };
  program.commands.forEach(walk);
  return program;
};
