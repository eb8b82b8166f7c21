import type { WebhookStatus } from '../../core/domain/status';
import type { StatusWrite } from '../../core/ports/hot-state';
import { RespArgs } from './resp';

// writeStatuses.lua's arguments (its header gives the layout), encoded as they are built
// (workers/redis/resp.ts), for RedisHotState (workers/redis/hot-state.ts).

/** A status's config/endpoint pair ('' when it names none: a patch of a held webhook), as index targets group them. */
const pairOf = (s: Partial<WebhookStatus>): string => (typeof s.config_id === 'string' && typeof s.endpoint_hash === 'string' ? `${s.config_id}\n${s.endpoint_hash}` : '');

/** A status's four arguments in a block (its attempt, when the block has them, follows). */
const statusRow = (args: RespArgs, { status, patch }: StatusWrite): RespArgs =>
  args
    .str(JSON.stringify(status))
    .str(status.updated_at_ns)
    .str(patch ? '*' : (status.state ?? ''))
    .str(status.webhook_id);

export type IndexTargets = (s: Partial<WebhookStatus>) => { configIndex: string; endpointIndex: string; prefix: string };

const pushBlock = (args: RespArgs, targets: IndexTargets, withAttempt: StatusWrite[], without: StatusWrite[]): void => {
  const { configIndex, endpointIndex, prefix } = targets((withAttempt[0] ?? without[0])!.status);
  args.str(configIndex).str(endpointIndex).str(prefix).num(withAttempt.length).num(without.length);
  for (const s of withAttempt) statusRow(args, s).str(JSON.stringify(s.attempt));
  for (const s of without) statusRow(args, s);
};

/**
 * writeStatuses.lua's arguments: `head` (the key prefixes, the TTL, the history limit: the
 * same every call), the index floor, then blocks of statuses, each with its config/endpoint
 * pair's index keys and its counts of statuses with and without an attempt, sent once. One
 * block per pair when each webhook appears once; when one appears twice, blocks follow the
 * order given, which its writes need (a patch merges into what came before).
 */
export const statusArgs = (statuses: StatusWrite[], head: RespArgs, floor: string, targets: IndexTargets): RespArgs => {
  const ids = new Set<string>();
  for (const { status } of statuses) ids.add(status.webhook_id);
  const once = ids.size === statuses.length;
  const args = new RespArgs()
    .append(head)
    .str(floor)
    .num(once ? 0 : 1);
  if (once) {
    const blocks = new Map<string, { with: StatusWrite[]; without: StatusWrite[] }>();
    for (const s of statuses) {
      const pair = pairOf(s.status);
      let block = blocks.get(pair);
      if (!block) blocks.set(pair, (block = { with: [], without: [] }));
      (s.attempt ? block.with : block.without).push(s);
    }
    for (const block of blocks.values()) pushBlock(args, targets, block.with, block.without);
  } else {
    for (let i = 0; i < statuses.length;) {
      const pair = pairOf(statuses[i]!.status);
      const attempt = !!statuses[i]!.attempt;
      let end = i + 1;
      while (end < statuses.length && !!statuses[end]!.attempt === attempt && pairOf(statuses[end]!.status) === pair) end++;
      const run = statuses.slice(i, end);
      pushBlock(args, targets, attempt ? run : [], attempt ? [] : run);
      i = end;
    }
  }
  return args;
};

/** No index targets: on a cluster the indexes are not written with the statuses (another slot). */
export const NO_TARGETS: IndexTargets = () => ({ configIndex: '', endpointIndex: '', prefix: '' });
