import { InvalidArgumentError } from 'commander';
import { parseDuration } from '../../core/config/fields';

// Output and argument parsing shared by the `howk` subcommands: one JSON document on stdout
// with --json, tables and sentences otherwise; progress and diagnostics on stderr.

export type GlobalOpts = { json?: boolean; url?: string; key?: string; config?: string };

/** A failure the operator can act on: printed as one line, exit code 1. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export const out = (s: string): void => void process.stdout.write(`${s}\n`);
export const err = (s: string): void => void process.stderr.write(`${s}\n`);
export const printJson = (v: unknown): void => out(JSON.stringify(v, null, 2));

/** A fixed-width table; cells are stringified, null and undefined shown as '-'. */
export const table = (headers: string[], rows: unknown[][]): string => {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined || c === '' ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]!.length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(headers), ...cells.map(line)].join('\n');
};

export const durationArg = (v: string): number => {
  try {
    const ms = parseDuration(v);
    if (!(ms > 0)) throw new Error('not positive');
    return ms;
  } catch {
    throw new InvalidArgumentError(`not a duration: ${JSON.stringify(v)} (e.g. 500ms, 30s, 5m, 2h)`);
  }
};

export const intArg =
  (min = 1, max = Number.MAX_SAFE_INTEGER) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min || n > max) throw new InvalidArgumentError(`not a whole number from ${min} to ${max}: ${JSON.stringify(v)}`);
    return n;
  };

export const fractionArg = (v: string): number => {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError(`not a fraction from 0 to 1: ${JSON.stringify(v)}`);
  return n;
};

/** An ISO 8601 date, unix milliseconds, or a duration back from now ("2h": two hours ago). */
export const timeArg = (v: string): number => {
  if (/^\d{10,}$/.test(v)) return Number(v);
  const d = Date.parse(v);
  if (!Number.isNaN(d) && /\d{4}-\d{2}-\d{2}/.test(v)) return d;
  try {
    return Date.now() - parseDuration(v);
  } catch {
    throw new InvalidArgumentError(`not a time: ${JSON.stringify(v)} (an ISO 8601 date, unix milliseconds, or a duration ago such as 2h)`);
  }
};
