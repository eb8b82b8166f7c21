import type { Webhook } from '../../core/domain/webhook';

/** A first-attempt webhook for pipeline unit tests; `patch` sets what a test cares about. */
export const testWebhook = (patch: Partial<Webhook> = {}): Webhook => ({
  id: 'wh_1',
  config_id: 'cfg',
  endpoint: 'http://127.0.0.1:9/e',
  endpoint_hash: 'ep',
  payload: '{}',
  headers: {},
  attempt: 0,
  max_attempts: 3,
  deferrals: 0,
  created_at: '2026-01-01T00:00:00.000Z',
  scheduled_at: '2026-01-01T00:00:00.000Z',
  ...patch,
});
