import { HowkError } from '../errors/errors';

// Script failures carry the HOWK reason types as codes, so the pipeline can put
// `error.code` straight into a result or dead letter without a mapping table.
export type LuaErrorCode = 'script_syntax_error' | 'script_runtime_error' | 'script_timeout' | 'script_memory_limit';

export class LuaError extends HowkError {
  declare readonly code: LuaErrorCode;
  /** Line of the script the error points at, when Lua names one. */
  readonly line: number | undefined;
  constructor(code: LuaErrorCode, message: string, line?: number) {
    super(code, message);
    this.line = line;
  }
}

export class LuaSyntaxError extends LuaError {
  constructor(message: string) {
    super('script_syntax_error', message, lineOf(message));
  }
}

export class LuaRuntimeError extends LuaError {
  /** Lua's stack traceback at the point of failure (script frames only). */
  readonly traceback: string | undefined;
  constructor(message: string, traceback?: string) {
    super('script_runtime_error', message, lineOf(message));
    this.traceback = traceback;
  }
}

export class LuaTimeoutError extends LuaError {
  constructor(message: string) {
    super('script_timeout', message);
  }
}

export class LuaMemoryError extends LuaError {
  readonly limitBytes: number;
  constructor(limitBytes: number) {
    super('script_memory_limit', `script exceeded its memory limit of ${Math.round(limitBytes / 1024 / 1024)} MB`);
    this.limitBytes = limitBytes;
  }
}

/** Chunks are loaded with the name "=script", so Lua prefixes messages with "script:<line>:". */
const lineOf = (message: string): number | undefined => {
  const m = /(?:^|\s)script:(\d+):/.exec(message);
  return m ? Number(m[1]) : undefined;
};
