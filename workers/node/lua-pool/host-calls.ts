import type { LuaServices } from '../../../core/lua';
import { readCapped } from '../../../core/lua/http';
import type { FetchReply, HostOp } from './protocol';

// A script's host services run in the main thread; these answer one call a worker relays.

export type HostReply = { value: unknown; transfer?: ArrayBuffer[] };

export const hostCall = async (sv: LuaServices, op: HostOp, args: unknown[], signal: AbortSignal): Promise<HostReply> => {
  switch (op) {
    case 'kv.get':
      return { value: await sv.kv!.get(args[0] as string) };
    case 'kv.set':
      return { value: await sv.kv!.set(args[0] as string, args[1] as string, args[2] as number | undefined) };
    case 'kv.del':
      return { value: await sv.kv!.del(args[0] as string) };
    case 'credential':
      return { value: await sv.decryptCredential!(args[0] as string) };
    case 'fetch':
      return fetchForWorker(sv, args, signal);
  }
};

const fetchForWorker = async (sv: LuaServices, args: unknown[], signal: AbortSignal): Promise<HostReply> => {
  const init = args[1] as { method: string; headers: Record<string, string>; body?: string };
  const res = await sv.fetch!(args[0] as string, { ...init, redirect: 'manual', signal });
  const headers: [string, string][] = [];
  res.headers.forEach((v, k) => headers.push([k, v]));
  // The body is read here, capped like the http module does, so a huge answer stays out of both threads.
  const cap = sv.http?.maxResponseBytes ?? 1024 * 1024;
  let body: Uint8Array | null = null;
  if (res.status >= 300 && res.status < 400 && res.headers.has('location')) await res.body?.cancel();
  else body = await readCapped(res, cap);
  const value: FetchReply = { status: res.status, statusText: res.statusText, headers, body };
  return { value, transfer: body ? [body.buffer as ArrayBuffer] : undefined };
};
