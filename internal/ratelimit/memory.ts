import { gcra } from "./gcra.ts";
import { newGeneration, type Admission, type Fence, type Limit, type RateLimiter } from "./interface.ts";

/**
 * In-process limiter: the same GCRA as the Redis script, for `folio dev`
 * without Redis and as the fallback when Redis fails. One process only.
 */
export class MemoryRateLimiter implements RateLimiter {
  private readonly tats = new Map<string, { tat: number; expiresAt: number }>();
  private readonly generations = new Map<string, number>();
  private lastSweep = 0;

  constructor(private readonly clock: () => number = Date.now) {}

  async admit(subject: string, limits: readonly Limit[], fence?: Fence): Promise<Admission> {
    if (fence) {
      const current = this.generations.get(fence.key) ?? 0;
      if (current !== fence.generation) return { kind: "stale", generation: current };
    }
    return this.admitLocal(subject, limits);
  }

  /** Rate limits only (no fence); used directly by the Redis limiter's fallback. */
  admitLocal(subject: string, limits: readonly Limit[]): Extract<Admission, { kind: "decision" }> {
    const now = this.clock();
    this.sweep(now);
    const keys = limits.map((l) => `${subject}:${l.name}`);
    const outcome = gcra(Math.round(now * 1000), keys.map((k) => this.tats.get(k)?.tat), limits);
    if (outcome.allowed) {
      outcome.newTats.forEach((tat, i) => this.tats.set(keys[i]!, { tat, expiresAt: tat / 1000 }));
    }
    return { kind: "decision", allowed: outcome.allowed, retryAfterMs: outcome.retryAfterMs, limits: outcome.limits, fenceChecked: true };
  }

  async generation(key: string): Promise<number> {
    return this.generations.get(key) ?? 0;
  }

  async bumpGeneration(key: string): Promise<void> {
    this.generations.set(key, newGeneration());
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {
    this.tats.clear();
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < 60_000) return;
    this.lastSweep = now;
    for (const [k, v] of this.tats) if (v.expiresAt < now) this.tats.delete(k);
  }
}
