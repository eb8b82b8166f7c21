import { createRequire } from 'node:module';
import { Command } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RespArgs } from '../../workers/redis/resp';
import { argsOf } from '../helpers/resp-args';
import { batchScript, scriptCallText } from '../../workers/redis/script-call';

// The hand-written RESP of the guard script calls must be the bytes ioredis sent for the same
// arguments (through defineCommand, as the guards called their scripts before).
const require = createRequire(import.meta.url);
type IoScript = { Command: new (name: string, args: unknown[]) => Command };
const Script = (require('ioredis/built/Script') as { default: new (lua: string, numberOfKeys?: number) => IoScript }).default;

const rng = (() => {
  let s = 0x2545f491;
  return () => ((s = (Math.imul(s, 1103515245) + 12345) | 0) >>> 0) / 2 ** 32;
})();
const text = (len: number) => Array.from({ length: len }, () => 'ab:_-é€😀\r\n$*0 '[Math.floor(rng() * 16)]).join('');
const NUMBERS = [0, 1, -1, 7, 42.5, 0.1, 1e21, 1.5e-7, 2 ** 53, Date.now(), -0, 123456789012];

/** What ioredis's script command writes: EVAL on a connection's first call, EVALSHA after. */
const ioredisText = (lua: string, values: (string | number)[]) => {
  const script = new Script(lua);
  const sha = batchScript(lua).sha;
  const socket = {};
  const first = new script.Command('evalsha', [sha, 0, ...values]).toWritable(socket);
  const then = new script.Command('evalsha', [sha, 0, ...values]).toWritable(socket);
  return { eval: String(first), evalsha: String(then) };
};

describe('RESP of a batch script call', () => {
  it('is what ioredis writes for the same arguments, as EVALSHA and as EVAL', () => {
    const lua = `-- é\nreturn ${text(30).replace(/\W/g, '')}`;
    for (let round = 0; round < 200; round++) {
      const values = Array.from({ length: Math.floor(rng() * 40) }, (_, i) =>
        rng() < 0.4 ? NUMBERS[Math.floor(rng() * NUMBERS.length)]! : rng() < 0.1 ? '' : text(Math.floor(rng() * (i % 5 === 0 ? 300 : 20))),
      );
      const ours = { evalsha: scriptCallText(batchScript(lua), argsOf(values), 'evalsha'), eval: scriptCallText(batchScript(lua), argsOf(values), 'eval') };
      expect(ours).toEqual(ioredisText(lua, values));
    }
  });

  it('with a slot key, is what ioredis writes for numkeys 1 and that key (a cluster routes the call by it)', () => {
    const lua = 'return ARGV';
    const script = new Script(lua, 1);
    const socket = {};
    const values = ['a', 7, 'é'];
    new script.Command('evalsha', [batchScript(lua).sha, 1, 'inflight:{h}', ...values]).toWritable(socket);
    const theirs = String(new script.Command('evalsha', [batchScript(lua).sha, 1, 'inflight:{h}', ...values]).toWritable(socket));
    expect(scriptCallText(batchScript(lua), argsOf(values), 'evalsha', 'inflight:{h}')).toBe(theirs);
  });

  it('counts UTF-8 bytes, not UTF-16 units, in a bulk length', () => {
    const w = new RespArgs().str('é€😀').num(12).str('');
    expect(w.count).toBe(3);
    expect(w.text).toBe('$9\r\né€😀\r\n$2\r\n12\r\n$0\r\n\r\n');
  });

  it('appends arguments encoded beforehand, counted', () => {
    const shared = new RespArgs().str('a').num(1);
    const w = new RespArgs().num(5).append(shared).encoded(shared.text, shared.count);
    expect(w.count).toBe(5);
    expect(scriptCallText(batchScript('return 1'), w, 'evalsha')).toBe(ioredisText('return 1', [5, 'a', 1, 'a', 1]).evalsha);
  });
});
