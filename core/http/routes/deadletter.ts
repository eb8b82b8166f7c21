import { z } from 'zod';
import type { Config } from '../../config/schema';
import { NotFoundError } from '../../errors/errors';
import { DL_CURSOR, parseDeadLetterListQuery, REASON } from '../../reconcile/listing';
import { deadLetterView } from '../../pipeline/redact';
import { CONFIG_ID } from '../../domain/config-id';
import type { Webhook } from '../../domain/webhook';
import type { DeadLetter } from '../../records/dead-letter';
import { enqueueItemSchema } from '../../domain/enqueue';
import { readJsonBody } from '../json-body';
import { IdParam } from '../params';
import type { ConfigFrom, Route } from '../route';
import { withEnqueueFields } from './enqueue';
import { deadLetterConfig } from './status';
import { CONFLICT, conflictAware, LIMIT, listBody, pageOf, RedriveResultSchema } from './webhooks';

// GET /deadletter (listing), GET /deadletter/:id (one, payload included) and
// POST /deadletter/:id/replay (a new webhook recording replay_of; the original never changes).

/** The webhook fields clients read from a dead letter: a record of an older version may lack any. */
type DeadWebhook = Partial<Pick<Webhook, 'endpoint' | 'headers' | 'attempt' | 'max_attempts' | 'replay_of'>>;

/** GET /deadletter/:id: the record as deadLetterView masks it, the payload parsed (any JSON value). */
export type DeadLetterView = Omit<DeadLetter, 'webhook'> & { webhook: DeadWebhook & { payload?: unknown } };

/** A GET /deadletter row (deadLetterRow): the dead letter without its payload, the payload's size given. */
export type DeadLetterRow = Omit<DeadLetter, 'webhook'> & { webhook: DeadWebhook & { payload_bytes?: number } };

/**
 * A listing row: the dead letter (reason, last status, first 1 KB of the last response,
 * secret-looking headers and the endpoint's userinfo and query values redacted) with the
 * webhook's payload left out.
 */
export const deadLetterRow = (record: string) => {
  const v = JSON.parse(deadLetterView(record)) as Record<string, unknown> & { webhook?: Record<string, unknown> };
  if (v.webhook && typeof v.webhook === 'object') {
    const { payload, signing_secret: _s, ...w } = v.webhook;
    v.webhook = { ...w, payload_bytes: new TextEncoder().encode(JSON.stringify(payload ?? null)).length };
  }
  return v;
};

/** A dead letter named by `:id`: a key bound to other configs is told it does not exist. */
const DEAD_LETTER_OWNER: ConfigFrom = {
  from: 'owner',
  name: 'id',
  owner: async (d, id) => deadLetterConfig((await d.listing?.getDeadLetter(id)) ?? null),
  notFound: (id) => `dead letter of webhook ${id}`,
};

const replayBody = (c: Config) => {
  const item = enqueueItemSchema(c.api).shape;
  return z.object({ headers: item.headers, signing_secret: item.signing_secret, max_attempts: item.max_attempts, idempotency_key: item.idempotency_key }).strict();
};

const DeadLetterQuery = () =>
  z.object({
    config_id: z.string().regex(CONFIG_ID),
    reason_type: z.string().regex(REASON).optional(),
    since: z.string().max(64).optional().describe('ISO 8601 date or unix milliseconds: dead letters from then on'),
    cursor: z.string().regex(DL_CURSOR).optional().describe('next_cursor of the previous page'),
    limit: LIMIT,
  });

/** The OpenAPI schema of DeadLetterView and DeadLetterRow: the fields every dead letter has, the rest left open. */
const DeadLetterViewSchema = z.looseObject({ webhook_id: z.string(), config_id: z.string(), reason_type: z.string(), dead_at: z.string(), webhook: z.looseObject({}) });

export const deadLetterRoutes: Route[] = [
  {
    method: 'get',
    path: '/deadletter',
    tag: 'deadletter',
    summary: 'Dead letters of a config, oldest first from since, by reason (one page; payloads left out, their size given)',
    access: 'read',
    config: { from: 'query', name: 'config_id' },
    needs: ['listing'],
    request: { query: DeadLetterQuery },
    responses: { '200': { description: 'page', schema: pageOf(DeadLetterViewSchema) } },
    handler: (d) => [
      async (c) => {
        const q = parseDeadLetterListQuery(c.req.query());
        const page = await d.listing!.listDeadLetters(q);
        return c.json(listBody(page.items.map(deadLetterRow), page.next));
      },
    ],
  },
  {
    method: 'get',
    path: '/deadletter/:id',
    tag: 'deadletter',
    summary: 'One dead letter as stored on howk.deadletter, payload bytes as enqueued (secrets masked)',
    access: 'read',
    config: DEAD_LETTER_OWNER,
    needs: ['listing'],
    request: { params: IdParam },
    responses: { '200': { description: 'dead letter', schema: DeadLetterViewSchema } },
    handler: (d) => [
      async (c) => {
        const record = await d.listing!.getDeadLetter(c.req.param('id')!);
        if (!record) throw new NotFoundError(`dead letter of webhook ${c.req.param('id')}`);
        return c.body(deadLetterView(record), 200, { 'content-type': 'application/json' });
      },
    ],
  },
  {
    method: 'post',
    path: '/deadletter/:id/replay',
    tag: 'deadletter',
    summary: 'A new webhook (new id, replay_of the dead one) from the dead letter; the original never changes',
    access: 'admin',
    config: DEAD_LETTER_OWNER,
    needs: ['redrive', 'listing'],
    request: { params: IdParam, body: (c) => withEnqueueFields(c, replayBody(c)) },
    responses: {
      '202': { description: 'enqueued', schema: RedriveResultSchema, headers: { Location: { schema: { type: 'string' } } } },
      '200': { description: 'duplicate idempotency_key: the first webhook', schema: RedriveResultSchema },
      '409': CONFLICT,
    },
    handler: (d) => {
      const body = replayBody(d.config);
      return [
        (c) =>
          conflictAware(c, async () => {
            const { max_attempts, ...rest } = await readJsonBody(c, body, { optional: true });
            const r = await d.redrive!.replay(c.req.param('id')!, { ...rest, ...(max_attempts ? { attempts: max_attempts } : {}) });
            if (r.status === 'pending') c.header('Location', `/webhooks/${r.webhook_id}/status`);
            return c.json(r, r.status === 'duplicate' ? 200 : 202);
          }),
      ];
    },
  },
];
