import type { Logger } from '../../core/ports/logger';

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

/** SIGHUP reloads the transformer scripts (a failed reload keeps the loaded set). */
export const onReload = (log: Logger, reload: () => Promise<unknown>): void => {
  process.on('SIGHUP', () => {
    log.info('SIGHUP: reloading transformers');
    reload().catch((e) => log.error('transformer reload failed; the previous set stays', { error: String(e) }));
  });
};
