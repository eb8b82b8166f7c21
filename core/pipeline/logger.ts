// The logger lives in core/ports/logger.ts; this re-export keeps imports of the old path working.
export { createLogger, silentLogger, type LogFields, type Logger, type LogLevel } from '../ports/logger';
