import type { TestFleet } from './fleet';

/** Every record the fleet has seen on howk.deadletter, parsed. */
export const deadLetterRecords = (f: TestFleet): any[] => f.records('deadletter').map((r) => JSON.parse(r.value!));

/** The howk.deadletter record of webhook `id`, or undefined while there is none. */
export const deadLetterOf = (f: TestFleet, id: string): any => deadLetterRecords(f).find((d) => d.webhook_id === id);
