import { describe, expect, it } from 'vitest';
import { encodeWebhook, type Webhook } from '../../core/records/webhook';
import { deadLetterView, redactEndpoint, redactHeaders } from '../../core/pipeline/redact';

describe('redaction', () => {
  it('masks headers by name pattern, whatever the exact name', () => {
    const h = {
      'X-Auth': 'a',
      'X-Session': 'b',
      'X-Session-Id': 'c',
      'X-Api-Key': 'd',
      'X-Upstream-Token': 'e',
      Authorization: 'f',
      'X-CSRF': 'g',
      'X-Passwd': 'h',
      'X-Hub-Signature-256': 'i',
      'Content-Type': 'application/json',
      'X-Request-Id': 'r1',
    };
    expect(redactHeaders(h)).toEqual({ ...Object.fromEntries(Object.keys(h).map((k) => [k, '[redacted]'])), 'Content-Type': 'application/json', 'X-Request-Id': 'r1' });
  });

  it('redacts userinfo always and every query value, keeping scheme, host, port, path and parameter names', () => {
    expect(redactEndpoint('https://u:p@hooks.example.com:8443/in/x?token=t&page=2&flag')).toBe(
      'https://[redacted]@hooks.example.com:8443/in/x?token=[redacted]&page=[redacted]&flag=[redacted]',
    );
    expect(redactEndpoint('https://user@hooks.example.com/in')).toBe('https://[redacted]@hooks.example.com/in');
    expect(redactEndpoint('https://hooks.example.com/in')).toBe('https://hooks.example.com/in');
    expect(redactEndpoint('not a url with secret')).toBe('[redacted]');
  });

  it('shows a dead letter with its webhook masked and the payload bytes untouched', () => {
    const w: Webhook = {
      id: 'wh_1',
      config_id: 'c',
      endpoint: 'https://u:pw@h.example/x?sig=s',
      endpoint_hash: 'e',
      payload: '{"b":  1.50}',
      headers: { 'X-Auth': 'xa', 'X-Plain': 'p' },
      attempt: 0,
      max_attempts: 1,
      deferrals: 0,
      created_at: 't',
      scheduled_at: 't',
    };
    const record = `{"webhook_id":"wh_1","reason_type":"exhausted","webhook":${encodeWebhook(w)}}`;
    const shown = deadLetterView(record);
    expect(shown).not.toMatch(/pw|sig=s|"xa"/);
    expect(shown).toContain('"payload":{"b":  1.50}');
    expect(JSON.parse(shown).webhook).toMatchObject({ endpoint: 'https://[redacted]@h.example/x?sig=[redacted]', headers: { 'X-Auth': '[redacted]', 'X-Plain': 'p' } });
    // A record this version cannot decode is masked all the same.
    const odd = deadLetterView('{"webhook":{"endpoint":"https://u:pw@h/x","headers":{"X-Session":"s1"}}}');
    expect(odd).not.toMatch(/pw|s1/);
  });
});
