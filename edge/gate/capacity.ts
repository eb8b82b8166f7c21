import type { Redis } from '@upstash/redis/cloudflare';
import { keys as singleKeys, type RedisKeys } from '../../core/domain/keys';
import { CIRCUIT_FIELDS, LIMIT_FIELDS, parseCircuit, parseLimit, type EndpointCapacity, type HostCapacity } from '../../core/policy/edge-capacity';
import type { LimitState } from '../../core/policy/adaptive-limit';

// A DomainGate's view of its host's capacity, read from the keys the fleet's guards keep it
// in (core/policy/edge-capacity.ts), through the bridge's Redis dialect in one pipeline. Each
// entry is reused for `cacheMs`; a stale one is still served while a fresh read runs behind
// it, so only the first request of a host or an endpoint waits for Redis. Without Redis (not
// configured, or unreachable) the gate knows nothing and admits at its configured rate.

/** `at`: when the value was read (ms), against which `cacheMs` is counted. */
type Cached<T> = { value: T; at: number };

const CLOSED: EndpointCapacity['circuit'] = { state: 'CLOSED', openUntil: 0, probeAt: 0 };

/** HMGET through @upstash/redis: an object by field, or null when every field is missing. */
const fieldsOf = (reply: unknown, names: readonly string[]): (string | null)[] => {
  if (Array.isArray(reply)) return reply.map((v) => (v === null || v === undefined ? null : String(v)));
  if (reply && typeof reply === 'object') return names.map((n) => ((reply as Record<string, unknown>)[n] ?? null) as string | null).map((v) => (v === null ? null : String(v)));
  return names.map(() => null);
};

export class CapacityView {
  private domain: Cached<LimitState | null> | undefined;
  private readonly endpoints = new Map<string, Cached<EndpointCapacity>>();
  private refreshing: Promise<void> | undefined;
  reads = 0;
  failures = 0;

  constructor(
    private readonly redis: Redis | undefined,
    private readonly host: string,
    private readonly cacheMs: number,
    /** The fleet's key layout (edge/config.ts edgeKeysOf). */
    private readonly keys: RedisKeys = singleKeys,
  ) {}

  /** The capacity of the host and these endpoints; waits for Redis only for what it never read. */
  async of(hashes: readonly string[], now: number): Promise<HostCapacity> {
    if (this.redis) {
      const missing = !this.domain || hashes.some((h) => !this.endpoints.has(h));
      const stale = missing || now - this.domain!.at >= this.cacheMs || hashes.some((h) => now - this.endpoints.get(h)!.at >= this.cacheMs);
      if (missing) await this.refresh(hashes, now);
      else if (stale) void this.refresh(hashes, now);
    }
    const endpoints: Record<string, EndpointCapacity> = {};
    for (const h of hashes) endpoints[h] = this.endpoints.get(h)?.value ?? { limit: null, circuit: CLOSED, queued: 0 };
    return { domain: this.domain?.value ?? null, endpoints };
  }

  private refresh(hashes: readonly string[], now: number): Promise<void> {
    // One read at a time; a request that needs it waits for the one running.
    this.refreshing ??= this.read([...new Set([...hashes, ...this.endpoints.keys()])], now).finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  private async read(hashes: string[], now: number): Promise<void> {
    const p = this.redis!.pipeline();
    const k = this.keys;
    p.hmget(k.domainLimit(this.host), ...LIMIT_FIELDS);
    for (const h of hashes) {
      p.hmget(k.endpointLimit(h), ...LIMIT_FIELDS);
      p.hmget(k.circuit(h), ...CIRCUIT_FIELDS);
      p.zcard(k.endpointQueued(h));
    }
    this.reads++;
    let replies: unknown[];
    try {
      replies = await p.exec();
    } catch {
      // Unknown capacity: what was read before stays in force (or the configured rate), and
      // later requests do not wait for Redis again before the next read is due.
      this.failures++;
      this.domain ??= { value: null, at: now };
      for (const h of hashes) if (!this.endpoints.has(h)) this.endpoints.set(h, { value: { limit: null, circuit: CLOSED, queued: 0 }, at: now });
      return;
    }
    this.domain = { value: parseLimit(fieldsOf(replies[0], LIMIT_FIELDS)), at: now };
    hashes.forEach((h, i) => {
      const b = 1 + 3 * i;
      this.endpoints.set(h, {
        value: { limit: parseLimit(fieldsOf(replies[b], LIMIT_FIELDS)), circuit: parseCircuit(fieldsOf(replies[b + 1], CIRCUIT_FIELDS)), queued: Number(replies[b + 2] ?? 0) },
        at: now,
      });
    });
  }
}
