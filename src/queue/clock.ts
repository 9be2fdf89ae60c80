/**
 * The queue's clock: a monotonic "now" in milliseconds and one-shot timers. Injectable so that tests can drive the
 * limiter through hours of virtual time in milliseconds of real time (test/queue-rate-limit.test.ts).
 *
 * The real clock reads `performance.now()`, not `Date.now()`: a wall clock stepped back by NTP would let a window
 * look empty while the bank still counts its requests.
 */
export interface QueueClock {
  /** Milliseconds on a monotonic scale (any origin). */
  now(): number;
  /** Calls `fn` once, `ms` milliseconds from now (or a little later). */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer returned by `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

export const REAL_CLOCK: QueueClock = {
  now: () => performance.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
