/** One line of `howk doctor`'s report. */
export type Check = { check: string; status: 'ok' | 'warn' | 'fail'; detail: string; fix?: string; data?: unknown };
