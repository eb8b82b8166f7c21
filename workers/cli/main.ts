import { CommanderError } from 'commander';
import { errorMessage } from '../../core/errors/errors';
import { configFromProcess } from '../node/config';
import { CREDENTIALS_USAGE, readStdin, runCredentials } from './credentials';
import { CliError } from './io';
import { KEYS_USAGE, runKeys } from './keys';
import { buildProgram, OWN_PARSERS } from './program';
import { REDIS_KEYS_USAGE, runRedisKeys } from './redis-keys';

// `howk <command>` (bin/howk.mjs, `npm run howk -- ...`). Exit codes: 0 done, 1 failed (an
// unreachable service, an API error, a failed doctor check), 2 bad usage.
const argv = process.argv.slice(2);
const io = { out: (s: string) => process.stdout.write(`${s}\n`), err: (s: string) => process.stderr.write(`${s}\n`) };

/** keys, credentials and redis-keys parse their own arguments, as they did before the program. */
const runOwn = async (command: string, args: string[]): Promise<number> => {
  const configFlag = args.indexOf('--config');
  const config = () => configFromProcess(configFlag >= 0 ? { config: args[configFlag + 1] } : {});
  if (args.includes('--help') || args.includes('-h')) {
    io.out(command === 'keys' ? KEYS_USAGE : command === 'credentials' ? CREDENTIALS_USAGE : REDIS_KEYS_USAGE);
    return 0;
  }
  if (command === 'credentials') return runCredentials(args, io, readStdin, process.env);
  if (command === 'redis-keys') return runRedisKeys(config(), args, io);
  return runKeys(config(), args, io);
};

const run = async (): Promise<number> => {
  // The first word that is not a global option or its value names the command.
  let at = 0;
  while (at < argv.length && argv[at]!.startsWith('-')) at += ['--url', '--key', '--config'].includes(argv[at]!) ? 2 : 1;
  const command = argv[at];
  if (command && (OWN_PARSERS as readonly string[]).includes(command)) {
    try {
      // A --config given before the command is theirs too.
      const before = argv.slice(0, at);
      const config = before.indexOf('--config');
      return await runOwn(command, [...argv.slice(at + 1), ...(config >= 0 ? ['--config', before[config + 1]!] : [])]);
    } catch (e) {
      // node:util parseArgs refuses unknown flags with ERR_PARSE_ARGS_*: a usage error.
      io.err(`howk ${command}: ${errorMessage(e)}`);
      return String((e as { code?: string }).code).startsWith('ERR_PARSE_ARGS') ? 2 : 1;
    }
  }
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : 2;
    if (e instanceof CliError) {
      if (e.message) io.err(`howk: ${e.message}`);
      return e.exitCode;
    }
    io.err(`howk: ${errorMessage(e)}`);
    return 1;
  }
};

const code = await run();
// Exit once stdout is flushed: a pipe takes 64 KB at a time, and process.exit drops the rest.
// Exiting at all (rather than letting the loop drain) stops Kafka and Redis clients' timers.
process.stdout.write('', () => process.exit(code));
