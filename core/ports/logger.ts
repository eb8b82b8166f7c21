// Structured JSON logs, one line each. Fields must never carry secrets: callers pass
// redacted webhooks only (core/pipeline/redact.ts).
export type LogFields = Record<string, unknown>;
export type Logger = {
  debug(msg: string, f?: LogFields): void;
  info(msg: string, f?: LogFields): void;
  warn(msg: string, f?: LogFields): void;
  error(msg: string, f?: LogFields): void;
};

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof LEVELS;

export const createLogger = (name: string, level: LogLevel = 'info', write: (line: string) => void = (l) => console.log(l)): Logger => {
  const min = LEVELS[level];
  const emit = (lvl: LogLevel) => (msg: string, f?: LogFields) => {
    if (LEVELS[lvl] < min) return;
    write(JSON.stringify({ t: new Date().toISOString(), level: lvl, svc: name, msg, ...f }));
  };
  return { debug: emit('debug'), info: emit('info'), warn: emit('warn'), error: emit('error') };
};

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
