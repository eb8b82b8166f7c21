import { parseArgs } from 'node:util';
import { checkScope, CREDENTIAL_KEY_ENV, encryptCredential, importCredentialKey } from '../../core/lua';
import type { Out } from './keys';

// `howk credentials new-key | encrypt`: makes the keys and envelopes behind the Lua
// crypto.decrypt_credential(name) (docs/LUA.md). Offline: no Kafka, no config. The
// plaintext is read from standard input, never from the command line (shell history, ps).

export const CREDENTIALS_USAGE = `usage:
  howk credentials new-key                       prints a fresh base64 32-byte key for ${CREDENTIAL_KEY_ENV}<ID>
  howk credentials encrypt --name NAME --key-id ID --namespaces NS[,NS] --hosts HOST[,HOST] < plaintext
      encrypts standard input (one trailing newline dropped) with ${CREDENTIAL_KEY_ENV}<ID>
      and prints the lcred:v2 envelope to put under lua.credentials.NAME.
      --namespaces: the scripts that may decrypt it: a config id (exactly), <id>:* (every
        config below it), incoming:<transformer>, or *
      --hosts: where a request that used it may go: host names, *.domain for subdomains`;

const csv = (v: string | undefined): string[] =>
  (v ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

export const runCredentials = async (argv: string[], io: Out, input: () => Promise<string>, env: Record<string, string | undefined>): Promise<number> => {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { name: { type: 'string' }, 'key-id': { type: 'string' }, namespaces: { type: 'string' }, hosts: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const [cmd, ...rest] = positionals;
  if (cmd === 'new-key' && rest.length === 0) {
    io.out(Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'));
    io.err(`set it as ${CREDENTIAL_KEY_ENV}<ID> (e.g. ${CREDENTIAL_KEY_ENV}K1) on every howk-api and howk-worker`);
    return 0;
  }
  if (cmd !== 'encrypt' || rest.length || !values.name || !values['key-id'] || !values.namespaces || !values.hosts) {
    io.err(CREDENTIALS_USAGE);
    return 2;
  }
  // Checked before the key and the plaintext are touched.
  const scope = checkScope({ namespaces: csv(values.namespaces), hosts: csv(values.hosts) });
  const id = values['key-id'];
  const b64 = env[`${CREDENTIAL_KEY_ENV}${id}`];
  if (!b64) throw new Error(`${CREDENTIAL_KEY_ENV}${id} is not set`);
  const key = await importCredentialKey(id, b64);
  const plaintext = (await input()).replace(/\r?\n$/, '');
  if (!plaintext) throw new Error('nothing to encrypt on standard input');
  const envelope = await encryptCredential(id, key, values.name, plaintext, scope);
  io.out(envelope);
  io.err(`namespaces: ${scope.namespaces.join(', ')}; hosts: ${scope.hosts.join(', ')}`);
  io.err(`config: lua.credentials.${values.name} (YAML) or HOWK_LUA_CREDENTIALS='{"${values.name}":"${envelope}"}'`);
  return 0;
};

export const readStdin = async (): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};
