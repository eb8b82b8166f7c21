import { HISTORY_LIMIT, type AttemptRecord } from './status';

// A webhook's attempt history as Redis stores it (docs/ARCHITECTURE.md, Redis keys): the
// field `h` of its status hash, AttemptRecord JSON texts joined by '\n' (oldest first;
// writeStatuses.lua appends to it). The layout before kept them in a list of their own
// (keys.statusHistory), which workers not yet upgraded still append to: a read takes both.

/** The status hash's field that holds the history. */
export const HISTORY_FIELD = 'h';

const parse = (texts: readonly string[]): AttemptRecord[] => texts.map((t) => JSON.parse(t) as AttemptRecord);

/**
 * The history from the old list's entries and the `h` field. When both hold attempts (a fleet
 * mid-upgrade, old and new workers taking turns) they are merged in time order (`at`; ties
 * keep the list's first), and the last HISTORY_LIMIT are kept, as one list would have kept them.
 */
export const historyOf = (list: readonly string[], field: string | null | undefined): AttemptRecord[] => {
  const added = field ? parse(field.split('\n')) : [];
  if (!list.length) return added;
  const old = parse(list);
  if (!added.length) return old;
  return [...old, ...added].sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0)).slice(-HISTORY_LIMIT);
};
