/**
 * Several daemons sharing one PostgreSQL store (issue 13 §1): who holds what, under leases renewed in the database.
 * No coordinator of our own: PostgreSQL's row locks (`FOR UPDATE SKIP LOCKED`), unique keys and its clock decide.
 * On SQLite there is one daemon (the data folder's lock keeps a second one off): it holds everything, nothing here
 * runs there (`isSharedStore` is false), and the columns of migration 014 stay empty.
 *
 * THE LEASE OF A DAEMON (table `daemons`, one row per `store.daemonName`)
 *
 *   (start) --register: no live lease under this name on another host, nor on this host from a process that still
 *           runs (one is waited for, one lease)--> alive
 *           (a new life under a name lets go, in the same transaction, the rows and answers its previous life held)
 *   alive --renew every leaseMs/3: lease_until = DB now + leaseMs--> alive
 *   alive --graceful stop: release (lease ended, stopped_at set)--> stopped   (what it held is free at once)
 *   alive --renewal finds the lease passed (frozen, cut off), or no renewal for leaseMs by its own clock (also
 *           while a renewal still waits for the database: told at the timer's next tick)--> lost
 *   lost --> the process exits with code 1 and says so (src/runner/daemon.ts); it sends nothing more: every row
 *            write checks the holder (`assertLive`), an intent checks the lease in the database itself, and the
 *            engine checks it (`assertLive`) as each request leaves, since a row may wait for a connection after its
 *            intent was committed (src/runner/engine.ts).
 *   (anyone) --lease_until < DB now--> dead: the others take over what it held.
 *
 * Times: `lease_until_ms` is written and compared on the DATABASE's clock (clock_timestamp()), so daemons whose
 * machines' clocks disagree agree on who is dead. A daemon also keeps a local deadline (its monotonic clock at the
 * start of the last successful renewal + leaseMs - a tenth): past it, it counts its lease lost without asking, so a
 * daemon cut off from the database stops sending before the others may take its rows over. What `remessa status`
 * shows of a daemon (started, last seen, stopped) is on the database's clock too.
 *
 * WHAT A DAEMON HOLDS
 * - Rows (`rows.holder`): claimed in pages (`claimRows`) by one statement `SELECT ... FOR UPDATE OF r SKIP LOCKED`
 *   over the rows held by nobody, by this daemon, or by a dead daemon, then `holder` set, in one transaction: two
 *   daemons never claim one row. A row is claimed before any of its steps is sent; `recordIntent` refuses a row this
 *   daemon does not hold (STORE_ROW_NOT_HELD) or when its lease is lost (STORE_LEASE_LOST), and every other row write
 *   of a daemon refuses a row held by another (src/store/store.ts `lockRow`). So no two daemons ever send the same
 *   step. A row skipped because another transaction held its lock at that instant is taken by the engine's next pass
 *   over the batch (src/runner/engine.ts `run`: passes until one takes no new row).
 *   One big file: the daemon holding the file (its driver) claims its rows a page at a time as it goes; every other
 *   live daemon, every second, claims pages of the not-yet-started (`pending`, held by nobody) rows of `running`
 *   batches that others drive (`batchesToHelp`; src/runner/engine.ts `helpWithBatch`) and drives them. Rows in flight,
 *   waiting or uncertain stay their driver's; no helper ingests, gates, marks a batch or answers, and a helper lets go
 *   of the rows it claimed and did not finish when its help ends (`releaseUnfinishedRows`). The driver, its own
 *   rows ended, waits while any row is still held by another daemon or by nobody (`rowsWorkedElsewhere`),
 *   claiming back those of a helper that stopped or died (the takeover above; counted as worked elsewhere until
 *   claimed, since a helper's claim may hold their locks at the instant of a pass), then answers the file: once.
 *   Taking over a dead daemon's row turns its steps in `intent` into `unknown` (rule 8 of ./rows.ts): exactly
 *   what a restart does with them (rule 1), then rule 2 decides (resend with the same key, recover, or uncertain).
 * - Files (`file_claims`): src/intake/shared-claims.ts.
 * - Answers (`intakes.answer_holder`): `claimAnswer`, before the answer's files are written (src/outbox/result.ts);
 *   cleared when the answer is recorded (src/store/intakes.ts `markAnswered`). A dead writer's claim is taken over.
 *
 * What is NOT guarded (docs/service-gaps.md): a daemon frozen between its last check and the moment its request
 * leaves (after the lease passed) may still send that one request while another daemon resends the same step; with
 * the IdempotencyKey the bank answers the first outcome; a step without it is recovered first (rule 2).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { RemessaError } from '../errors.js';
import type { Logger } from '../log.js';
import { isProcessRunning } from '../process-running.js';
import { DAEMON_NAME, DEFAULT_LEASE_MS } from './daemon-name.js';
import { StoreError } from './db.js';
import type { SqlParam } from './sql.js';
import type { RowHolder, RowRecord, Store } from './store.js';

/** A row held by another daemon was asked to move by this one. */
export const STORE_ROW_NOT_HELD = 'STORE_ROW_NOT_HELD';
/** This daemon's lease passed (frozen, cut off from the database): it must stop. */
export const STORE_LEASE_LOST = 'STORE_LEASE_LOST';
/** Another daemon, on another host, holds a live lease under the same name. */
export const STORE_DAEMON_NAME_IN_USE = 'STORE_DAEMON_NAME_IN_USE';
/** The code a step in `intent` gets when its row is taken over from a dead daemon (rule 8 of ./rows.ts). */
export const TAKEN_OVER = 'TAKEN_OVER_FROM_DEAD_DAEMON';

export { DAEMON_NAME, DEFAULT_LEASE_MS, defaultDaemonName, MAX_LEASE_MS, MIN_LEASE_MS } from './daemon-name.js';

/** Whether several daemons may share this store: PostgreSQL only (SQLite has one daemon, the data folder's lock). */
export function isSharedStore(store: Store): boolean {
  return store.driver.dialect === 'postgres';
}

/** The database's clock in milliseconds since the epoch, as SQL (PostgreSQL), or this process's clock (SQLite). */
function clock(store: Store): { sql: string; params: SqlParam[] } {
  return store.driver.dialect === 'postgres'
    ? { sql: '(extract(epoch FROM clock_timestamp()) * 1000)', params: [] }
    : { sql: '?', params: [Date.now()] };
}

/**
 * The database's clock as an ISO 8601 instant (`2026-11-28T08:43:05.123Z`), as SQL (PostgreSQL), or this process's
 * (SQLite). The times a daemon's row shows (started, last seen, stopped) are the database's, as its lease is: with the
 * machines' clocks apart, a live daemon's own clock would show it "last seen" minutes ago, or in the future.
 */
function clockIso(store: Store): { sql: string; params: SqlParam[] } {
  return store.driver.dialect === 'postgres'
    ? { sql: `to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`, params: [] }
    : { sql: '?', params: [new Date().toISOString()] };
}

/** SQL true when the daemon named by the expression `holder` has no live lease (dead, stopped or never seen). */
function deadHolder(holder: string, now: string): string {
  return `NOT EXISTS (SELECT 1 FROM daemons d WHERE d.name = ${holder} AND d.lease_until_ms >= ${now})`;
}

export interface DaemonLeaseOptions {
  name: string;
  /** @defaultValue DEFAULT_LEASE_MS */
  leaseMs?: number;
  /** Told once when the lease is lost (the daemon exits with code 1). */
  onLost?: (error: StoreError) => void;
  logger?: Logger;
  /** The local monotonic clock, in ms (tests). @defaultValue performance.now */
  monotonic?: () => number;
  /**
   * Where the renewals go: a store (its own connections) apart from the one the daemon works on, so that a pool busy
   * with the daemon's transactions (or the shared rate limiter's waits) never delays a renewal past the lease.
   * @defaultValue the store itself
   */
  renewOn?: Store;
}

/** A daemon's lease on a shared store (see the top of this file). Bound to the store: `store.daemon` is it. */
export class DaemonLease implements RowHolder {
  readonly name: string;
  readonly leaseMs: number;
  private readonly store: Store;
  private readonly options: DaemonLeaseOptions;
  private readonly monotonic: () => number;
  private validUntil = 0;
  private lostError: StoreError | undefined;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<void> | undefined;
  private released = false;

  private constructor(store: Store, options: DaemonLeaseOptions) {
    this.store = store;
    this.options = options;
    this.name = options.name;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.monotonic = options.monotonic ?? (() => performance.now());
  }

  /**
   * Registers the daemon (a live lease under the same name held from another host: STORE_DAEMON_NAME_IN_USE), binds
   * the lease to the store, and renews it every leaseMs/3 until `release`.
   */
  static async register(store: Store, options: DaemonLeaseOptions): Promise<DaemonLease> {
    if (!DAEMON_NAME.test(options.name)) {
      throw new RemessaError('CONFIG_INVALID', `store.daemonName: expected ${DAEMON_NAME}, got "${options.name}"`);
    }
    const lease = new DaemonLease(store, options);
    // A live lease under this name from another host may be that of this very daemon before it moved or crashed:
    // waited for, one lease at most (a daemon that is alive keeps renewing it: then refused).
    const giveUpAt = lease.monotonic() + lease.leaseMs * 1.2;
    for (;;) {
      if (await lease.tryRegister()) break;
      if (lease.monotonic() >= giveUpAt) {
        const other = await store.sql.get<{ host: string | null; pid: number | null }>(
          'SELECT host, pid FROM daemons WHERE name = ?',
          [options.name],
        );
        throw new StoreError(
          STORE_DAEMON_NAME_IN_USE,
          `Another daemon named "${options.name}" (host ${other?.host ?? '?'}, pid ${other?.pid ?? '?'}) holds a live lease on this store: give each daemon its own store.daemonName`,
        );
      }
      options.logger?.warn(
        { daemon: options.name },
        'another daemon of this name holds a live lease on this store; waiting for it to pass',
      );
      await new Promise((r) => setTimeout(r, Math.max(50, lease.leaseMs / 6)));
    }
    store.bindDaemon(lease);
    lease.schedule();
    return lease;
  }

  /** One attempt to register (see `register`): true when this daemon now holds the lease of its name. */
  private async tryRegister(): Promise<boolean> {
    const store = this.store;
    const options = this.options;
    const host = os.hostname();
    const started = this.monotonic();
    const now = clock(store);
    const at = clockIso(store);
    // A live lease under this name from this host is this daemon's previous life (restarted before its lease passed)
    // unless the process it names still runs: then it is a second process given the same name (one whose temp folder
    // differs, where the name's lock lives: systemd's PrivateTmp), refused as one on another host is.
    const before = await store.sql.get<{ host: string | null; pid: number | string | null }>(
      'SELECT host, pid FROM daemons WHERE name = ?',
      [options.name],
    );
    const pid = Number(before?.pid ?? 0);
    const otherHere =
      before?.host === host && Number.isSafeInteger(pid) && pid > 0 && pid !== process.pid && isProcessRunning(pid);
    const registered = await store.transaction(async (s) => {
      const r = await s.sql.get<{ name: string }>(
        `INSERT INTO daemons AS d (name, lease_until_ms, started_at, last_seen, host, pid, stopped_at)
         VALUES (?, ${now.sql} + ?, ${at.sql}, ${at.sql}, ?, ?, NULL)
         ON CONFLICT (name) DO UPDATE SET lease_until_ms = excluded.lease_until_ms, started_at = excluded.started_at,
           last_seen = excluded.last_seen, host = excluded.host, pid = excluded.pid, stopped_at = NULL
         WHERE d.lease_until_ms < excluded.lease_until_ms - ? OR d.stopped_at IS NOT NULL
           OR (d.host = excluded.host AND d.pid IS NOT DISTINCT FROM ? AND ? = 0)
         RETURNING d.name`,
        [
          options.name,
          ...now.params,
          this.leaseMs,
          ...at.params,
          ...at.params,
          host,
          process.pid,
          this.leaseMs,
          before?.pid ?? null,
          otherHere ? 1 : 0,
        ],
      );
      if (!r) return false;
      // A new life under this name holds nothing yet: the rows and answers its previous life held (it died, or was
      // restarted before its lease passed) are let go in the same transaction, so that no row is ever held by a live
      // daemon that does not drive it (another daemon that adopted its file would skip them for good). Their steps
      // in `intent` stay so: whoever claims them treats them as unknown outcomes, as a restart does (rule 1).
      await s.sql.run(
        `UPDATE rows SET holder = NULL WHERE holder = ? AND state IN ('pending', 'in_flight', 'waiting', 'uncertain')`,
        [options.name],
      );
      await s.sql.run('UPDATE intakes SET answer_holder = NULL WHERE answer_holder = ?', [options.name]);
      return true;
    });
    if (!registered) return false;
    this.validUntil = started + this.leaseMs - this.leaseMs / 10;
    return true;
  }

  private schedule(): void {
    this.timer = setInterval(() => void this.renew(), Math.max(100, Math.floor(this.leaseMs / 3)));
    this.timer.unref();
  }

  /** Renews the lease now (the timer does it every leaseMs/3). A lost lease is told once, then stays lost. */
  renew(): Promise<void> {
    // A renewal still waiting for the database at the local deadline (a database that does not answer): the lease is
    // lost now, told now (the daemon exits), not when, if ever, that renewal returns.
    if (this.renewing !== undefined && this.monotonic() > this.validUntil) {
      this.lose('it was not renewed in time (the database did not answer, or the process was frozen)');
    }
    this.renewing ??= this.renewOnce().finally(() => {
      this.renewing = undefined;
    });
    return this.renewing;
  }

  private async renewOnce(): Promise<void> {
    if (this.lostError || this.released) return;
    const started = this.monotonic();
    if (started > this.validUntil) {
      this.lose('it was not renewed in time (the database did not answer, or the process was frozen)');
      return;
    }
    const on = this.options.renewOn ?? this.store;
    const now = clock(on);
    const at = clockIso(on);
    try {
      const r = await on.sql.run(
        `UPDATE daemons SET lease_until_ms = ${now.sql} + ?, last_seen = ${at.sql}
         WHERE name = ? AND lease_until_ms >= ${now.sql} AND stopped_at IS NULL AND pid = ?`,
        [...now.params, this.leaseMs, ...at.params, this.name, ...now.params, process.pid],
      );
      if (r.changes === 0) {
        this.lose('the database says it passed (another daemon may have taken over what it held)');
        return;
      }
      this.validUntil = started + this.leaseMs - this.leaseMs / 10;
    } catch (err) {
      this.options.logger?.warn({ err }, 'renewing the daemon lease failed; retrying');
      if (this.monotonic() > this.validUntil) this.lose('it could not be renewed in time');
    }
  }

  private lose(why: string): void {
    if (this.lostError) return;
    this.lostError = new StoreError(STORE_LEASE_LOST, `The lease of daemon "${this.name}" is lost: ${why}`);
    if (this.timer) clearInterval(this.timer);
    this.options.onLost?.(this.lostError);
  }

  /** Whether the lease is lost (it stays so). */
  get lost(): boolean {
    return this.lostError !== undefined || this.monotonic() > this.validUntil;
  }

  /** Throws STORE_LEASE_LOST when the lease is lost, or past its local deadline. */
  assertLive(): void {
    if (!this.lostError && this.monotonic() > this.validUntil) {
      this.lose('it was not renewed in time (the database did not answer, or the process was frozen)');
    }
    if (this.lostError) throw this.lostError;
  }

  /** SQL true while the database says this daemon's lease holds: its row, not stopped, not past its end. */
  leaseHeldSql(s: Store): { sql: string; params: SqlParam[] } {
    const now = clock(s);
    return {
      sql: `EXISTS (SELECT 1 FROM daemons WHERE name = ? AND pid = ? AND stopped_at IS NULL AND lease_until_ms >= ${now.sql})`,
      params: [this.name, process.pid, ...now.params],
    };
  }

  /** In the intent's transaction: the database itself says the lease still holds (else STORE_LEASE_LOST). */
  async assertLeaseInDb(s: Store): Promise<void> {
    this.assertLive();
    const held = this.leaseHeldSql(s);
    const r = await s.sql.get<{ held: number }>(`SELECT 1 AS held WHERE ${held.sql}`, held.params);
    if (!r) {
      this.lose('the database says it passed');
      this.assertLive();
    }
  }

  /**
   * Graceful stop: the lease ends now (stopped_at set): every row, file and answer this daemon held is free for the
   * others at once (a stopped daemon leaves no step in `intent`: the engine finishes or parks them).
   */
  async release(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    if (this.released) return;
    this.released = true;
    await this.renewing?.catch(() => undefined);
    if (this.lostError) return;
    const on = this.options.renewOn ?? this.store;
    const at = clockIso(on);
    await on.sql.run(
      `UPDATE daemons SET lease_until_ms = 0, stopped_at = ${at.sql}, last_seen = ${at.sql} WHERE name = ? AND pid = ?`,
      [...at.params, ...at.params, this.name, process.pid],
    );
  }

  /** Stops renewing without a word to the database (tests: a daemon that froze or died). */
  abandon(): void {
    if (this.timer) clearInterval(this.timer);
    this.released = true;
  }
}

/**
 * The next page of the batch's rows in `states` after `afterLine`, in line order. On a shared store with a daemon
 * bound, only rows it may hold are returned and they are claimed for it in the same transaction (see the top):
 * `FOR UPDATE OF r SKIP LOCKED`, so a row another daemon is claiming at the same instant is skipped, never waited for;
 * rows taken over from a dead daemon have their steps in `intent` turned `unknown` (rule 8 of ./rows.ts).
 * Elsewhere, `store.rowsAfter`.
 */
export async function claimRows(
  store: Store,
  batchId: string,
  afterLine: number,
  limit: number,
  states: readonly string[],
): Promise<RowRecord[]> {
  const daemon = store.daemon;
  if (!daemon || !isSharedStore(store)) return store.rowsAfter(batchId, afterLine, limit, states as never);
  daemon.assertLive();
  const lines = await store.transaction(async (s) => {
    const now = clock(s);
    const page = await s.sql.all<{ line: number; holder: string | null }>(
      `SELECT r.line, r.holder FROM rows r
       WHERE r.batch_no = ? AND r.line > ? AND r.state IN (${states.map(() => '?').join(', ')})
         AND (r.holder IS NULL OR r.holder = ? OR ${deadHolder('r.holder', now.sql)})
       ORDER BY r.line LIMIT ? FOR UPDATE OF r SKIP LOCKED`,
      [await s.batchNo(batchId), afterLine, ...states, daemon.name, ...now.params, limit],
    );
    if (page.length === 0) return [];
    const taken = page.filter((r) => r.holder !== null && r.holder !== daemon.name);
    for (const r of taken) await takeOverSteps(s, batchId, r.line, r.holder!, daemon.name);
    const all = page.map((r) => r.line);
    await s.sql.run(`UPDATE rows SET holder = ? WHERE batch_no = ? AND line IN (${all.map(() => '?').join(', ')})`, [
      daemon.name,
      await s.batchNo(batchId),
      ...all,
    ]);
    return all;
  });
  return store.rowsAt(batchId, lines);
}

/**
 * One big file's rows shared (src/runner/engine.ts `helpWithBatch`): the number of the batch's rows still being worked
 * (pending, in flight or waiting) that this daemon does not hold: held by another daemon, live or not, or by nobody.
 * Its driver waits until none is left before it answers the file, passing over the batch again meanwhile. A row of a
 * dead or stopped daemon counts too: the driver's next pass claims it, unless a helper's claim holds its lock at that
 * instant (SKIP LOCKED skips it), and then the pass after; left out, such a row made the driver stop waiting with the
 * row unfinished, its file parked and never archived.
 */
export async function rowsWorkedElsewhere(store: Store, batchId: string): Promise<number> {
  const daemon = store.daemon;
  if (!daemon || !isSharedStore(store)) return 0;
  const r = await store.sql.get<{ n: number | string }>(
    `SELECT COUNT(*) AS n FROM rows r
     WHERE r.batch_no = ? AND r.state IN ('pending', 'in_flight', 'waiting') AND (r.holder IS NULL OR r.holder <> ?)`,
    [await store.batchNo(batchId), daemon.name],
  );
  return Number(r?.n ?? 0);
}

/**
 * A helper's help with a batch ended (src/runner/engine.ts `helpWithBatch`): the rows of the batch it claimed and did
 * not finish, still `pending` (stopped before it started them) or `waiting` (nothing of their step processed: a 429 to
 * the end), are let go, so that no row is held by a live daemon that does not drive it: the batch's driver waits for
 * the rows held elsewhere (`rowsWorkedElsewhere`) and takes them at its next pass. A row in flight or uncertain stays.
 */
export async function releaseUnfinishedRows(store: Store, batchId: string): Promise<void> {
  const daemon = store.daemon;
  if (!daemon || !isSharedStore(store)) return;
  await store.sql.run(
    `UPDATE rows SET holder = NULL WHERE batch_no = ? AND holder = ? AND state IN ('pending', 'waiting')`,
    [await store.batchNo(batchId), daemon.name],
  );
}

/** A batch another daemon drives with rows nobody holds yet, which this one may help with. */
export interface HelpableBatch {
  id: string;
  kind: string;
  fileName: string;
}

/**
 * The batches this daemon may help with (src/runner/engine.ts `helpWithBatch`): `running` (read whole, approval gate
 * passed), whose file a live daemon other than this one holds, with `pending` rows that nobody holds (the driver
 * claims its rows a page at a time, so a file of more than a page has some). At most `limit`, oldest first.
 */
export async function batchesToHelp(store: Store, limit = 4): Promise<HelpableBatch[]> {
  const daemon = store.daemon;
  if (!daemon || !isSharedStore(store)) return [];
  const now = clock(store);
  return store.sql.all<HelpableBatch>(
    `SELECT b.id, b.kind, b.file_name AS "fileName" FROM batches b
     WHERE b.status = 'running'
       AND EXISTS (SELECT 1 FROM intakes i JOIN file_claims f ON f.work_id = i.id
                   WHERE i.batch_id = b.id AND f.holder <> ? AND NOT ${deadHolder('f.holder', now.sql)})
       AND EXISTS (SELECT 1 FROM rows r WHERE r.batch_no = b.batch_no AND r.state = 'pending' AND r.holder IS NULL)
     ORDER BY b.created_at LIMIT ?`,
    [daemon.name, ...now.params, limit],
  );
}

/** Rule 8 of ./rows.ts: the steps a dead daemon left in `intent` are unknown outcomes. */
async function takeOverSteps(s: Store, batchId: string, line: number, from: string, to: string): Promise<void> {
  await s.sql.run(
    `UPDATE steps SET state = 'unknown', error_code = ?, error_message = ?, updated_at = ?
     WHERE batch_no = ? AND line = ? AND state = 'intent'`,
    [
      TAKEN_OVER,
      `Daemon "${from}" died (its lease passed) with this step's request possibly sent; taken over by "${to}" as an unknown outcome`,
      new Date().toISOString(),
      await s.batchNo(batchId),
      line,
    ],
  );
}

/**
 * Claims the writing of the intake's answer for this daemon: true when it holds it (it was free, already its own, or
 * its writer died); false when another live daemon is writing it (this one leaves it). Without a daemon: true.
 */
export async function claimAnswer(store: Store, intakeId: string): Promise<boolean> {
  const daemon = store.daemon;
  if (!daemon || !isSharedStore(store)) return true;
  daemon.assertLive();
  const now = clock(store);
  const r = await store.sql.run(
    `UPDATE intakes SET answer_holder = ?
     WHERE id = ? AND (answer_holder IS NULL OR answer_holder = ? OR ${deadHolder('answer_holder', now.sql)})`,
    [daemon.name, intakeId, daemon.name, ...now.params],
  );
  return r.changes === 1;
}

/** One daemon as `remessa status` and the metrics show it. */
export interface DaemonView {
  name: string;
  alive: boolean;
  host: string | null;
  pid: number | null;
  startedAt: string;
  lastSeen: string;
  stoppedAt: string | null;
  /** Unfinished rows it holds. */
  rows: number;
  /** Files it holds (claimed, not yet archived). */
  files: number;
  /** Answers it is writing. */
  answers: number;
}

/** Every daemon that ever registered with the store, alive first, and what each holds. */
export async function listDaemons(store: Store): Promise<DaemonView[]> {
  const now = clock(store);
  const rows = await store.sql.all<{
    name: string;
    alive: number;
    host: string | null;
    pid: number | null;
    started_at: string;
    last_seen: string;
    stopped_at: string | null;
    n_rows: number;
    n_files: number;
    n_answers: number;
  }>(
    `SELECT d.name, CASE WHEN d.lease_until_ms >= ${now.sql} THEN 1 ELSE 0 END AS alive, d.host, d.pid, d.started_at,
       d.last_seen, d.stopped_at,
       (SELECT COUNT(*) FROM rows r WHERE r.holder = d.name
          AND r.state IN ('pending', 'in_flight', 'waiting', 'uncertain')) AS n_rows,
       (SELECT COUNT(*) FROM file_claims f WHERE f.holder = d.name) AS n_files,
       (SELECT COUNT(*) FROM intakes i WHERE i.answer_holder = d.name) AS n_answers
     FROM daemons d ORDER BY alive DESC, d.name`,
    now.params,
  );
  return rows.map((r) => ({
    name: r.name,
    alive: Number(r.alive) === 1,
    host: r.host,
    pid: r.pid,
    startedAt: r.started_at,
    lastSeen: r.last_seen,
    stoppedAt: r.stopped_at,
    rows: r.n_rows,
    files: r.n_files,
    answers: r.n_answers,
  }));
}

/**
 * The files of a shared inbox (table `file_claims`), for src/intake/intake.ts. A file is taken by exactly one daemon:
 *
 *   (in the inbox) --claim: insert the claim (content SHA-256, unique; state `taking`, the work id)--> claimed
 *   claimed --rename into the shared work area (<inbox>/.remessa-work/<work id>/)--> `taken`
 *   claimed --the rename finds no file (another daemon moved it)--> claim deleted (`abandon`); the file is left alone
 *   taken --answered and archived--> claim deleted (`done`): the same bytes dropped later are a new taking
 *   a claim whose holder is dead (its lease passed) --> taken over: still `taking` (frozen before its rename): by the
 *     next daemon that finds the file in the inbox; `taken`: by the next daemon's adoption pass, which handles the
 *     work item where it is.
 *   a work item whose id no claim names (its taker froze between claim and rename, and its claim was taken over
 *     meanwhile), older than a lease --> adopted: claimed anew by its content (`adoptable`).
 *   a work folder with no file that no claim names (its taker died between the folder and the rename), older than a
 *     lease --> removed by the adoption pass (`claimed` tells; src/intake/work-area.ts `removeWorkFolderWithoutFile`).
 * The loser of a race never touches the file: its INSERT meets the unique key and it leaves.
 */
export class FileClaims {
  constructor(
    private readonly store: Store,
    private readonly lease: { name: string; leaseMs: number },
  ) {}

  get leaseMs(): number {
    return this.lease.leaseMs;
  }

  /** Claims the bytes `key` for a taking into `workId` (before the rename). False: another daemon has them. */
  async claim(key: string, workId: string, source: string): Promise<boolean> {
    this.store.daemon?.assertLive();
    return this.claimKey(key, workId, 'taking', source, { notOwnDead: true });
  }

  /**
   * Claims the bytes `key` for `workId` in `state`: a new claim, or one whose holder is dead (taken over; with
   * `notOwnDead`, not one this daemon's own previous life left). False: a live daemon holds them.
   */
  private async claimKey(
    key: string,
    workId: string,
    state: 'taking' | 'taken',
    source: string,
    options: { notOwnDead?: boolean } = {},
  ): Promise<boolean> {
    const now = clock(this.store);
    const r = await this.store.sql.get<{ work_id: string }>(
      `INSERT INTO file_claims AS f (claim_key, work_id, holder, state, source, claimed_at)
       VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (claim_key) DO UPDATE SET work_id = excluded.work_id, holder = excluded.holder, state = excluded.state,
         source = excluded.source, claimed_at = excluded.claimed_at
       WHERE ${deadHolder('f.holder', now.sql)}${options.notOwnDead ? ' AND f.holder <> excluded.holder' : ''}
       RETURNING f.work_id`,
      [key, workId, this.lease.name, state, source, new Date().toISOString(), ...now.params],
    );
    return r?.work_id === workId;
  }

  /** The file is in the work area. False when the claim was taken over meanwhile (this daemon froze): leave it. */
  async taken(workId: string): Promise<boolean> {
    const r = await this.store.sql.run(`UPDATE file_claims SET state = 'taken' WHERE work_id = ? AND holder = ?`, [
      workId,
      this.lease.name,
    ]);
    return r.changes === 1;
  }

  /** The rename found nothing (another daemon took the file): the claim goes. */
  async abandon(workId: string): Promise<void> {
    await this.store.sql.run('DELETE FROM file_claims WHERE work_id = ? AND holder = ?', [workId, this.lease.name]);
  }

  /** The file is answered and archived: the claim goes (the same bytes dropped later are a new taking). */
  async done(workId: string): Promise<void> {
    await this.store.sql.run('DELETE FROM file_claims WHERE work_id = ?', [workId]);
  }

  /** Of `workIds`, those a claim names, whatever its holder (a folder of a taking no claim names is left over). */
  async claimed(workIds: readonly string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (let i = 0; i < workIds.length; i += 100) {
      const part = workIds.slice(i, i + 100);
      const rows = await this.store.sql.all<{ work_id: string }>(
        `SELECT work_id FROM file_claims WHERE work_id IN (${part.map(() => '?').join(', ')})`,
        part,
      );
      for (const r of rows) out.add(r.work_id);
    }
    return out;
  }

  /**
   * Of the work items in the shared work area, the ones this daemon should handle now, claimed for it: those whose
   * claim it holds (with `mine`: after a restart), those whose holder is dead (taken over), and orphans older than a
   * lease (claimed anew by `keyOf`). With `mine`, its own claims naming no work item are dropped (a crash between the
   * archive and `done`). `keyOf` answers undefined when the item's file is gone: the items were listed before this
   * reads their claims, and a file whose daemon archived it in between (its claim deleted right after the archive)
   * looks like an orphan here; it is left, never claimed.
   */
  async adoptable<T extends { id: string; takenAt: string }>(
    items: readonly T[],
    options: { mine: boolean; keyOf: (item: T) => Promise<string | undefined>; sourceOf: (item: T) => string },
  ): Promise<T[]> {
    const out: T[] = [];
    const name = this.lease.name;
    const ids = new Set(items.map((i) => i.id));
    if (options.mine) {
      for (const c of await this.store.sql.all<{ work_id: string }>(
        'SELECT work_id FROM file_claims WHERE holder = ?',
        [name],
      )) {
        if (!ids.has(c.work_id)) await this.done(c.work_id);
      }
    }
    // Claims of dead daemons that name no work item: the file was archived before its claim went (a crash between
    // the two), or is still in the inbox (then the next daemon taking it claims it anew): they go.
    {
      const now = clock(this.store);
      for (const c of await this.store.sql.all<{ work_id: string; holder: string }>(
        `SELECT work_id, holder FROM file_claims WHERE ${deadHolder('file_claims.holder', now.sql)}`,
        now.params,
      )) {
        if (ids.has(c.work_id)) continue;
        await this.store.sql.run('DELETE FROM file_claims WHERE work_id = ? AND holder = ?', [c.work_id, c.holder]);
      }
    }
    for (const item of items) {
      const claim = await this.store.sql.get<{ holder: string }>('SELECT holder FROM file_claims WHERE work_id = ?', [
        item.id,
      ]);
      if (claim) {
        if (claim.holder === name) {
          if (options.mine) out.push(item);
          continue;
        }
        const now = clock(this.store);
        const r = await this.store.sql.run(
          `UPDATE file_claims SET holder = ?, claimed_at = ? WHERE work_id = ? AND holder = ?
             AND ${deadHolder('file_claims.holder', now.sql)}`,
          [name, new Date().toISOString(), item.id, claim.holder, ...now.params],
        );
        if (r.changes === 1) out.push(item);
        continue;
      }
      // An orphan: nobody claims this work item. Left alone for a lease (its taker may be between two statements).
      if (Date.now() - Date.parse(item.takenAt) < this.lease.leaseMs) continue;
      const key = await options.keyOf(item);
      if (key === undefined) continue;
      if (await this.claimKey(key, item.id, 'taken', options.sourceOf(item))) out.push(item);
    }
    return out;
  }

  /**
   * Whether a daemon other than this one, alive, holds the file of the batch (it drives the batch: this one leaves
   * it to it, so that one daemon runs a file's approval gate and its rows in line order).
   */
  async heldElsewhere(batchId: string): Promise<boolean> {
    const now = clock(this.store);
    const r = await this.store.sql.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM file_claims f JOIN intakes i ON i.id = f.work_id
       WHERE i.batch_id = ? AND f.holder <> ? AND NOT ${deadHolder('f.holder', now.sql)}`,
      [batchId, this.lease.name, ...now.params],
    );
    return (r?.n ?? 0) > 0;
  }
}

/** Lets the answer's claim go without writing (it was current when re-read under the claim). */
export async function releaseAnswer(store: Store, intakeId: string): Promise<void> {
  const daemon = store.daemon;
  if (!daemon || !isSharedStore(store)) return;
  await store.sql.run('UPDATE intakes SET answer_holder = NULL WHERE id = ? AND answer_holder = ?', [
    intakeId,
    daemon.name,
  ]);
}
