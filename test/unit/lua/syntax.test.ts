import { describe, expect, it } from 'vitest';
import { checkSyntax } from '../../../core/lua/engine';
import { LuaRuntimeError, LuaSyntaxError } from '../../../core/lua/errors';
import { HowkError } from '../../../core/errors/errors';
import { deliver, engine } from './helpers';

describe('syntax and runtime errors', () => {
  it('checkSyntax accepts valid code without running it', async () => {
    await expect(checkSyntax(`while true do end`, engine)).resolves.toBeUndefined();
    await expect(checkSyntax(`request.headers['X'] = 'y'`, engine)).resolves.toBeUndefined();
  });

  it("a syntax error names Lua's line number", async () => {
    const err = await checkSyntax(`local a = 1\nlocal b = 2\nif a then\n  b = = 3\nend`, engine).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LuaSyntaxError);
    expect(err).toBeInstanceOf(HowkError);
    expect(err).toMatchObject({ code: 'script_syntax_error', line: 4 });
    expect((err as Error).message).toMatch(/^script:4: unexpected symbol near '='/);
  });

  it('an unfinished block points at <eof>', async () => {
    await expect(checkSyntax(`if true then\n  x = 1\n`, engine)).rejects.toMatchObject({ code: 'script_syntax_error', line: 3, message: expect.stringMatching(/'end' expected/) });
  });

  it('running a script with a syntax error fails the same way', async () => {
    await expect(deliver(`local = 1`)).rejects.toMatchObject({ code: 'script_syntax_error', line: 1 });
  });

  it('a runtime error carries its line and a traceback of script frames', async () => {
    const err = (await deliver(`local function f(t)\n  return t.x.y\nend\nf({})`).catch((e: unknown) => e)) as LuaRuntimeError;
    expect(err).toBeInstanceOf(LuaRuntimeError);
    expect(err).toMatchObject({ code: 'script_runtime_error', line: 2 });
    expect(err.message).toMatch(/^script:2: attempt to index a nil value \(field 'x'\)/);
    expect(err.traceback).toMatch(/script:2: in/);
    expect(err.traceback).toMatch(/script:4: in/);
    expect(err.traceback).not.toMatch(/howk:/);
  });

  it('misusing a module names the script line too', async () => {
    await expect(deliver(`local x = 1\nlocal v = crypto.sha256({})`)).rejects.toMatchObject({ line: 2, message: "script:2: bad argument #1 to 'crypto.sha256' (string expected)" });
    // kv.get is a prelude wrapper around the host function: the script's line is still found.
    const kv = { get: async () => null, set: async () => {}, del: async () => {} };
    await expect(deliver(`\n\nkv.get({})`, { services: { kv } })).rejects.toMatchObject({ line: 3, message: "script:3: bad argument #1 to 'kv.get' (string expected)" });
  });

  it('error() with a table or a custom message', async () => {
    await expect(deliver(`error('custom failure', 0)`)).rejects.toMatchObject({ code: 'script_runtime_error', message: 'custom failure' });
    await expect(deliver(`error({code = 1})`)).rejects.toThrow(/error object is a non-string value/);
  });
});
