import { describe, expect, it } from 'vitest';
import { checkTemplates, templateVars } from '../../../core/domain/templates';
import { resolveDelivery } from '../../../core/transformers/secret-templates';
import { runTransformer } from '../../../core/lua';

// ${VAR} delivery templates (core/domain/templates.ts, core/transformers/secret-templates.ts).

describe('delivery secret templates', () => {
  const env: Record<string, string> = { TOKEN: 'tok$1&x', KEY: 'k=1 2', NL: 'a\r\nb' };
  const lookup = (n: string) => env[n];
  const hosts = { TOKEN: ['h.example'], KEY: ['*.example'], NL: ['h.example'], GONE: ['h.example'] };

  it('validates template maps and names their variables', () => {
    expect(checkTemplates({ Authorization: 'Bearer ${TOKEN}', 'X-Two': '${A}-${B_2}' }, 'header')).toEqual({ authorization: 'Bearer ${TOKEN}', 'x-two': '${A}-${B_2}' });
    expect(templateVars({ a: '${A} ${B}', b: '${A}' })).toEqual(['A', 'B']);
    expect(() => checkTemplates({ Authorization: 'Bearer ${TOKEN' }, 'header')).toThrow(/malformed template/);
    expect(() => checkTemplates({ Authorization: 'Bearer ${1X}' }, 'header')).toThrow(/malformed template/);
    expect(() => checkTemplates({ 'webhook-signature': '${X}' }, 'header')).toThrow(/reserved/);
    // The reserved set plus the two headers the sender always writes itself.
    for (const name of ['Host', 'Content-Length', 'X-Webhook-Id', 'Content-Type', 'User-Agent']) {
      expect(() => checkTemplates({ [name]: '${X}' }, 'header')).toThrow(`delivery headers: ${name.toLowerCase()} is reserved`);
    }
    expect(() => checkTemplates({ 'bad name': '${X}' }, 'query')).toThrow(/invalid parameter name/);
    expect(() => checkTemplates(['x'], 'query')).toThrow(/table of name = value/);
  });

  it('resolves allow-listed variables into headers and query parameters, values verbatim', () => {
    const r = resolveDelivery(
      { endpoint: 'https://h.example/p?a=1', delivery_headers: { authorization: 'Bearer ${TOKEN}' }, delivery_query_params: { api_key: '${KEY}' } },
      new Set(['TOKEN', 'KEY']),
      lookup,
      hosts,
    );
    expect(r).toEqual({ ok: true, url: 'https://h.example/p?a=1&api_key=k%3D1+2', headers: { authorization: 'Bearer tok$1&x' } });
    expect(resolveDelivery({ endpoint: 'https://h.example/' }, new Set(), lookup, hosts)).toEqual({ ok: true, url: 'https://h.example/', headers: {} });
  });

  it('refuses a variable outside the allowlist or unset, without asking the environment or showing values', () => {
    const asked: string[] = [];
    const spy = (n: string) => (asked.push(n), env[n]);
    const out = resolveDelivery({ endpoint: 'https://h.example/', delivery_headers: { a: '${TOKEN}' } }, new Set(['KEY']), spy, hosts);
    expect(out).toEqual({ ok: false, reason_type: 'secret_not_allowed', message: '${TOKEN} is not in lua.secret_env_allowlist' });
    expect(asked).toEqual([]);
    expect(resolveDelivery({ endpoint: 'https://h.example/', delivery_query_params: { a: '${GONE}' } }, new Set(['GONE']), lookup, hosts)).toMatchObject({
      ok: false,
      reason_type: 'secret_missing',
    });
    const nl = resolveDelivery({ endpoint: 'https://h.example/', delivery_headers: { a: '${NL}' } }, new Set(['NL']), lookup, hosts);
    expect(nl).toMatchObject({ ok: false, reason_type: 'secret_missing' });
    expect(JSON.stringify(nl)).not.toContain('a\\r\\nb');
  });

  it('sends a variable only to its lua.secret_env_hosts, without reading it otherwise', () => {
    const asked: string[] = [];
    const spy = (n: string) => (asked.push(n), env[n]);
    const w = { endpoint: 'https://evil.test/x?q=1', delivery_query_params: { k: '${TOKEN}' } };
    expect(resolveDelivery(w, new Set(['TOKEN']), spy, hosts)).toEqual({
      ok: false,
      reason_type: 'secret_host_not_allowed',
      message: '${TOKEN} may not be sent to evil.test (not in lua.secret_env_hosts.TOKEN)',
    });
    // A variable without an entry goes nowhere.
    expect(resolveDelivery({ endpoint: 'https://h.example/', delivery_headers: { a: '${TOKEN}' } }, new Set(['TOKEN']), spy, {})).toMatchObject({
      ok: false,
      reason_type: 'secret_host_not_allowed',
    });
    expect(asked).toEqual([]);
    // *.example covers subdomains, not the apex.
    expect(resolveDelivery({ endpoint: 'https://a.h.example/', delivery_headers: { a: '${KEY}' } }, new Set(['KEY']), lookup, hosts)).toMatchObject({ ok: true });
    expect(resolveDelivery({ endpoint: 'https://example/', delivery_headers: { a: '${KEY}' } }, new Set(['KEY']), lookup, hosts)).toMatchObject({
      ok: false,
      reason_type: 'secret_host_not_allowed',
    });
  });

  it('howk.post takes per-webhook templates in opts', async () => {
    const r = await runTransformer(
      `assert(howk.post('https://h.example/x', {}, { delivery_headers = { ['X-Key'] = '\${KEY}' }, delivery_query_params = { t = '\${TOKEN}' } }))
       local ok, err = howk.post('https://h.example/y', {}, { delivery_headers = { ['X-Key'] = '\${KEY' } })
       assert(not ok and err:find('malformed template'))`,
      { body: '{}', headers: {} },
    );
    expect(r.webhooks).toHaveLength(1);
    expect(r.webhooks[0]).toMatchObject({ delivery_headers: { 'x-key': '${KEY}' }, delivery_query_params: { t: '${TOKEN}' } });
  });
});
