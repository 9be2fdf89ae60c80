/**
 * One rate limit: at most `requests` request starts in ANY window of `windowMs` milliseconds, kept exactly by a
 * sliding log of start times, with an adaptive ceiling for a bank that answers 429 all the same.
 *
 * ## The rule that must always hold
 * For every time x:  (starts in (x - holdMs, x])  +  (reservations open at x)  <=  requests,
 * where holdMs = windowMs plus a 1% guard (WINDOW_GUARD_FRACTION, below).
 * A request may start (or be reserved) at `now` only when the left side is below the current ceiling (which never
 * exceeds `requests`). A reservation is a start promised to a task admitted by the queue but whose request has not
 * left yet (the engine commits the row's intent first): it holds its place in every window until it is confirmed
 * (its request starts: its start time enters the log) or settled (the task ended without passing the gate: counted
 * as a start at its reservation time, which the place held all along). Taking x at
 * the end of any window shows that no window of `windowMs` (half-open) ever holds more than `requests` starts, whatever
 * the latency, the concurrency, or how late a timer fires; a pause adds no start, so it cannot break it either.
 * The log is the truth, not a counter per fixed window: p-queue's fixed windows let 2 x cap start across a boundary.
 *
 * ## Adaptive ceiling (AIMD), for a group that keeps getting 429
 * A 429 in spite of this limit means the bank counts differently (other windows, its own lower limit, other clients
 * on the same key). Pausing for Retry-After and then sending at the same rate repeats the burst, and repeated bursts
 * can get a key blocked. So, as TCP does with congestion:
 * - multiplicative decrease: each 429 episode halves the ceiling (never below 1 per window). A 429 for a request
 *   that started before the last decrease is an echo of the same episode (it was sent at the old rate): it does not
 *   halve again, or one burst of 8 answers would cut the rate 256-fold;
 * - additive increase: once the pause is over, every full window without a new episode raises the ceiling by 5% of
 *   the setting (at least 1), up to the setting: from half the rate back to all of it in 10 windows (10 s at a
 *   1-second window). Slow enough that a bank at its limit is not hit again at once, fast enough that a single
 *   stray 429 costs seconds, not the night's run.
 * Halving then adding is the rule whose repeated cycles converge below the bank's real limit and share it fairly
 * between clients; a fixed step down would either crawl or oscillate.
 */

/**
 * Each start holds its place for the window plus this fraction of it. The log is exact on our clock, but the bank
 * sees a request a little after the gate let it through (the rest of the event loop's turn, a busy machine: up to
 * ~10 ms measured under load, bench/rate-limit.ts) and through its own clock: a place freed exactly one window after
 * the start would let a request arrive in the same bank window as the one it replaces. 1% absorbs that much jitter
 * and costs 1% of the rate (the target is within 2%).
 */
export const WINDOW_GUARD_FRACTION = 0.01;

/**
 * Pacing: starts are also spread at one per holdMs / ceiling, with a tolerance of PACING_BURST starts at once (GCRA:
 * a theoretical start time advances by one gap per start; a start may come up to (PACING_BURST - 1) gaps early).
 * Why, on top of the log: the log alone keeps forever the shape of its first window (N starts at once, then N again
 * one window later, ...). Such bursts meet the concurrency limit, and a place whose request waits for a slot loses
 * that time for good (measured: 3-6% below the setting at concurrency 8-16, bench/rate-limit.ts). Spread starts
 * rarely wait for a slot, so the rate stays at the setting (less the 1% guard), and the bank sees an even flow. The
 * tolerance keeps a late timer or a slow slot from costing a gap each time (the theoretical time does not move back).
 */
export const PACING_BURST = 3;

/** Ceiling cut factor on a 429 episode. */
export const AIMD_DECREASE_FACTOR = 0.5;
/** Ceiling raised per calm window, as a fraction of the setting (at least 1 request). */
export const AIMD_INCREASE_FRACTION = 0.05;

export class SlidingWindowLimit {
  /** The configured ceiling: requests per window. */
  readonly requests: number;
  readonly windowMs: number;
  /** How long a start holds its place: the window plus the guard. */
  readonly holdMs: number;
  /** Whether 429s lower the ceiling (per-group limits: yes; the overall limit: no, a 429 belongs to a group). */
  readonly adaptive: boolean;
  /** Start times, oldest first, from index `head` on (entries before `head` have left every window). */
  private starts: number[] = [];
  private head = 0;
  private reserved = 0;
  /** Theoretical time of the next start at an even pace (GCRA). */
  private paceAt = Number.NEGATIVE_INFINITY;
  private ceiling: number;
  /** When the ceiling last changed (or the pause after a decrease ends): additive increase counts from here. */
  private changedAt = 0;
  /** When the ceiling was last cut: a 429 for a request started before it is an echo. */
  private decreasedAt = Number.NEGATIVE_INFINITY;

  constructor(requests: number, windowMs: number, adaptive: boolean) {
    this.requests = requests;
    this.windowMs = windowMs;
    this.holdMs = windowMs * (1 + WINDOW_GUARD_FRACTION);
    this.adaptive = adaptive;
    this.ceiling = requests;
  }

  /** The current ceiling (the setting, or lower after 429s), with the additive increase accrued until `now`. */
  ceilingAt(now: number): number {
    if (this.ceiling < this.requests && now - this.changedAt >= this.windowMs) {
      const windows = Math.floor((now - this.changedAt) / this.windowMs);
      this.ceiling = Math.min(this.requests, this.ceiling + windows * this.increaseStep());
      this.changedAt += windows * this.windowMs;
    }
    return this.ceiling;
  }

  /** Whether one more request may start (or be reserved) at `now`: room in the log, and the pace allows it. */
  canStart(now: number): boolean {
    this.prune(now);
    const ceiling = this.ceilingAt(now);
    return this.live() + this.reserved < ceiling && now >= this.paceAt - (PACING_BURST - 1) * this.gap(ceiling);
  }

  /** Records a start at `now` (no reservation). The caller has checked `canStart(now)`. */
  record(now: number): void {
    this.starts.push(now);
    this.pace(now);
  }

  /** Holds a place for a request about to start. The caller has checked `canStart(now)`. */
  reserve(now: number): void {
    this.reserved++;
    this.pace(now);
  }

  private gap(ceiling: number): number {
    return this.holdMs / ceiling;
  }

  private pace(now: number): void {
    this.paceAt = Math.max(this.paceAt, now) + this.gap(this.ceilingAt(now));
  }

  /** The reserved request starts now: its start enters the log. */
  confirm(now: number): void {
    this.reserved--;
    this.starts.push(now);
  }

  /**
   * The task that held a reservation made at `reservedAt` ended without confirming it (no gate wired, or no request
   * made): it is counted as a start at `reservedAt`, since it may have sent one unseen. Keeps the rule: the place was
   * held in every window since `reservedAt`, and the log stays in order.
   */
  settle(reservedAt: number): void {
    this.reserved--;
    let i = this.starts.length;
    while (i > this.head && this.starts[i - 1]! > reservedAt) i--;
    this.starts.splice(i, 0, reservedAt);
  }

  /**
   * The earliest time at which `canStart` may turn true by time alone (a start leaving the window, or the ceiling
   * rising), or undefined when only a released reservation can make room.
   */
  nextFreeAt(now: number): number | undefined {
    this.prune(now);
    const ceiling = this.ceilingAt(now);
    let at: number | undefined;
    const mustLeave = this.live() + this.reserved - ceiling; // starts that must leave the window first, minus one
    if (mustLeave < 0) at = now;
    else if (this.reserved < ceiling) at = this.starts[this.head + mustLeave]! + this.holdMs;
    if (this.ceiling < this.requests && (at === undefined || at > now)) {
      const rise = this.changedAt + this.windowMs;
      at = at === undefined ? rise : Math.min(at, rise);
    }
    if (at === undefined) return undefined;
    return Math.max(at, this.paceAt - (PACING_BURST - 1) * this.gap(ceiling));
  }

  /**
   * A 429 answered a request that started at `startedAt`; the group resumes at `resumeAt`. Halves the ceiling
   * unless this is an echo of the episode that already halved it. Returns the new ceiling when it changed.
   */
  onRateLimited(startedAt: number | undefined, resumeAt: number): number | undefined {
    if (!this.adaptive) return undefined;
    if (startedAt !== undefined && startedAt < this.decreasedAt) {
      // An echo: sent at the old rate. Only make sure the increase waits for the (possibly longer) pause.
      this.changedAt = Math.max(this.changedAt, resumeAt);
      return undefined;
    }
    this.ceiling = Math.max(1, Math.floor(this.ceilingAt(resumeAt) * AIMD_DECREASE_FACTOR));
    this.decreasedAt = resumeAt;
    this.changedAt = resumeAt;
    return this.ceiling;
  }

  /** Starts in the window ending at the last prune, and open reservations (for stats and tests). */
  get inWindow(): { starts: number; reserved: number } {
    return { starts: this.live(), reserved: this.reserved };
  }

  private increaseStep(): number {
    return Math.max(1, Math.round(this.requests * AIMD_INCREASE_FRACTION));
  }

  private live(): number {
    return this.starts.length - this.head;
  }

  /** Drops starts whose place is free again (start <= now - holdMs); compacts the array now and then. */
  private prune(now: number): void {
    const edge = now - this.holdMs;
    while (this.head < this.starts.length && this.starts[this.head]! <= edge) this.head++;
    if (this.head > 1024 && this.head * 2 > this.starts.length) {
      this.starts = this.starts.slice(this.head);
      this.head = 0;
    }
  }
}
