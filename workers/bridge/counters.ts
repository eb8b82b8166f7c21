/** What the bridge has done since it started (GET /stats): the edge's batching is measured here. */
export type BridgeCounters = {
  produceCalls: number;
  produceRecords: number;
  produceFailures: number;
  redisRequests: number;
  redisCommands: number;
};

export const newCounters = (): BridgeCounters => ({ produceCalls: 0, produceRecords: 0, produceFailures: 0, redisRequests: 0, redisCommands: 0 });
