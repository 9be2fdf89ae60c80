/**
 * A PostgreSQL store frees its own dead row versions during a night (issue 13 §3, "under 600 bytes stored a row").
 *
 * Why: on PostgreSQL every change of a row writes a new version of it and leaves the old one dead until a VACUUM
 * frees it. A bill row is inserted, claimed, moved to `intent` and answered: four versions, none of them a HOT update
 * (`state` and `holder` are indexed), so each also adds index entries; its step record is inserted, answered and
 * dropped. Autovacuum wakes once a minute and only after 20% of a table changed: on a night of 20,000 rows it never
 * ran, and the first night held 1,043-1,076 bytes a bill row, two thirds of them dead versions (docs/postgres.md).
 * Freed during the night, that room is used again by the night's next versions.
 *
 * What: the store counts the rows of THIS process whose drive ended (the engine calls `Store.rowEnded`, once a row,
 * after the row's last write committed: succeeded, failed or uncertain; a row parked or left waiting is not counted).
 * Each `everyRows` rows ended it runs, on a connection of its own (opened for it, closed after: never one of the
 * pool's, so no row's write ever waits for it), `VACUUM_SQL`:
 * - `rows, steps`: the tables whose versions die by the thousand. Not `natural_keys` (insert-only: nothing to free,
 *   and every ingestion locks it in SHARE ROW EXCLUSIVE, which a VACUUM would wait for or make wait), nor the small
 *   tables (batches, daemons), whose updates are HOT and pruned as their pages are read.
 * - SKIP_LOCKED: a table another VACUUM (another daemon's, autovacuum's) is working on is skipped, not waited for;
 *   PostgreSQL says so with a warning (55P03), counted as `skipped`.
 * - TRUNCATE false: no ACCESS EXCLUSIVE lock at the end to give empty tail pages back, which would make the rows'
 *   writes wait (and cancel queries on a hot standby); the next night's rows use those pages anyway.
 * - PARALLEL 0: one backend, never the parallel workers a VACUUM may start for its indexes.
 *
 * The rules (what must hold):
 * 1. Never awaited by a row: `rowEnded` is synchronous and only counts; a vacuum runs beside the engine, and nothing
 *    of the engine or of a row's write waits for it.
 * 2. At most one at a time per store (per daemon: each counts its own rows; two daemons' vacuums of one table do not
 *    wait for each other, SKIP_LOCKED).
 * 3. Self-limiting whatever the tables' size (a VACUUM reads every index of its table, so it costs more as the store
 *    grows): the next vacuum starts no sooner than PAUSE_FACTOR (10) times the last one's duration after it ended.
 *    The server thus spends at most 1/11 of one backend on this, however big the tables; the rows ended meanwhile
 *    are kept counted, and the first row to end after the pause starts the vacuum they owe.
 * 4. A failure (the role does not own the tables, the server gone, a connection refused) fails no row and no run:
 *    it is counted, logged at warn the first time after a success (or the first time at all), at debug while it
 *    repeats, never with the password (the driver's messages carry none); the next threshold tries again.
 * 5. A store closing does not wait for a vacuum in progress longer than needed: it is cancelled on the server
 *    (pg_cancel_backend through the pool; a cancelled VACUUM keeps the pages it already freed), and the close waits
 *    only for that answer.
 *
 * SQLite has no dead versions to free (a changed page is written over in place; freed pages are reused): there the
 * setting is ignored (src/config.ts `store.vacuumEveryRows`).
 */
import type { Logger } from '../log.js';
import type { ServerWarning } from './sql.js';

/**
 * Rows ended between two vacuums, by default (config `store.vacuumEveryRows`; 0 = off). Measured on a first night of
 * 20,000 bills (bytes a row once the night is vacuumed whole): none 929-1,076, 1,000 -> 646, 500 -> 630 (40 vacuums),
 * 250 -> 624 (78): past 500 a vacuum more frees little. Rule 3 bounds the cost whatever the count.
 */
export const DEFAULT_VACUUM_EVERY_ROWS = 500;

/** Rule 3: the next vacuum waits at least this many times the last one's duration after it ended. */
export const VACUUM_PAUSE_FACTOR = 10;

/** What a vacuum runs (see the top for each option). */
export const VACUUM_SQL = 'VACUUM (SKIP_LOCKED, TRUNCATE false, PARALLEL 0) rows, steps';

/** PostgreSQL's "skipping vacuum of ... --- lock not available" (SKIP_LOCKED). */
const LOCK_NOT_AVAILABLE = '55P03';

/**
 * How a vacuum ended: `skipped` when the server skipped a table another VACUUM held (rule 2). Also the label values
 * of the metric `remessa_store_vacuums_total` (src/metrics.ts).
 */
export const VACUUM_RESULTS = ['done', 'skipped', 'failed'] as const;
export type VacuumResult = (typeof VACUUM_RESULTS)[number];

/** Vacuums run so far, by how each ended. */
export type VacuumStats = Record<VacuumResult, number>;

export interface RowVacuumsOptions {
  /** Rows ended between two vacuums (>= 1). */
  everyRows: number;
  /**
   * Runs `VACUUM_SQL` on a connection of its own; aborting the signal cancels it on the server. Resolves with the
   * server's warnings, rejects when it failed (or was cancelled).
   */
  run(sql: string, signal: AbortSignal): Promise<ServerWarning[]>;
  logger?: Logger | undefined;
  /** Milliseconds of a monotonic clock, for tests. @defaultValue performance.now */
  monotonic?: () => number;
}

/** The vacuums of one store: counts its rows ended and runs a vacuum when the rules above allow. */
export class RowVacuums {
  readonly stats: VacuumStats = { done: 0, skipped: 0, failed: 0 };
  readonly #options: RowVacuumsOptions;
  readonly #now: () => number;
  /** Rows ended since the last vacuum started. */
  #ended = 0;
  /** The vacuum under way (rule 2), and how to cancel it (rule 5). */
  #running: { done: Promise<void>; abort: AbortController } | undefined;
  /** No vacuum starts before this instant (rule 3). */
  #notBefore = Number.NEGATIVE_INFINITY;
  /** The last vacuum failed: a repeat is logged at debug only (rule 4). */
  #failing = false;
  #stopped = false;

  constructor(options: RowVacuumsOptions) {
    if (!Number.isInteger(options.everyRows) || options.everyRows < 1) {
      throw new RangeError(`Expected everyRows to be an integer >= 1, got ${options.everyRows}`);
    }
    this.#options = options;
    this.#now = options.monotonic ?? (() => performance.now());
  }

  /** One row of this process ended (rule 1: counts, and at most starts a vacuum; never waits). */
  rowEnded(): void {
    if (this.#stopped) return;
    this.#ended += 1;
    if (this.#ended < this.#options.everyRows || this.#running || this.#now() < this.#notBefore) return;
    this.#ended = 0;
    const abort = new AbortController();
    const done = this.#vacuum(abort.signal).finally(() => {
      this.#running = undefined;
    });
    this.#running = { done, abort };
  }

  /** Whether a vacuum is under way. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /** Starts no more vacuums, cancels the one under way (rule 5) and resolves once it has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    const running = this.#running;
    if (!running) return;
    running.abort.abort();
    await running.done;
  }

  async #vacuum(signal: AbortSignal): Promise<void> {
    const log = this.#options.logger;
    const started = this.#now();
    let result: VacuumResult;
    try {
      const warnings = await this.#options.run(VACUUM_SQL, signal);
      const refused = warnings.filter((w) => w.code !== LOCK_NOT_AVAILABLE);
      if (refused.length > 0) {
        result = 'failed';
        this.#failed(refused.map((w) => w.message).join('; '), undefined);
      } else {
        result = warnings.length > 0 ? 'skipped' : 'done';
        if (this.#failing) log?.info({ sql: VACUUM_SQL }, 'store vacuum works again');
        this.#failing = false;
      }
    } catch (err) {
      if (signal.aborted) {
        // Rule 5: not a failure (the pages it freed stay freed); no vacuum follows.
        log?.debug({ sql: VACUUM_SQL }, 'store vacuum cancelled: the store is closing');
        return;
      }
      result = 'failed';
      this.#failed(undefined, err);
    }
    this.stats[result] += 1;
    const ended = this.#now();
    this.#notBefore = ended + VACUUM_PAUSE_FACTOR * (ended - started);
    log?.debug({ sql: VACUUM_SQL, result, ms: Math.round(ended - started) }, 'store vacuum ended');
  }

  #failed(warning: string | undefined, err: unknown): void {
    const log = this.#options.logger;
    const fields = { sql: VACUUM_SQL, everyRows: this.#options.everyRows, ...(err ? { err } : { warning }) };
    const message = 'store vacuum failed (no row is affected; tried again after the next rows end)';
    if (this.#failing) log?.debug(fields, message);
    else log?.warn(fields, message);
    this.#failing = true;
  }
}
