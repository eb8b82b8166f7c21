import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Svix } from 'svix';
import { uniq, waitFor } from '../helpers/env';
import { startTestFleet, type TestFleet } from '../helpers/fleet';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { useRedisDb } from '../helpers/redis-db';

// A Svix message nobody subscribes to is accepted (202) and makes no webhook, and it is
// counted: howk_svix_messages_unrouted_total on the api's /metrics (real Kafka + Redis).

const unrouted = async (f: TestFleet): Promise<number> => {
  const text = await (await fetch(`${f.baseUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith('howk_svix_messages_unrouted_total'));
  if (!line) throw new Error(`howk_svix_messages_unrouted_total is not on /metrics`);
  return Number(line.split(' ').pop());
};

describe('Svix messages that reach no endpoint (Kafka + Redis)', () => {
  const db = useRedisDb();
  let f: TestFleet;
  let rx: Receiver;
  let svix: Svix;

  beforeAll(async () => {
    f = await startTestFleet('kafka', { redisDb: db() });
    await f.fleet.apps!.ready;
    svix = new Svix('any', { serverUrl: f.baseUrl });
    rx = await startReceiver(() => ({ status: 200 }));
  });
  afterAll(async () => {
    await f?.stop();
    await rx?.close();
  });

  const send = (app: string, eventType: string) =>
    fetch(`${f.baseUrl}/api/v1/app/${app}/msg`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ eventType, payload: { k: 1 } }) });

  it('an event type no endpoint listens to, and a message to a disabled endpoint only: 202, no webhook, the counter +2; a routed message leaves it', async () => {
    const tag = uniq('unrouted');
    const filtered = await svix.application.create({ name: 'Filtered' });
    await svix.endpoint.create(filtered.id, { url: rx.url(`/${tag}/filtered`), filterTypes: [`${tag}.listened`] });
    const off = await svix.application.create({ name: 'Off' });
    await svix.endpoint.create(off.id, { url: rx.url(`/${tag}/off`), disabled: true });
    const before = await unrouted(f);

    const sent = [await send(filtered.id, `${tag}.nobody`), await send(off.id, `${tag}.listened`)];
    expect(sent.map((r) => r.status)).toEqual([202, 202]);
    const ids = await Promise.all(sent.map(async (r) => ((await r.json()) as { id: string }).id));
    expect(await unrouted(f)).toBe(before + 2);
    const made: [string, string][] = [
      [filtered.id, ids[0]!],
      [off.id, ids[1]!],
    ];
    for (const [app, id] of made) expect((await svix.messageAttempt.listByMsg(app, id)).data).toEqual([]);

    // A message that does reach an endpoint: delivered, and not counted.
    const routed = await send(filtered.id, `${tag}.listened`);
    expect(routed.status).toBe(202);
    await waitFor(() => rx.received.some((r) => r.path === `/${tag}/filtered`), { what: 'the routed message delivered' });
    expect(await unrouted(f)).toBe(before + 2);
    expect(rx.received.filter((r) => r.path.startsWith(`/${tag}/`)).map((r) => r.path)).toEqual([`/${tag}/filtered`]);
    // Produced after the other two: by the time it is read back, a webhook of theirs would be too.
    await waitFor(() => f.records('pending').some((r) => r.value?.includes(`/${tag}/filtered`)), { what: 'the routed webhook on the pending topic' });
    expect(f.records('pending').filter((r) => r.value?.includes(tag)).length).toBe(1);
  });
});
