import { describe, expect, it } from 'vitest';
import { parseBundle } from '../../edge/incoming/bundle';
import { authOf } from '../../core/transformers/guard';
import { checkBasicAuth, scriptFromFiles } from '../../core/transformers/registry';
import { parseSettings } from '../../core/transformers/settings';

// name.json: one schema for howk-api, howk-dev and the edge's bundler.

describe('name.json', () => {
  it('reads every key, the _delivery_* templates under their route names', () => {
    expect(
      parseSettings({
        allowed_domains: ['*.example.com'],
        config_id: 'stripe-events',
        allowed_hosts: ['api.example.com'],
        max_webhooks: 10,
        _delivery_headers: { Authorization: 'Bearer ${TOKEN}' },
        _delivery_query_params: { k: '${KEY}' },
        verify: { provider: 'stripe', secrets: ['STRIPE_WHSEC', 'STRIPE_WHSEC_OLD'], tolerance: 300 },
        basic_auth_secret: 'INCOMING_AUTH',
      }),
    ).toEqual({
      allowed_domains: ['*.example.com'],
      config_id: 'stripe-events',
      allowed_hosts: ['api.example.com'],
      max_webhooks: 10,
      delivery_headers: { authorization: 'Bearer ${TOKEN}' },
      delivery_query_params: { k: '${KEY}' },
      verify: { provider: 'stripe', secrets: ['STRIPE_WHSEC', 'STRIPE_WHSEC_OLD'], tolerance: 300 },
      basic_auth_secret: 'INCOMING_AUTH',
    });
  });

  it('refuses the old http_allow key, naming allowed_hosts', () => {
    expect(() => parseSettings({ http_allow: ['api.example.com'] })).toThrow('http_allow was renamed allowed_hosts');
  });

  it('refuses unknown keys (a misspelt template key must not drop the auth header silently)', () => {
    expect(() => parseSettings({ _delivery_header: { Authorization: 'x' } })).toThrow('unknown key _delivery_header');
  });

  it('names the bad field: a malformed template, a secret value where a name belongs, a HOWK_ name, an unknown provider', () => {
    expect(() => parseSettings({ _delivery_headers: { Authorization: 'Bearer ${TOKEN' } })).toThrow(/_delivery_headers: .*malformed template/);
    expect(() => parseSettings({ verify: { provider: 'github', secrets: ['s3cr3t value!'] } })).toThrow(/verify\.secrets\.0: must be the name of a secret/);
    expect(() => parseSettings({ basic_auth_secret: 'HOWK_SECRETS_KEY' })).toThrow(/basic_auth_secret: must be the name of a secret/);
    expect(() => parseSettings({ verify: { provider: 'paypal', secrets: ['X'] } })).toThrow(/verify\.provider/);
    expect(() => parseSettings([])).toThrow('must be a JSON object');
  });

  it('fails the edge build on the same problems, naming the transformer', () => {
    const bundle = (json: string, passwd: string | null = null) => ({ transformers: [{ name: 't1', code: 'x = 1', json, passwd }] });
    expect(() => parseBundle(bundle('{"http_allow": []}'))).toThrow('transformer t1: t1.json: http_allow was renamed allowed_hosts');
    expect(() => parseBundle(bundle('{}', 'ops:$2b$10$short'))).toThrow('transformer t1: t1.passwd: line 1: malformed bcrypt hash for ops');
    expect(parseBundle(bundle('{"_delivery_headers": {"X-Key": "${K}"}}')).get('t1')!.settings.delivery_headers).toEqual({ 'x-key': '${K}' });
  });
});

describe('Basic auth users: name.passwd and basic_auth_secret', () => {
  const basic = (cred: string) => `Basic ${btoa(cred)}`;
  const script = (json: object, passwd: string | null) => scriptFromFiles({ name: 't', code: '', json: JSON.stringify(json), passwd });

  it('adds the secret’s users to the file’s; a named secret that is unset refuses everything', async () => {
    const s = script({ basic_auth_secret: 'T_AUTH' }, 'alice:from-file\n');
    const env: Record<string, string> = { T_AUTH: 'bob:from-secret\nalice:overridden' };
    const auth = authOf(s, (n) => env[n]);
    expect((await checkBasicAuth(auth, basic('bob:from-secret'))).ok).toBe(true);
    expect((await checkBasicAuth(auth, basic('alice:overridden'))).ok).toBe(true);
    expect((await checkBasicAuth(auth, basic('alice:from-file'))).ok).toBe(false);
    expect(authOf(s, () => undefined)).toEqual({ kind: 'refuse', reason: 'basic_auth_secret T_AUTH is not set' });
    expect(authOf(s, () => 'no colon here').kind).toBe('refuse');
  });
});
