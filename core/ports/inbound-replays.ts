// Replay protection of signed inbound requests (/incoming/:name): the first copy of a signed
// request claims its mark, runs, and leaves its answer; a copy within the signature's window
// gets that answer and runs nothing. Shared by every api process (Redis in production, memory
// in howk-dev), so a copy sent to another instance is caught too.

/** The answer of the first run: what a copy gets back. */
export type InboundAnswer = { status: number; body: string };

export type InboundClaim =
  /** This call holds the mark: run, then answer() or release(). */
  | { kind: 'claimed' }
  /** Another copy holds it and has not answered yet. */
  | { kind: 'running' }
  | { kind: 'answered'; answer: InboundAnswer };

export type InboundReplays = {
  /** Claims `key` for `ttlMs` unless it is held (atomically: of two copies at once, one claims). */
  claim(key: string, ttlMs: number): Promise<InboundClaim>;
  /** Puts the first run's answer in place of the claim (its expiry unchanged). */
  answer(key: string, answer: InboundAnswer): Promise<void>;
  /** Gives the claim back (the run failed): the next copy runs. */
  release(key: string): Promise<void>;
};

/** The claim as stored: `running` while the first copy runs, the answer's JSON (an object) after. */
export const RUNNING = 'running';
export const encodeAnswer = (a: InboundAnswer): string => JSON.stringify(a);
export const claimOf = (stored: string | null): InboundClaim =>
  stored === null ? { kind: 'claimed' } : stored === RUNNING ? { kind: 'running' } : { kind: 'answered', answer: JSON.parse(stored) as InboundAnswer };
