/**
 * The sandbox's notion of "now", injectable so tests can move time (due dates, expiries, TTLs).
 * Every part of the sandbox reads time through the `Clock` in its `SandboxContext`, never `new Date()` directly.
 */

export interface Clock {
  /** Current instant. */
  now(): Date;
  /** Current instant as ISO 8601 UTC with milliseconds, e.g. `2026-11-22T00:15:03.120Z`. */
  nowIso(): string;
  /** Current date in UTC as yyyy-mm-dd. */
  today(): string;
}

/** A clock reading `now` (the real clock when absent). */
export function createClock(now: () => Date = () => new Date()): Clock {
  return {
    now: () => new Date(now().getTime()),
    nowIso: () => now().toISOString(),
    today: () => now().toISOString().slice(0, 10),
  };
}
