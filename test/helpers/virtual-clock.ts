/**
 * A virtual clock for the request queue (src/queue/clock.ts): time moves only when `run` jumps to the next timer,
 * after every pending promise has settled, so hours of queue time take milliseconds and every timing is exact.
 */
import type { QueueClock } from '../../src/queue/clock.js';

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
  cancelled: boolean;
}

const settle = () => new Promise<void>((r) => setImmediate(r));

export class VirtualClock implements QueueClock {
  private t = 0;
  private seq = 0;
  /** A binary min-heap on (at, seq). */
  private heap: Timer[] = [];

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const timer: Timer = { at: this.t + Math.max(0, ms), seq: this.seq++, fn, cancelled: false };
    const h = this.heap;
    h.push(timer);
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!before(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
    return timer;
  }

  clearTimeout(handle: unknown): void {
    (handle as Timer).cancelled = true;
  }

  /** Resolves after `ms` of virtual time. */
  sleep(ms: number): Promise<void> {
    return new Promise((r) => this.setTimeout(r, ms));
  }

  /**
   * Fires timers in time order, letting promises settle between them, until none is left or the next is past
   * `until` (then the time is `until`).
   */
  async run(until = Number.POSITIVE_INFINITY): Promise<void> {
    for (;;) {
      await settle();
      while (this.heap.length > 0 && this.heap[0]!.cancelled) this.pop();
      const next = this.heap[0];
      if (!next || next.at > until) {
        if (Number.isFinite(until)) this.t = Math.max(this.t, until);
        return;
      }
      this.pop();
      this.t = next.at;
      next.fn();
    }
  }

  private pop(): void {
    const h = this.heap;
    const last = h.pop()!;
    if (h.length === 0) return;
    h[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && before(h[l]!, h[m]!)) m = l;
      if (r < h.length && before(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}
