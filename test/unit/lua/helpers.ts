import { createLuaEngine, type LuaEngine } from '../../../core/lua/engine';
import { runDeliveryScript, type DeliveryInput } from '../../../core/lua/delivery';
import type { LuaLimits, LuaServices } from '../../../core/lua/types';

// One engine per test file (one WASM instance); each run still gets a fresh Lua state.
export const engine: LuaEngine = createLuaEngine();

export const baseInput: DeliveryInput = {
  payload: '{"event":"order.completed","amount":1000,"items":[1,2],"note":null}',
  headers: { 'X-Custom': 'a' },
  config_id: 'cfg_a',
  attempt: 0,
  webhook_id: 'wh_01TEST',
  endpoint: 'https://example.com/hook',
  max_attempts: 5,
};

/** Runs a delivery script with the shared engine. */
export const deliver = (code: string, opts: { input?: Partial<DeliveryInput>; services?: LuaServices; limits?: Partial<LuaLimits> } = {}) =>
  runDeliveryScript(code, { ...baseInput, ...opts.input }, { engine, services: opts.services, limits: opts.limits });

/** Runs a script and returns what it logged (print / log.*), for checking values computed in Lua. */
export const logsOf = async (code: string, services: LuaServices = {}, limits?: Partial<LuaLimits>): Promise<string[]> => {
  const lines: string[] = [];
  await deliver(code, { services: { ...services, log: (_level, message) => lines.push(message) }, limits });
  return lines;
};
