import { startTestFleet } from './fleet';
import { startReceiver, type Received, type Reply } from './receiver';

/** What a test leaves to run after it, in the order given. */
export type Cleanups = (() => Promise<void>)[];

/**
 * A receiver answering with `respond` and a Kafka fleet; once the test is over, `cleanups`
 * stops the fleet, then closes the receiver.
 */
export const startFleetAndReceiver = async (cleanups: Cleanups, respond: (r: Received, nth: number) => Reply, opts: Parameters<typeof startTestFleet>[1] = {}) => {
  const rx = await startReceiver(respond);
  const f = await startTestFleet('kafka', opts);
  cleanups.push(async () => {
    await f.stop();
    await rx.close();
  });
  return { rx, f };
};
