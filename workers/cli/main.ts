import { errorMessage } from '../../core/errors/errors';
import { configFromProcess } from '../node/config';
import { CREDENTIALS_USAGE, readStdin, runCredentials } from './credentials';
import { KEYS_USAGE, runKeys } from './keys';
import { REDIS_KEYS_USAGE, runRedisKeys } from './redis-keys';

// `howk <command>`: operator commands: `keys`, `credentials`, `redis-keys`.
const [command, ...args] = process.argv.slice(2);
const configFlag = args.indexOf('--config');
const io = { out: (s: string) => process.stdout.write(`${s}\n`), err: (s: string) => process.stderr.write(`${s}\n`) };

let code = 2;
try {
  if (command === 'credentials') {
    code = await runCredentials(args, io, readStdin, process.env);
  } else if (command === 'redis-keys') {
    code = await runRedisKeys(configFromProcess(configFlag >= 0 ? { config: args[configFlag + 1] } : {}), args, io);
  } else if (command !== 'keys') {
    io.err(`${KEYS_USAGE}\n${CREDENTIALS_USAGE}\n${REDIS_KEYS_USAGE}`);
  } else {
    const config = configFromProcess(configFlag >= 0 ? { config: args[configFlag + 1] } : {});
    code = await runKeys(config, args, io);
  }
} catch (e) {
  io.err(`howk ${command ?? ''}: ${errorMessage(e)}`);
  code = 1;
}
process.exit(code);
