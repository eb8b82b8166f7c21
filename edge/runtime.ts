// The few Workers runtime shapes the edge uses, typed structurally so that edge/ type-checks
// with the project's DOM + Node settings (workerd's own types would clash with them). They
// match @cloudflare/workers-types for the members used here.

export type SqlCursor<T> = { toArray(): T[]; one(): T; readonly rowsWritten: number };
export type SqlStorage = { exec<T = Record<string, string | number | null>>(query: string, ...bindings: (string | number | null)[]): SqlCursor<T> };

export type DurableObjectStorage = {
  sql: SqlStorage;
  getAlarm(): Promise<number | null>;
  setAlarm(at: number | Date): Promise<void>;
  deleteAlarm(): Promise<void>;
};

export type DurableObjectState = {
  storage: DurableObjectStorage;
  blockConcurrencyWhile<T>(fn: () => Promise<T>): Promise<T>;
  waitUntil(p: Promise<unknown>): void;
};

export type DurableObjectId = { toString(): string };
export type DurableObjectStub = { fetch(input: string | Request, init?: RequestInit): Promise<Response> };
export type DurableObjectNamespace = {
  idFromName(name: string): DurableObjectId;
  get(id: DurableObjectId): DurableObjectStub;
};

export type ExecutionContext = { waitUntil(p: Promise<unknown>): void; passThroughOnException(): void; props: any };
