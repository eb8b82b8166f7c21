import type { Logger } from '../../core/pipeline/logger';

/** Runs `stop` once on SIGTERM/SIGINT, then exits; a second signal exits at once. */
export const onShutdown = (log: Logger, stop: () => Promise<void>): void => {
  let stopping = false;
  const handler = (sig: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    log.info('shutting down', { signal: sig });
    const force = setTimeout(() => process.exit(1), 15_000);
    force.unref();
    stop().then(
      () => process.exit(0),
      (e) => {
        log.error('shutdown failed', { error: String(e) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
};
