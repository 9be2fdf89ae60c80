/**
 * The sandbox's notion of "now", injectable so tests can move time (due dates, expiries, TTLs).
 * Every part of the sandbox reads time through the `Clock` in its `SandboxContext`, never `new Date()` directly.
 */

import { brasiliaDay } from '../formats/brasilia-time.js';

export interface Clock {
  /** Current instant. */
  now(): Date;
  /** Current instant as ISO 8601 UTC with milliseconds, e.g. `2026-11-22T00:15:03.120Z`. */
  nowIso(): string;
  /**
   * Current date as yyyy-mm-dd in Brasília: a Brazilian bank's day, the one its date limits (a due date, a payAt "today
   * or later"), interest and fines count (docs/service-gaps.md "Today" for date limits).
   */
  today(): string;
}

/** A clock reading `now` (the real clock when absent). */
export function createClock(now: () => Date = () => new Date()): Clock {
  return {
    now: () => new Date(now().getTime()),
    nowIso: () => now().toISOString(),
    today: () => brasiliaDay(now()),
  };
}
