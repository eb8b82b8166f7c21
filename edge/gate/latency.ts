// The last `size` samples of a latency, for the gate's own percentiles (GET /stats): what the
// gate adds to a request besides the produce itself (linger, queueing, dedupe, storage).
export class Reservoir {
  private readonly samples: number[] = [];
  private next = 0;

  constructor(private readonly size = 10_000) {}

  add(ms: number): void {
    if (this.samples.length < this.size) this.samples.push(ms);
    else this.samples[this.next] = ms;
    this.next = (this.next + 1) % this.size;
  }

  percentiles(): { count: number; p50: number | null; p99: number | null } {
    if (!this.samples.length) return { count: 0, p50: null, p99: null };
    const sorted = [...this.samples].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
    return { count: sorted.length, p50: at(0.5), p99: at(0.99) };
  }

  reset(): void {
    this.samples.length = 0;
    this.next = 0;
  }
}
