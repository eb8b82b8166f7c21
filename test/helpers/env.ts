export const requireEnv = (name: 'KAFKA_BROKERS' | 'REDIS_URL'): string => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: run the suite with \`npm test\`, which starts Kafka and Redis, or export ${name}.`);
  return v;
};

export const uniq = (base: string) => `${base}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

export const waitFor = async <T>(fn: () => T | Promise<T>, { timeoutMs = 30_000, intervalMs = 50, what = 'condition' } = {}): Promise<NonNullable<T>> => {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
};
