import { createRequire } from 'node:module';

// kafkajs 2.2.4 keeps every connection it ever had a response on busy forever: after each
// response its request queue schedules a check of its pending requests, and with nothing
// pending and no throttle the delay is negative (Node runs it after 1 ms), and the check
// schedules the next one. Each connection of each producer, consumer and admin client thus
// fires a timer every millisecond, idle or not: about 1,500 event-loop wake-ups a second in
// an idle howk-api, a third of its CPU when idle. A check is needed only while requests wait
// (a throttle or the in-flight limit held them back: push schedules one then, and each
// response checks again), so with an empty queue none is scheduled.

type RequestQueueProto = { scheduleCheckPendingRequests: (this: { pending: unknown[] }) => void; __howkIdleFix?: true };

const require = createRequire(import.meta.url);

/** Installs the fix once per process; false when kafkajs no longer has the shape it fixes. */
export const fixIdleRequestQueues = (): boolean => {
  let proto: RequestQueueProto;
  try {
    proto = (require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueueProto }).prototype;
  } catch {
    return false;
  }
  if (proto.__howkIdleFix) return true;
  const schedule = proto.scheduleCheckPendingRequests;
  if (typeof schedule !== 'function') return false;
  proto.scheduleCheckPendingRequests = function (this: { pending: unknown[] }) {
    if (Array.isArray(this.pending) && this.pending.length === 0) return;
    schedule.call(this);
  };
  proto.__howkIdleFix = true;
  return true;
};

fixIdleRequestQueues();
