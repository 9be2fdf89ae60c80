/**
 * Rate limits shared by every daemon of one PostgreSQL store (issue 13): at most N request starts in ANY window,
 * counted across ALL daemons together, per endpoint group and overall; a 429 seen by one daemon pauses the group on
 * every daemon, and the ceiling it lowers (AIMD) is lowered for all. No extra server: the store's database is the
 * coordinator. SQLite has one daemon and keeps the in-memory limiter (./rate-limit.ts).
 *
 * ## The rule that must always hold (the same as ./rate-limit.ts, counted in the database)
 * For every limit (a group, and '*' the overall one) and every time x on the DATABASE's clock:
 *   starts recorded in rate_starts with at_ms in (x - holdMs, x]  <=  requests,
 * with holdMs = windowMs plus the 1% guard of ./rate-limit.ts (WINDOW_GUARD_FRACTION). A start is admitted by one
 * statement, its own transaction (`tryStart` calls remessa_rate_admit, PostgreSQL migration 013, so that no lock is
 * ever held across a round trip), that takes the limits' transaction-scoped advisory locks (the group's, then the
 * overall's: always in that order, so two admissions never deadlock), reads `clock_timestamp()` once, counts the
 * window of each limit and either inserts the start into both at that time or inserts nothing and says how long to
 * wait: until the oldest start that must leave the window leaves it, the pause ends, or the pace allows. Every
 * admission of every daemon is serialised on the lock and stamped by the one database clock after taking it, so the
 * times are in admission order and the count is exact whatever the daemons' own clocks say (skewed machines agree).
 * - Starts are recorded, not reserved: the start is the admission, and the request leaves right after the commit
 *   (the queue's gate returns at once, ./request-queue.ts). The time between the clock reading and the request
 *   leaving (the commit, one round trip) is what the 1% guard absorbs, as it absorbs the event loop's delay locally;
 *   the commit is not flushed (the function sets synchronous_commit off for its own transaction) so that it stays
 *   short: a start lost in a crash of the DATABASE server could let one window hold more, a risk taken for the speed
 *   of every admission.
 * - A daemon has at most ADMITTERS admissions of one group in the database at once; its other requests of that
 *   group wait in the daemon, in order (so it takes at most that many of the store's pooled connections per group).
 * - Nothing is held for a daemon: no reservation, no lease. A daemon that dies (or whose pool ends) leaves only the
 *   starts it really made, which leave the window like any other; an admission it was making rolls back with its
 *   connection and its advisory lock goes with it. So a dead daemon never blocks the others.
 * - Old starts are pruned by the admission that finds them out of the window (start <= now - holdMs).
 * - Daemons sharing a store share the rate settings (they share the bank's key): a daemon counts the window with its
 *   own `windowMs`; different settings on two daemons give the stricter of the two only to the stricter daemon.
 *
 * ## Pause and AIMD, shared (rate_groups)
 * - A 429 records `paused_until_ms = now + pause` (the longer pause wins) under the group's lock; every daemon's
 *   admission of that group waits until then (and the queue stops admitting that group's tasks meanwhile:
 *   `onPause`). Only the group: the others go on.
 * - The ceiling after 429s (./rate-limit.ts: halve per episode, an echo of an episode, i.e. a 429 for a request
 *   started before the last decrease, does not halve again; +5% of the setting per calm window) is kept in the row
 *   and computed from it on the database's clock by whichever daemon admits next. It is shared, not per daemon: the
 *   bank counts the key's requests, so it is the key's rate that must come down, and a 429 answered to daemon A is
 *   as much a sign for daemon B. The echo rule compares start times on the one database clock (the start time
 *   returned by `admit` is the one the 429's request had).
 * - The pace (GCRA, ./rate-limit.ts PACING_BURST) is shared the same way (`pace_at_ms`).
 *
 * - A group that no limit counts (none of its own, no overall one) takes no admission (./request-queue.ts): its
 *   requests leave with no round trip. A 429 it gets is recorded all the same, and `watchPauses` reads the pauses of
 *   such groups every PAUSE_WATCH_MS (one statement for all of them): the other daemons pause the group at most that
 *   much later, instead of learning of the limit only from a 429 of their own.
 *
 * ## When the database cannot be reached
 * `admit` retries the admission (backing off up to 1 s) until it succeeds or the caller's signal aborts, and tells
 * `onError` each time: a request never leaves without its start recorded. A 429's pause that cannot be recorded is
 * told to `onError` and holds on this daemon only (the queue's own pause).
 */
import { randomUUID } from 'node:crypto';
import type { SqlDriver, SqlTransaction } from '../store/sql.js';
import { ENDPOINT_GROUPS, type EndpointGroup } from '../types.js';
import { type QueueClock, REAL_CLOCK } from './clock.js';
import { AIMD_DECREASE_FACTOR, AIMD_INCREASE_FRACTION, PACING_BURST, WINDOW_GUARD_FRACTION } from './rate-limit.js';
import type { RequestQueueOptions } from './request-queue.js';

/** The name of the overall limit in rate_starts / rate_groups. */
export const OVERALL = '*';

/** First key of the advisory locks of the shared limits ("rems"); the second is the limit's number. */
export const RATE_LOCK_CLASS = 0x72656d73;

/**
 * A wait this short (milliseconds) is spent in the admission's transaction, holding the locks (`pg_sleep`), and an
 * admission that must wait wakes this much earlier than told (EARLY_MS): a start taken a timer's lateness plus a round
 * trip after its place freed loses that time for good (measured: about 7% of the rate at 10 per 200 ms with three
 * daemons). Holding the overall limit's lock that long delays the other groups' admissions by as much at most.
 */
const SPIN_MS = 25;
const EARLY_MS = 15;

/**
 * Admissions of one group a daemon has in the database at once: two, so that the next one is already waiting for the
 * lock while the current one sleeps until its place (no round trip between two starts), and a daemon never takes more
 * than two of the store's pooled connections per group for them.
 */
const ADMITTERS = 2;

/** The longest one wait between two admission attempts, in milliseconds (a retry after a database error too). */
const MAX_RETRY_MS = 1000;

export interface SharedRateSetting {
  /** Requests started per window (any window of this length); at least 1. */
  requests: number;
  windowMs: number;
}

export interface SharedRateOptions {
  /** Per endpoint group; a missing group is not limited (but counts toward `overall`). */
  rateLimits?: Partial<Record<EndpointGroup, SharedRateSetting>>;
  overall?: SharedRateSetting | undefined;
  /** Whether 429s lower a group's ceiling (AIMD). @defaultValue true */
  adaptive?: boolean;
  /** This daemon's name in rate_starts. @defaultValue a random id */
  daemon?: string;
  /** The local clock for waits and hints (the queue's). @defaultValue the real clock */
  clock?: QueueClock;
  /** How often `watchPauses` reads the pauses of the groups no limit counts, in ms. @defaultValue PAUSE_WATCH_MS */
  pauseWatchMs?: number;
}

/**
 * How often a daemon reads the pauses recorded for the groups that no shared limit counts (`watchPauses`): a 429
 * answered to another daemon pauses such a group here at most this much later. One statement a period for all of them.
 */
export const PAUSE_WATCH_MS = 500;

/** The shared limiter's settings from the request queue's options (the same limits, counted in the database). */
export function sharedRateOptions(queue: RequestQueueOptions): SharedRateOptions {
  const rateLimits: Partial<Record<EndpointGroup, SharedRateSetting>> = {};
  for (const g of ENDPOINT_GROUPS) {
    const l = queue.rateLimits?.[g];
    if (l && l.intervalCap > 0) rateLimits[g] = { requests: l.intervalCap, windowMs: l.intervalMs };
  }
  const o = queue.overallRateLimit;
  return {
    rateLimits,
    ...(o && o.intervalCap > 0 ? { overall: { requests: o.intervalCap, windowMs: o.intervalMs } } : {}),
    ...(queue.adaptive === undefined ? {} : { adaptive: queue.adaptive }),
    ...(queue.clock ? { clock: queue.clock } : {}),
  };
}

/** The outcome of one admission attempt. */
export type TryStart =
  | { startedAt: number }
  | {
      /** How long to wait before trying again, in milliseconds. */
      waitMs: number;
      /** When the wait is a pause after a 429: its remaining length. */
      pausedMs?: number | undefined;
    };

/**
 * The contract the request queue uses for limits kept outside itself (./request-queue.ts `useSharedLimits`).
 * Admission is asynchronous (a round trip), so it sits at the gate each request passes as it leaves.
 */
export interface SharedRateGate {
  /** Resolves with the start's time (shared clock) once a start of `group` is admitted by every limit; the request must leave now. */
  admit(group: EndpointGroup, signal?: AbortSignal): Promise<number>;
  /** A 429: pauses `group` everywhere for `pauseMs`, lowers its ceiling unless an echo. Resolves with the new ceiling when lowered. */
  rateLimited(group: EndpointGroup, startedAt: number | undefined, pauseMs: number): Promise<number | undefined>;
  /** On the local clock: before this time an admission of `group` is known to be pointless (a full window, a pause). */
  notBefore(group: EndpointGroup): number;
  /** The group's ceiling as last seen (requests per window), or undefined if the group is unlimited. */
  ceiling(group: EndpointGroup): number | undefined;
  /**
   * Whether a shared limit counts the group's starts (its own, or the overall one). A request of a group that none
   * counts takes no admission: it leaves at once, as with no limit at all (`admit` would only read the clock).
   */
  limited(group: EndpointGroup): boolean;
  /** Told (group, remaining ms) when an admission finds the group paused by any daemon. */
  onPause(listener: (group: EndpointGroup, ms: number) => void): () => void;
  /** Told of a database error while admitting or recording a pause (it is retried / held locally). */
  onError(listener: (error: unknown) => void): () => void;
}

interface Limit {
  name: string;
  lockId: number;
  requests: number;
  windowMs: number;
  holdMs: number;
  adaptive: boolean;
}

interface GroupRow {
  paused_until_ms: number;
  ceiling: number | null;
  changed_at_ms: number;
  decreased_at_ms: number | null;
  pace_at_ms: number | null;
}

/** The database's clock in milliseconds since the epoch (the clock every daemon's window is counted on). */
const NOW_EXPR = '(extract(epoch from clock_timestamp()) * 1000)::float8';

const NOW_SQL = `SELECT ${NOW_EXPR} AS now`;

export class SharedRateLimiter implements SharedRateGate {
  readonly daemon: string;
  private readonly driver: SqlDriver;
  private readonly clock: QueueClock;
  private readonly limits = new Map<EndpointGroup, Limit>();
  private readonly overall: Limit | undefined;
  private readonly hints = new Map<string, number>();
  private readonly turns = new Map<EndpointGroup, { active: number; waiting: Array<{ go: () => void }> }>();
  private readonly ceilings = new Map<string, number>();
  private readonly pauseListeners = new Set<(group: EndpointGroup, ms: number) => void>();
  private readonly errorListeners = new Set<(error: unknown) => void>();
  private readonly pauseWatchMs: number;

  constructor(driver: SqlDriver, options: SharedRateOptions = {}) {
    if (driver.dialect !== 'postgres') {
      throw new TypeError('SharedRateLimiter: the shared rate limits need a PostgreSQL store (SQLite has one daemon)');
    }
    this.driver = driver;
    this.daemon = options.daemon ?? randomUUID();
    this.clock = options.clock ?? REAL_CLOCK;
    this.pauseWatchMs = options.pauseWatchMs ?? PAUSE_WATCH_MS;
    const adaptive = options.adaptive ?? true;
    const make = (name: string, lockId: number, s: SharedRateSetting, adapt: boolean): Limit => {
      if (!Number.isInteger(s.requests) || s.requests < 1 || !Number.isInteger(s.windowMs) || s.windowMs < 1) {
        throw new TypeError(`SharedRateLimiter: ${name}: Expected integers requests >= 1 and windowMs >= 1`);
      }
      return {
        name,
        lockId,
        requests: s.requests,
        windowMs: s.windowMs,
        holdMs: s.windowMs * (1 + WINDOW_GUARD_FRACTION),
        adaptive: adapt,
      };
    };
    ENDPOINT_GROUPS.forEach((g, i) => {
      const s = options.rateLimits?.[g];
      if (s && s.requests > 0) this.limits.set(g, make(g, i + 1, s, adaptive));
    });
    this.overall =
      options.overall && options.overall.requests > 0 ? make(OVERALL, 0, options.overall, false) : undefined;
  }

  /**
   * At most ADMITTERS admissions at a time per group on this daemon, the others waiting here in call order (not in the
   * database): a daemon holds at most that many pooled connections per group for its admissions (the store's writes
   * keep the rest), and its own requests go first come, first served.
   */
  async admit(group: EndpointGroup, signal?: AbortSignal): Promise<number> {
    signal?.throwIfAborted();
    const turn = this.turns.get(group) ?? { active: 0, waiting: [] };
    this.turns.set(group, turn);
    if (turn.active >= ADMITTERS) {
      await new Promise<void>((resolve, reject) => {
        const waiter = {
          go: () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
        };
        const onAbort = () => {
          const i = turn.waiting.indexOf(waiter);
          if (i >= 0) turn.waiting.splice(i, 1);
          reject(signal?.reason);
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        turn.waiting.push(waiter);
      });
    } else {
      turn.active++;
    }
    try {
      return await this.admitNow(group, signal);
    } finally {
      const next = turn.waiting.shift();
      if (next) next.go();
      else turn.active--;
    }
  }

  private async admitNow(group: EndpointGroup, signal: AbortSignal | undefined): Promise<number> {
    let failures = 0;
    for (;;) {
      signal?.throwIfAborted();
      let wait: number;
      try {
        const r = await this.tryStart(group);
        failures = 0;
        if ('startedAt' in r) return r.startedAt;
        wait = r.pausedMs === undefined ? r.waitMs - EARLY_MS : r.waitMs;
        if (r.pausedMs !== undefined) for (const l of this.pauseListeners) l(group, r.pausedMs);
      } catch (error) {
        for (const l of this.errorListeners) l(error);
        failures++;
        wait = Math.min(MAX_RETRY_MS, 50 * 2 ** failures);
      }
      await this.sleep(Math.max(1, Math.min(wait, MAX_RETRY_MS)), signal);
    }
  }

  /** One admission attempt: one transaction (see the top of this file). Exported for tests through the class. */
  async tryStart(group: EndpointGroup): Promise<TryStart> {
    const limits = this.limitsOf(group);
    if (limits.length === 0) {
      const row = await this.driver.get<{ now: number }>(NOW_SQL);
      return { startedAt: row!.now };
    }
    const localNow = this.clock.now();
    // One statement, one round trip: the locks are held on the server only (migration 013's remessa_rate_admit does
    // what the top of this file says, in one transaction that is not flushed).
    const list = (values: ReadonlyArray<string | number | boolean>) =>
      `{${values.map((v) => (typeof v === 'string' ? JSON.stringify(v) : String(v))).join(',')}}`;
    const row = await this.driver.get<{
      started_at: number | null;
      wait_ms: number | null;
      paused_ms: number | null;
      ceilings: number[];
    }>(
      `SELECT started_at, wait_ms, paused_ms, ceilings FROM remessa_rate_admit(?::text[], ?::integer[], ?::float8[],
         ?::float8[], ?::boolean[], ?::integer[], ?, ?::float8, ?, ?, ?::integer[])`,
      [
        list(limits.map((l) => l.name)),
        list(limits.map((l) => l.requests)),
        list(limits.map((l) => l.windowMs)),
        list(limits.map((l) => l.holdMs)),
        list(limits.map((l) => l.adaptive)),
        list(limits.map((l) => Math.max(1, Math.round(l.requests * AIMD_INCREASE_FRACTION)))),
        PACING_BURST,
        SPIN_MS,
        this.daemon,
        RATE_LOCK_CLASS,
        list(limits.map((l) => l.lockId)),
      ],
    );
    limits.forEach((l, i) => {
      const c = row?.ceilings[i];
      if (c !== undefined) this.ceilings.set(l.name, c);
    });
    const result: TryStart =
      row?.started_at != null
        ? { startedAt: row.started_at }
        : { waitMs: row?.wait_ms ?? 1, pausedMs: row?.paused_ms ?? undefined };
    if ('waitMs' in result) {
      this.hints.set(group, localNow + result.waitMs);
    } else {
      this.hints.delete(group);
    }
    return result;
  }

  async rateLimited(group: EndpointGroup, startedAt: number | undefined, pauseMs: number): Promise<number | undefined> {
    const limit = this.limits.get(group);
    const lockId = limit?.lockId ?? ENDPOINT_GROUPS.indexOf(group) + 1;
    const localNow = this.clock.now();
    let lowered: { result: number | undefined; pausedMs: number };
    try {
      lowered = await this.recordRateLimited(group, limit, lockId, startedAt, pauseMs);
    } catch (error) {
      for (const l of this.errorListeners) l(error);
      throw error;
    }
    this.pausedUntil(group, localNow + lowered.pausedMs);
    if (lowered.result !== undefined) this.ceilings.set(group, lowered.result);
    return lowered.result;
  }

  private recordRateLimited(
    group: EndpointGroup,
    limit: Limit | undefined,
    lockId: number,
    startedAt: number | undefined,
    pauseMs: number,
  ): Promise<{ result: number | undefined; pausedMs: number }> {
    return this.driver.transaction(
      async (tx) => {
        await tx.get('SELECT pg_advisory_xact_lock(?, ?) AS locked', [RATE_LOCK_CLASS, lockId]);
        const now = (await tx.get<{ now: number }>(NOW_SQL))!.now;
        const row = await this.readGroup(tx, group);
        const resumeAt = Math.max(row.paused_until_ms, now + Math.max(0, pauseMs));
        row.paused_until_ms = resumeAt;
        let result: number | undefined;
        if (limit?.adaptive) {
          if (startedAt !== undefined && row.decreased_at_ms !== null && startedAt < row.decreased_at_ms) {
            // An echo of the episode that already halved the ceiling: only make the increase wait for the pause.
            row.changed_at_ms = Math.max(row.changed_at_ms, resumeAt);
          } else {
            const ceiling = Math.max(1, Math.floor(this.accrue(limit, row, resumeAt) * AIMD_DECREASE_FACTOR));
            row.ceiling = ceiling;
            row.decreased_at_ms = resumeAt;
            row.changed_at_ms = resumeAt;
            result = ceiling;
          }
        }
        await this.writeGroup(tx, group, row);
        return { result, pausedMs: resumeAt - now };
      },
      { durable: false },
    );
  }

  /**
   * Reads, every `pauseWatchMs`, the pauses recorded in the database for the groups that no limit counts, and tells
   * the `onPause` listeners (the queue pauses the group) of each one not seen yet that still runs: such a group takes
   * no admission, which is where a limited group finds another daemon's pause. Nothing to read (no timer) when every
   * group is counted. Returns the function that stops it (before the store closes). A failed read is told to
   * `onError` and tried again at the next period.
   */
  watchPauses(): () => void {
    const groups = ENDPOINT_GROUPS.filter((g) => !this.limited(g));
    if (groups.length === 0 || this.pauseWatchMs <= 0) return () => undefined;
    /** The end of the last pause told, per group, on the database's clock: a pause is told once. */
    const told = new Map<string, number>();
    let stopped = false;
    let timer: NodeJS.Timeout | undefined;
    const read = async () => {
      try {
        const rows = await this.driver.all<{ group_name: EndpointGroup; paused_until_ms: number; now: number }>(
          `SELECT group_name, paused_until_ms, now FROM rate_groups, (SELECT ${NOW_EXPR} AS now) AS clock
           WHERE group_name IN (${groups.map(() => '?').join(', ')}) AND paused_until_ms > now`,
          groups,
        );
        if (stopped) return;
        for (const r of rows) {
          if (told.get(r.group_name) === r.paused_until_ms) continue;
          told.set(r.group_name, r.paused_until_ms);
          const ms = r.paused_until_ms - r.now;
          this.pausedUntil(r.group_name, this.clock.now() + ms);
          for (const l of this.pauseListeners) l(r.group_name, ms);
        }
      } catch (error) {
        if (!stopped) for (const l of this.errorListeners) l(error);
      }
    };
    const next = () => {
      timer = setTimeout(() => void read().finally(() => stopped || next()), this.pauseWatchMs);
      timer.unref();
    };
    next();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }

  /** A pause of `group` runs until `at` (local clock): no admission of it is worth trying before (a later one kept). */
  private pausedUntil(group: EndpointGroup, at: number): void {
    this.hints.set(group, Math.max(this.hints.get(group) ?? 0, at));
  }

  notBefore(group: EndpointGroup): number {
    return this.hints.get(group) ?? Number.NEGATIVE_INFINITY;
  }

  limited(group: EndpointGroup): boolean {
    return this.limitsOf(group).length > 0;
  }

  ceiling(group: EndpointGroup): number | undefined {
    const limit = this.limits.get(group);
    if (!limit) return undefined;
    return this.ceilings.get(group) ?? limit.requests;
  }

  onPause(listener: (group: EndpointGroup, ms: number) => void): () => void {
    this.pauseListeners.add(listener);
    return () => this.pauseListeners.delete(listener);
  }

  onError(listener: (error: unknown) => void): () => void {
    this.errorListeners.add(listener);
    return () => this.errorListeners.delete(listener);
  }

  /** The group's limit then the overall one: the lock order of every admission. */
  private limitsOf(group: EndpointGroup): Limit[] {
    const limits: Limit[] = [];
    const l = this.limits.get(group);
    if (l) limits.push(l);
    if (this.overall) limits.push(this.overall);
    return limits;
  }

  /** The ceiling at `now` with the additive increase accrued (./rate-limit.ts `ceilingAt`), written into `row`. */
  private accrue(limit: Limit, row: GroupRow, now: number): number {
    if (!limit.adaptive || row.ceiling === null) return limit.requests;
    let ceiling = Math.min(row.ceiling, limit.requests);
    if (ceiling < limit.requests && now - row.changed_at_ms >= limit.windowMs) {
      const windows = Math.floor((now - row.changed_at_ms) / limit.windowMs);
      const step = Math.max(1, Math.round(limit.requests * AIMD_INCREASE_FRACTION));
      ceiling = Math.min(limit.requests, ceiling + windows * step);
      row.changed_at_ms += windows * limit.windowMs;
    }
    row.ceiling = ceiling >= limit.requests ? null : ceiling;
    return ceiling;
  }

  private async readGroup(tx: SqlTransaction, name: string): Promise<GroupRow> {
    const row = await tx.get<GroupRow>(
      'SELECT paused_until_ms, ceiling, changed_at_ms, decreased_at_ms, pace_at_ms FROM rate_groups WHERE group_name = ?',
      [name],
    );
    return row ?? { paused_until_ms: 0, ceiling: null, changed_at_ms: 0, decreased_at_ms: null, pace_at_ms: null };
  }

  private async writeGroup(tx: SqlTransaction, name: string, row: GroupRow): Promise<void> {
    await tx.run(
      `INSERT INTO rate_groups (group_name, paused_until_ms, ceiling, changed_at_ms, decreased_at_ms, pace_at_ms)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (group_name) DO UPDATE SET paused_until_ms = excluded.paused_until_ms, ceiling = excluded.ceiling,
         changed_at_ms = excluded.changed_at_ms, decreased_at_ms = excluded.decreased_at_ms,
         pace_at_ms = excluded.pace_at_ms`,
      [name, row.paused_until_ms, row.ceiling, row.changed_at_ms, row.decreased_at_ms, row.pace_at_ms],
    );
  }

  private sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.clock.clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = this.clock.setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
