/**
 * The store: batches, rows, steps and natural-key ownership in one SQLite file (better-sqlite3).
 *
 * The row and step state machines, and the rules that must hold, are drawn in ./rows.ts. This file applies them.
 *
 * Batch status: ingesting (rows being stored from the file) -> ready (every row stored, policy applied) -> running
 * -> done (no row left pending, in flight or waiting; `uncertain` rows may remain and are retried by the next run, which
 * moves the batch back to running). Between ready and running a batch may wait for a person's approval
 * (awaiting_approval): that part of the machine, and the rule that no effect step of an unapproved batch ever starts,
 * are drawn in ./approvals.ts. ingesting -> rejected when the file turns out to be broken further down: nothing
 * was sent (sending starts only once every row is stored), and its rows give their natural keys up.
 *
 * Writes: every method here is synchronous and runs in its own transaction when called on its own. The engine,
 * which has many rows in flight, goes through `write(fn)`: the writes queued in the same tick of the event loop are
 * committed together in ONE transaction (each in its own savepoint, so one failing write does not undo the others),
 * which turns N fsyncs into one. `write` resolves only after the commit, so "await store.write(intent)" means the
 * intent is on disk (synchronous=FULL) before the request leaves.
 *
 * Answers: a batch is one taking of a file (src/store/intakes.ts). Every row change that a result file shows (a row
 * reaching succeeded, failed, uncertain or rejected) bumps `batches.changes` of its batch, and of every batch holding a
 * duplicate of it, in the same transaction: an answer written at an older `changes` is stale, and is written again as a
 * new version by the next pass (src/outbox/result.ts), even after a crash between the row change and the rewrite.
 *
 * Durability per commit: the connection is `synchronous = FULL`, and so is every grouped commit that holds at least
 * one write not marked `{ durable: false }`. The engine marks only the storing of a step's answer so: a group made only
 * of answers is committed with `synchronous = NORMAL` (no fsync; WAL keeps it atomic and in order), then FULL is set
 * back. What must hold: an intent is never committed without fsync. Why an answer may be: in WAL mode the next FULL
 * commit syncs the log with every frame before it, and an answer lost in a power cut (never in a process crash: the
 * write reached the OS) leaves its step at `intent`, which the next run treats as an unknown outcome: resent with the
 * same IdempotencyKey, looked up by correlationId, or read again (src/runner/engine.ts). The fsync of every answer was
 * ~40% of the wall time of a bill-payment run (docs/performance.md). SQLite refuses to change the level inside a
 * transaction, hence one level per group, chosen before BEGIN.
 */

import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CellError, Dialect, StepOutput } from '../batches/kind.js';
import { DEFAULT_LOCALE, type Locale, render, t } from '../i18n/index.js';
import type { Cents, KindName } from '../types.js';
import { assertEffectAllowed } from './approvals.js';
import { type OpenDatabaseOptions, openDatabase, type SqliteDatabase, StoreError } from './db.js';
import {
  assertRowTransition,
  assertStepTransition,
  OWNING_ROW_STATES,
  type RowState,
  type StepState,
  UNFINISHED_ROW_STATES,
} from './rows.js';

/** `awaiting_approval`: held for a person's decision; the batch machine with it is drawn in ./approvals.ts. */
export type BatchStatus = 'ingesting' | 'ready' | 'awaiting_approval' | 'running' | 'done' | 'rejected';
/** all-or-nothing: a single invalid row means nothing is sent. send-valid: valid rows are sent, invalid reported. */
export type BatchPolicy = 'all-or-nothing' | 'send-valid';

export interface NewBatch {
  /**
   * The taking of the file it was read from (src/store/intakes.ts): each file dropped is its own batch, even with the
   * bytes of an earlier one. Batches stored before migration 003 have the SHA-256 of their content as id.
   */
  id: string;
  kind: KindName;
  fileName: string;
  dialect: Dialect;
  /** The input header, in file order. */
  header: readonly string[];
}

export interface BatchRecord extends NewBatch {
  status: BatchStatus;
  policy: BatchPolicy | null;
  rowCount: number;
  invalidCount: number;
  lastLine: number;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  counts: RowCounts | null;
  /** Why the file as a whole was rejected (status `rejected`). */
  error: RowError | null;
  /** Bumped with every change of what the batch's result shows (the answer is stale while above the answered one). */
  changes: number;
}

export type RowCounts = Record<RowState, number>;

/** One row as the engine hands it to the store at ingestion. */
export type IngestRow =
  | {
      line: number;
      record: Readonly<Record<string, string>>;
      /** Raw cells in header order (echoed in the result). */
      cells?: readonly string[] | undefined;
      valid: true;
      parsed: unknown;
      naturalKey: string;
      idempotencyKey: string;
      amountCents?: Cents | undefined;
    }
  | {
      line: number;
      record: Readonly<Record<string, string>>;
      cells?: readonly string[] | undefined;
      valid: false;
      errors: readonly CellError[];
      /** The amount its cell holds when it can be read (a rejected amount still counts in the summary). */
      amountCents?: Cents | undefined;
      /** The errors as the person reads them (the engine names the columns as the file does). @defaultValue rendered here */
      message?: string | undefined;
    };

export interface IngestResult {
  /** Rows stored by this call. */
  stored: number;
  /** Rows skipped because they were stored before (ingestion resumed after a crash). */
  skipped: number;
}

export type OutputValue = StepOutput[string];

export interface RowRecord {
  batchId: string;
  line: number;
  naturalKey: string | null;
  idempotencyKey: string | null;
  record: Record<string, string>;
  /** Raw cells in header order, when the reader gave them. */
  cells: string[] | null;
  parsed: unknown;
  state: RowState;
  currentStep: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  outputs: Record<string, OutputValue>;
  amountCents: Cents | null;
  duplicateOf: { batchId: string; line: number } | null;
  updatedAt: string;
}

/** A row as the result file shows it: a duplicate carries its owner's state and outputs. */
export interface ResultRowRecord extends RowRecord {
  owner: {
    state: RowState;
    outputs: Record<string, OutputValue>;
    fileName: string;
    line: number;
    /** Base name of the owner's answers (src/store/intakes.ts), when its batch came through an intake. */
    answerName: string | null;
  } | null;
}

export interface StepRecord {
  step: string;
  state: StepState;
  attempts: number;
  output: StepOutput | null;
  errorCode: string | null;
  errorMessage: string | null;
}

/** Error code and message stored on a row that did not succeed. */
export interface RowError {
  code: string;
  message: string;
}

/** Code of valid rows of an all-or-nothing batch that has invalid rows: nothing was sent. */
export const BATCH_HAS_INVALID_ROWS = 'BATCH_HAS_INVALID_ROWS';
/** Row states whose reaching changes what an answer shows: they mark the answers of the batch stale. */
const ANSWERED_ROW_STATES: readonly RowState[] = ['succeeded', 'failed', 'uncertain', 'rejected'];

/** Code of a row a person settled as failed (`remessa resolve --as failed`). */
export const RESOLVED_AS_FAILED = 'RESOLVED_AS_FAILED';

/** What a person decided about an `uncertain` row they checked with the bank. */
export interface Settlement {
  as: 'succeeded' | 'failed';
  /** Who: a name, as given (`--by`, default the OS user). */
  by: string;
  /** Why: what the person checked (required; kept as given). */
  note: string;
}

/** A settlement by a person, as recorded in `resolutions`. */
export interface Resolution {
  batchId: string;
  line: number;
  from: RowState;
  to: 'succeeded' | 'failed';
  /** The step whose outcome was unknown. */
  step: string | null;
  /** The row's error when it was settled (what made it uncertain). */
  error: RowError | null;
  by: string;
  /** ISO 8601 UTC. */
  at: string;
  note: string;
}

/** Code of a row whose natural key is owned by an earlier row. */
export const DUPLICATE_NATURAL_KEY = 'DUPLICATE_NATURAL_KEY';

export interface StoreOptions extends OpenDatabaseOptions {
  /** Clock, for tests. @defaultValue () => new Date() */
  now?: () => Date;
  /**
   * Take `<file>.lock` (holding this process's pid) so that no second process drives the same rows at the same time
   * (a nightly `run` while the daemon works). A lock whose process is gone is taken over. Readers (`status`) leave it
   * off. @defaultValue false
   */
  exclusive?: boolean;
}

interface PendingWrite {
  fn: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
  /** Needs an fsync at commit (synchronous=FULL). */
  durable: boolean;
}

export interface WriteOptions {
  /**
   * false: the commit may skip its fsync when nothing else in its group needs one (see the top of this file). Only for
   * writes whose loss in a power cut the engine recovers from (a step's answer); never for an intent.
   * @defaultValue true
   */
  durable?: boolean;
}

interface RowSql {
  batch_id: string;
  line: number;
  natural_key: string | null;
  idempotency_key: string | null;
  record: string;
  cells: string | null;
  parsed: string | null;
  state: RowState;
  current_step: string | null;
  error_code: string | null;
  error_message: string | null;
  outputs: string | null;
  amount_cents: number | null;
  duplicate_of_batch: string | null;
  duplicate_of_line: number | null;
  updated_at: string;
}

interface BatchSql {
  id: string;
  kind: KindName;
  file_name: string;
  dialect: string;
  header: string;
  status: BatchStatus;
  policy: BatchPolicy | null;
  row_count: number;
  invalid_count: number;
  last_line: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  counts: string | null;
  error_code: string | null;
  error_message: string | null;
  changes: number;
}

/** Opens the store file (WAL, synchronous=FULL, migrations applied). */
export function openStore(file: string, options: StoreOptions = {}): Store {
  const release = options.exclusive ? takeLock(`${path.resolve(file)}.lock`) : undefined;
  try {
    const store = new Store(openDatabase(file, options), file, options);
    store.onClose = release;
    return store;
  } catch (error) {
    release?.();
    throw error;
  }
}

/** Creates the lock file atomically (O_EXCL); takes over a lock whose process no longer runs. */
function takeLock(lockFile: string): () => void {
  mkdirSync(path.dirname(lockFile), { recursive: true });
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return () => {
        try {
          if (readFileSync(lockFile, 'utf8').trim() === String(process.pid)) unlinkSync(lockFile);
        } catch {
          // already gone
        }
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readFileSync(lockFile, 'utf8'), 10);
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new StoreError(
          'STORE_LOCKED',
          `The store ${lockFile.slice(0, -5)} is in use by process ${holder}: only one remessa may drive it at a time`,
        );
      }
      unlinkSync(lockFile); // left by a process that is gone (or by ourselves)
    }
  }
  throw new StoreError('STORE_LOCKED', `Could not take the lock ${lockFile}`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Store {
  readonly db: SqliteDatabase;
  readonly file: string;
  private readonly now: () => Date;
  private queued: PendingWrite[] = [];
  private flushScheduled = false;
  private closed = false;

  constructor(db: SqliteDatabase, file: string, options: StoreOptions = {}) {
    this.db = db;
    this.file = file;
    this.now = options.now ?? (() => new Date());
  }

  /** Flushes queued writes and closes the database. */
  /** Called once after the database is closed (releases the lock file of an exclusive store). */
  onClose: (() => void) | undefined;

  close(): void {
    if (this.closed) return;
    this.flush();
    this.closed = true;
    this.db.close();
    this.onClose?.();
  }

  get isOpen(): boolean {
    return !this.closed;
  }

  // ---------------------------------------------------------------- group commit

  /**
   * Runs `fn` (synchronous: never await inside) in a transaction shared with the other writes queued in this tick;
   * resolves with its result once that transaction is committed (on disk, synchronous=FULL, unless every write of the
   * group said `durable: false`), rejects with its error (its savepoint is rolled back, the other writes are kept).
   */
  write<T>(fn: () => T, options: WriteOptions = {}): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError('STORE_CLOSED', 'The store is closed'));
    return new Promise<T>((resolve, reject) => {
      this.queued.push({ fn, resolve: resolve as (v: unknown) => void, reject, durable: options.durable !== false });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Commits the queued writes now. */
  flush(): void {
    this.flushScheduled = false;
    const ops = this.queued;
    if (ops.length === 0 || this.closed) return;
    this.queued = [];
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    const durable = ops.some((op) => op.durable);
    try {
      if (!durable) this.db.pragma('synchronous = NORMAL');
      this.db.transaction(() => {
        for (const op of ops) {
          try {
            // A nested better-sqlite3 transaction is a savepoint: a throwing write undoes only itself.
            results.push({ ok: true, value: this.db.transaction(op.fn)() });
          } catch (error) {
            results.push({ ok: false, error });
          }
        }
      })();
    } catch (error) {
      for (const op of ops) op.reject(error);
      return;
    } finally {
      // Every other commit of the connection (direct transactions, the next group) is FULL again.
      if (!durable) this.db.pragma('synchronous = FULL');
    }
    ops.forEach((op, i) => {
      const r = results[i]!;
      if (r.ok) op.resolve(r.value);
      else op.reject(r.error);
    });
  }

  private ts(): string {
    return this.now().toISOString();
  }

  // ---------------------------------------------------------------- batches

  /** Creates the batch, or returns it unchanged when a batch with the same id (same content) exists. */
  createBatch(batch: NewBatch): BatchRecord {
    this.db
      .prepare(
        `INSERT INTO batches (id, kind, file_name, dialect, header, status, created_at)
         VALUES (?, ?, ?, ?, ?, 'ingesting', ?) ON CONFLICT (id) DO NOTHING`,
      )
      .run(
        batch.id,
        batch.kind,
        batch.fileName,
        JSON.stringify(batch.dialect),
        JSON.stringify(batch.header),
        this.ts(),
      );
    return this.getBatch(batch.id)!;
  }

  getBatch(id: string): BatchRecord | undefined {
    const row = this.db.prepare('SELECT * FROM batches WHERE id = ?').get(id) as BatchSql | undefined;
    return row && toBatch(row);
  }

  /** Every batch, newest first. */
  listBatches(): BatchRecord[] {
    return (this.db.prepare('SELECT * FROM batches ORDER BY created_at DESC, id').all() as BatchSql[]).map(toBatch);
  }

  /**
   * Batches with work left, oldest first: not finished (an `ingesting` one needs its file again), or with rows
   * pending, in flight or uncertain.
   */
  unfinishedBatches(): BatchRecord[] {
    return (
      this.db
        .prepare(
          `SELECT * FROM batches b WHERE b.status NOT IN ('done', 'rejected')
             OR EXISTS (SELECT 1 FROM rows r WHERE r.batch_id = b.id
                        AND r.state IN ('pending', 'in_flight', 'waiting', 'uncertain'))
           ORDER BY b.created_at, b.id`,
        )
        .all() as BatchSql[]
    ).map(toBatch);
  }

  /** The batch; STORE_NO_BATCH when there is none. */
  private requireBatch(batchId: string): BatchRecord {
    const batch = this.getBatch(batchId);
    if (!batch) throw new StoreError('STORE_NO_BATCH', `No batch ${batchId}`);
    return batch;
  }

  /** The batch while its rows are being stored; STORE_BATCH_INGESTED, saying `why` that matters, once they are. */
  private ingestingBatch(batchId: string, why: string): BatchRecord {
    const batch = this.requireBatch(batchId);
    if (batch.status !== 'ingesting') {
      throw new StoreError('STORE_BATCH_INGESTED', `Batch ${batchId} is ${batch.status}: ${why}`);
    }
    return batch;
  }

  /** Every still-pending row of the batch becomes `rejected` with `error`, which gives its natural key up. */
  private rejectPendingRows(batchId: string, error: RowError, now: string): void {
    this.db
      .prepare(
        `UPDATE rows SET state = 'rejected', error_code = ?, error_message = ?, updated_at = ?
         WHERE batch_id = ? AND state = 'pending'`,
      )
      .run(error.code, error.message, now, batchId);
  }

  /**
   * Stores a chunk of rows in one transaction. Lines at or below the batch's last stored line are skipped (the
   * ingestion of this batch was interrupted and is being redone from the file). A valid row whose natural key is
   * owned by another row becomes `duplicate`; otherwise it takes the key (a failed or rejected owner gives it up).
   */
  ingest(batchId: string, rows: readonly IngestRow[], locale: Locale = DEFAULT_LOCALE): IngestResult {
    return this.db.transaction(() => {
      const batch = this.ingestingBatch(batchId, 'its rows are already stored');
      const insert = this.db.prepare(
        `INSERT INTO rows (batch_id, line, natural_key, idempotency_key, record, cells, parsed, state, error_code,
           error_message, amount_cents, duplicate_of_batch, duplicate_of_line, updated_at)
         VALUES (@batchId, @line, @naturalKey, @idempotencyKey, @record, @cells, @parsed, @state, @errorCode,
           @errorMessage, @amountCents, @dupBatch, @dupLine, @now)`,
      );
      const owner = this.db.prepare(
        `SELECT k.batch_id, k.line, r.state, b.file_name,
           (SELECT i.answer_name FROM intakes i WHERE i.batch_id = k.batch_id LIMIT 1) AS answer_name
         FROM natural_keys k
           LEFT JOIN rows r ON r.batch_id = k.batch_id AND r.line = k.line
           LEFT JOIN batches b ON b.id = k.batch_id
         WHERE k.kind = ? AND k.natural_key = ?`,
      );
      const claim = this.db.prepare(
        `INSERT INTO natural_keys (kind, natural_key, batch_id, line) VALUES (?, ?, ?, ?)
         ON CONFLICT (kind, natural_key) DO UPDATE SET batch_id = excluded.batch_id, line = excluded.line`,
      );
      const now = this.ts();
      let stored = 0;
      let skipped = 0;
      let invalid = 0;
      let lastLine = batch.lastLine;
      for (const row of rows) {
        if (row.line <= lastLine) {
          skipped++;
          continue;
        }
        lastLine = row.line;
        stored++;
        if (!row.valid) {
          invalid++;
          const err = describeCellErrors(row.errors, locale);
          if (row.message !== undefined) err.message = row.message;
          insert.run({
            batchId,
            line: row.line,
            naturalKey: null,
            idempotencyKey: null,
            record: JSON.stringify(row.record),
            cells: row.cells ? JSON.stringify(row.cells) : null,
            parsed: null,
            state: 'rejected',
            errorCode: err.code,
            errorMessage: err.message,
            amountCents: row.amountCents ?? null,
            dupBatch: null,
            dupLine: null,
            now,
          });
          continue;
        }
        const own = owner.get(batch.kind, row.naturalKey) as
          | {
              batch_id: string;
              line: number;
              state: RowState | null;
              file_name: string | null;
              answer_name: string | null;
            }
          | undefined;
        const isDuplicate = own?.state != null && OWNING_ROW_STATES.includes(own.state);
        insert.run({
          batchId,
          line: row.line,
          naturalKey: row.naturalKey,
          idempotencyKey: row.idempotencyKey,
          record: JSON.stringify(row.record),
          cells: row.cells ? JSON.stringify(row.cells) : null,
          parsed: safeJson(row.parsed),
          state: isDuplicate ? 'duplicate' : 'pending',
          errorCode: isDuplicate ? DUPLICATE_NATURAL_KEY : null,
          errorMessage: isDuplicate
            ? own!.batch_id === batchId
              ? t(locale, 'DUPLICATE_NATURAL_KEY', { kind: batch.kind, line: own!.line })
              : t(locale, 'DUPLICATE_NATURAL_KEY.otherFile', {
                  kind: batch.kind,
                  line: own!.line,
                  file: own!.file_name ?? own!.batch_id,
                  answered: own!.answer_name
                    ? t(locale, 'DUPLICATE_NATURAL_KEY.answeredIn', { answer: `${own!.answer_name}.result.csv` })
                    : '',
                })
            : null,
          amountCents: row.amountCents ?? null,
          dupBatch: isDuplicate ? own!.batch_id : null,
          dupLine: isDuplicate ? own!.line : null,
          now,
        });
        if (!isDuplicate) claim.run(batch.kind, row.naturalKey, batchId, row.line);
      }
      this.db
        .prepare(
          `UPDATE batches SET row_count = row_count + ?, invalid_count = invalid_count + ?, last_line = ? WHERE id = ?`,
        )
        .run(stored, invalid, lastLine, batchId);
      return { stored, skipped };
    })();
  }

  /**
   * Ends ingestion: applies the policy (all-or-nothing with any invalid row: every pending row becomes `rejected`
   * with BATCH_HAS_INVALID_ROWS, which also gives its natural key up) and marks the batch ready.
   */
  finishIngest(batchId: string, policy: BatchPolicy, locale: Locale = DEFAULT_LOCALE): BatchRecord {
    return this.db.transaction(() => {
      const batch = this.requireBatch(batchId);
      if (batch.status !== 'ingesting') return batch;
      if (policy === 'all-or-nothing' && batch.invalidCount > 0) {
        this.rejectPendingRows(
          batchId,
          {
            code: BATCH_HAS_INVALID_ROWS,
            message: t(locale, 'BATCH_HAS_INVALID_ROWS', { kind: batch.kind, count: batch.invalidCount }),
          },
          this.ts(),
        );
      }
      this.db.prepare(`UPDATE batches SET status = 'ready', policy = ? WHERE id = ?`).run(policy, batchId);
      return this.getBatch(batchId)!;
    })();
  }

  /**
   * The file turned out to be broken while its rows were being stored (nothing was sent yet): the batch is rejected
   * as a whole, and its stored rows become `rejected` so that they give their natural keys up.
   */
  rejectBatch(batchId: string, error: RowError): BatchRecord {
    return this.db.transaction(() => {
      this.ingestingBatch(batchId, 'it can no longer be rejected');
      const now = this.ts();
      this.rejectPendingRows(batchId, error, now);
      this.db
        .prepare(
          `UPDATE batches SET status = 'rejected', error_code = ?, error_message = ?, finished_at = ? WHERE id = ?`,
        )
        .run(error.code, error.message, now, batchId);
      return this.getBatch(batchId)!;
    })();
  }

  /** Marks the batch running (from ready, or from done when uncertain rows are retried). */
  markBatchRunning(batchId: string): void {
    this.db
      .prepare(
        `UPDATE batches SET status = 'running', started_at = COALESCE(started_at, ?), finished_at = NULL
         WHERE id = ? AND status IN ('ready', 'running', 'done')`,
      )
      .run(this.ts(), batchId);
  }

  /** Marks the batch done and records its counts. Throws if a row is still pending, in flight or waiting. */
  markBatchDone(batchId: string): BatchRecord {
    return this.db.transaction(() => {
      const counts = this.countRows(batchId);
      if (counts.pending + counts.in_flight + counts.waiting > 0) {
        throw new StoreError(
          'STORE_BATCH_NOT_FINISHED',
          `Batch ${batchId} still has ${counts.pending} pending, ${counts.in_flight} in-flight and ${counts.waiting} waiting rows`,
        );
      }
      this.db
        .prepare(`UPDATE batches SET status = 'done', finished_at = ?, counts = ? WHERE id = ?`)
        .run(this.ts(), JSON.stringify(counts), batchId);
      return this.getBatch(batchId)!;
    })();
  }

  /** Live counts of the batch's rows by state. */
  countRows(batchId: string): RowCounts {
    const counts: RowCounts = {
      pending: 0,
      in_flight: 0,
      succeeded: 0,
      failed: 0,
      rejected: 0,
      duplicate: 0,
      uncertain: 0,
      waiting: 0,
    };
    for (const r of this.db
      .prepare('SELECT state, COUNT(*) AS n FROM rows WHERE batch_id = ? GROUP BY state')
      .all(batchId) as Array<{ state: RowState; n: number }>) {
      counts[r.state] = r.n;
    }
    return counts;
  }

  /** Sum of `amount_cents` by row state (rows without an amount are left out). */
  sumAmounts(batchId: string): Partial<Record<RowState, Cents>> {
    const out: Partial<Record<RowState, Cents>> = {};
    for (const r of this.db
      .prepare(
        `SELECT state, SUM(amount_cents) AS total FROM rows
         WHERE batch_id = ? AND amount_cents IS NOT NULL GROUP BY state`,
      )
      .all(batchId) as Array<{ state: RowState; total: number }>) {
      out[r.state] = r.total;
    }
    return out;
  }

  // ---------------------------------------------------------------- rows

  getRow(batchId: string, line: number): RowRecord | undefined {
    const row = this.db.prepare('SELECT * FROM rows WHERE batch_id = ? AND line = ?').get(batchId, line) as
      | RowSql
      | undefined;
    return row && toRow(row);
  }

  /**
   * Up to `limit` rows after `afterLine`, in line order, optionally only in the given states. Keyset paging: callers
   * stream a batch of any size with bounded memory, and no statement stays open across an await.
   */
  rowsAfter(batchId: string, afterLine: number, limit: number, states: readonly RowState[] = []): RowRecord[] {
    const filter = states.length > 0 ? `AND state IN (${states.map(() => '?').join(', ')})` : '';
    return (
      this.db
        .prepare(`SELECT * FROM rows WHERE batch_id = ? AND line > ? ${filter} ORDER BY line LIMIT ?`)
        .all(batchId, afterLine, ...states, limit) as RowSql[]
    ).map(toRow);
  }

  /** Like rowsAfter, for the result file: duplicates come with their owner's state and outputs. */
  resultRowsAfter(batchId: string, afterLine: number, limit: number): ResultRowRecord[] {
    const rows = this.db
      .prepare(
        `SELECT r.*, o.state AS owner_state, o.outputs AS owner_outputs, ob.file_name AS owner_file,
           (SELECT i.answer_name FROM intakes i WHERE i.batch_id = r.duplicate_of_batch LIMIT 1) AS owner_answer
         FROM rows r
           LEFT JOIN rows o ON o.batch_id = r.duplicate_of_batch AND o.line = r.duplicate_of_line
           LEFT JOIN batches ob ON ob.id = r.duplicate_of_batch
         WHERE r.batch_id = ? AND r.line > ? ORDER BY r.line LIMIT ?`,
      )
      .all(batchId, afterLine, limit) as Array<
      RowSql & {
        owner_state: RowState | null;
        owner_outputs: string | null;
        owner_file: string | null;
        owner_answer: string | null;
      }
    >;
    return rows.map((r) => ({
      ...toRow(r),
      owner:
        r.owner_state === null
          ? null
          : {
              state: r.owner_state,
              outputs: parseJson(r.owner_outputs) ?? {},
              fileName: r.owner_file ?? '',
              line: r.duplicate_of_line!,
              answerName: r.owner_answer,
            },
    }));
  }

  /** Rows left uncertain, across batches (for `remessa status`), oldest first. */
  uncertainRows(limit = 100): Array<RowRecord & { fileName: string; kind: KindName }> {
    return (
      this.db
        .prepare(
          `SELECT r.*, b.file_name, b.kind FROM rows r JOIN batches b ON b.id = r.batch_id
           WHERE r.state = 'uncertain' ORDER BY r.updated_at, r.batch_id, r.line LIMIT ?`,
        )
        .all(limit) as Array<RowSql & { file_name: string; kind: KindName }>
    ).map((r) => ({ ...toRow(r), fileName: r.file_name, kind: r.kind }));
  }

  /** Number of rows that still have work (pending, in flight, uncertain) in the batch. */
  countUnfinished(batchId: string): number {
    const r = this.db
      .prepare(
        `SELECT COUNT(*) AS n FROM rows WHERE batch_id = ? AND state IN (${UNFINISHED_ROW_STATES.map(() => '?').join(', ')})`,
      )
      .get(batchId, ...UNFINISHED_ROW_STATES) as { n: number };
    return r.n;
  }

  // ---------------------------------------------------------------- steps and transitions

  /** The row's step records, by step name. */
  getSteps(batchId: string, line: number): Map<string, StepRecord> {
    const out = new Map<string, StepRecord>();
    for (const s of this.db.prepare('SELECT * FROM steps WHERE batch_id = ? AND line = ?').all(batchId, line) as Array<{
      step: string;
      state: StepState;
      attempts: number;
      output: string | null;
      error_code: string | null;
      error_message: string | null;
    }>) {
      out.set(s.step, {
        step: s.step,
        state: s.state,
        attempts: s.attempts,
        output: parseJson(s.output),
        errorCode: s.error_code,
        errorMessage: s.error_message,
      });
    }
    return out;
  }

  /** Moves the row to `to` (checked against the machine in rows.ts). */
  transitionRow(
    batchId: string,
    line: number,
    to: RowState,
    patch: { currentStep?: string | null; error?: RowError | null; outputs?: Record<string, OutputValue> } = {},
  ): void {
    const cur = this.db.prepare('SELECT state, outputs FROM rows WHERE batch_id = ? AND line = ?').get(batchId, line) as
      | { state: RowState; outputs: string | null }
      | undefined;
    if (!cur) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
    assertRowTransition(cur.state, to, `row (line ${line})`);
    const sets = ['state = @to', 'updated_at = @now'];
    const params: Record<string, unknown> = { to, now: this.ts(), batchId, line };
    if (patch.currentStep !== undefined) {
      sets.push('current_step = @currentStep');
      params.currentStep = patch.currentStep;
    }
    if (patch.error !== undefined) {
      sets.push('error_code = @errorCode', 'error_message = @errorMessage');
      params.errorCode = patch.error?.code ?? null;
      params.errorMessage = patch.error?.message ?? null;
    }
    if (patch.outputs !== undefined) {
      sets.push('outputs = @outputs');
      params.outputs = JSON.stringify({ ...(parseJson(cur.outputs) ?? {}), ...patch.outputs });
    }
    this.db.prepare(`UPDATE rows SET ${sets.join(', ')} WHERE batch_id = @batchId AND line = @line`).run(params);
    if (ANSWERED_ROW_STATES.includes(to)) this.markAnswersStale(batchId, line);
  }

  /**
   * The durable "answer is stale" mark (src/store/intakes.ts), in the same transaction as the row's change: bumps the
   * `changes` of the row's batch and of every batch holding a duplicate of the row (their result lines show it).
   */
  private markAnswersStale(batchId: string, line: number): void {
    this.db.prepare('UPDATE batches SET changes = changes + 1 WHERE id = ?').run(batchId);
    this.db
      .prepare(
        `UPDATE batches SET changes = changes + 1 WHERE id IN (
           SELECT DISTINCT batch_id FROM rows WHERE duplicate_of_batch = ? AND duplicate_of_line = ? AND batch_id <> ?)`,
      )
      .run(batchId, line, batchId);
  }

  /** Moves the step to `to` (checked against the step machine in rows.ts); `attempt` adds one to its attempts. */
  transitionStep(
    batchId: string,
    line: number,
    step: string,
    to: StepState,
    patch: { attempt?: boolean; output?: StepOutput | null; error?: RowError | null } = {},
  ): void {
    const cur = this.db
      .prepare('SELECT state FROM steps WHERE batch_id = ? AND line = ? AND step = ?')
      .get(batchId, line, step) as { state: StepState } | undefined;
    assertStepTransition(cur?.state ?? null, to, `step ${step} (line ${line})`);
    this.db
      .prepare(
        `INSERT INTO steps (batch_id, line, step, state, attempts, output, error_code, error_message, updated_at)
         VALUES (@batchId, @line, @step, @to, @attempts, @output, @errorCode, @errorMessage, @now)
         ON CONFLICT (batch_id, line, step) DO UPDATE SET
           state = excluded.state,
           attempts = steps.attempts + excluded.attempts,
           output = COALESCE(excluded.output, steps.output),
           error_code = excluded.error_code,
           error_message = excluded.error_message,
           updated_at = excluded.updated_at`,
      )
      .run({
        batchId,
        line,
        step,
        to,
        attempts: patch.attempt ? 1 : 0,
        output: patch.output ? JSON.stringify(patch.output) : null,
        errorCode: patch.error?.code ?? null,
        errorMessage: patch.error?.message ?? null,
        now: this.ts(),
      });
  }

  /** Rule 1 of rows.ts: the intent of the step, committed before its request leaves. Row -> in_flight. */
  recordIntent(batchId: string, line: number, step: string): void {
    assertEffectAllowed(this.db, batchId); // rule 1 of ./approvals.ts, in the intent's own transaction
    this.transitionStep(batchId, line, step, 'intent', { attempt: true });
    this.transitionRow(batchId, line, 'in_flight', { currentStep: step, error: null });
  }

  /** The step answered: its output is stored and merged into the row's outputs; the row succeeds after its last step. */
  recordStepDone(batchId: string, line: number, step: string, output: StepOutput, last: boolean): void {
    this.transitionStep(batchId, line, step, 'done', { output });
    const state = this.getRow(batchId, line)?.state;
    if (state !== 'in_flight') this.transitionRow(batchId, line, 'in_flight');
    this.transitionRow(batchId, line, last ? 'succeeded' : 'in_flight', {
      outputs: output,
      currentStep: last ? null : step,
      error: null,
    });
  }

  /** The step's outcome is unknown (timeout, dropped connection, 5xx): it may have acted at the bank. */
  recordStepUnknown(batchId: string, line: number, step: string, error: RowError): void {
    this.transitionStep(batchId, line, step, 'unknown', { error });
  }

  /** The attempt certainly did not reach the bank, or the bank refused it unprocessed (429): sending again is safe. */
  recordStepNotSent(batchId: string, line: number, step: string, error: RowError): void {
    this.transitionStep(batchId, line, step, 'not_sent', { error });
  }

  /** The bank said no (or a check said no): the step and the row failed. */
  recordRowFailed(batchId: string, line: number, step: string | null, error: RowError): void {
    if (step !== null) this.transitionStep(batchId, line, step, 'failed', { error });
    this.transitionRow(batchId, line, 'failed', { error, currentStep: step });
  }

  /** The row could not be finished in this run; it is retried by the next one. */
  recordRowUncertain(batchId: string, line: number, step: string | null, error: RowError): void {
    this.transitionRow(batchId, line, 'uncertain', { error, currentStep: step });
  }

  /**
   * The bank could not be reached and certainly nothing of the row was sent: it waits, and is sent when the bank is
   * back (src/store/rows.ts).
   */
  recordRowWaiting(batchId: string, line: number, step: string | null, error: RowError): void {
    this.transitionRow(batchId, line, 'waiting', { error, currentStep: step });
  }

  /** Stopped between steps (nothing unknown): back to pending, resumed by the next run. */
  parkRow(batchId: string, line: number): void {
    const state = this.getRow(batchId, line)?.state;
    if (state === 'in_flight') this.transitionRow(batchId, line, 'pending');
  }

  // ---------------------------------------------------------------- people: status and resolve

  /**
   * The batches a person's reference names, newest first: the full id; a unique prefix of it or the 8-character tag
   * at its end (`20261123T134049Z-5f3c9e21`: the part after the take time, as answer names show it), 4 characters at
   * least; or the file name as dropped, or a path ending in it (several batches when files of that name were dropped
   * more than once).
   */
  findBatches(ref: string): BatchRecord[] {
    const text = ref.trim();
    const exact = this.getBatch(text);
    if (exact) return [exact];
    const name = text.split(/[\\/]/).pop() ?? text;
    const byName = (
      this.db.prepare('SELECT * FROM batches WHERE file_name = ? ORDER BY created_at DESC, id').all(name) as BatchSql[]
    ).map(toBatch);
    if (byName.length > 0) return byName;
    if (!/^[0-9A-Za-z~-]{4,}$/.test(text)) return [];
    return (
      this.db
        .prepare(
          `SELECT * FROM batches WHERE lower(substr(id, 1, ?)) = lower(?) OR instr(lower(id), lower(?)) > 0
           ORDER BY created_at DESC, id`,
        )
        .all(text.length, text, `-${text}`) as BatchSql[]
    ).map(toBatch);
  }

  /**
   * Rows of the batch that reached an end state or `uncertain` at or after `since` (ISO 8601 UTC, as the store
   * writes it): what a running batch has finished since it (re)started, for its rate.
   */
  countFinishedSince(batchId: string, since: string): number {
    const r = this.db
      .prepare(
        `SELECT COUNT(*) AS n FROM rows WHERE batch_id = ? AND updated_at >= ?
           AND state IN ('succeeded', 'failed', 'uncertain')`,
      )
      .get(batchId, since) as { n: number };
    return r.n;
  }

  /**
   * A person settles an `uncertain` row (src/store/rows.ts, "settled by a person"): the row becomes `succeeded` or
   * `failed`, and who, when and why are recorded in `resolutions`, in one transaction. Throws ROW_NOT_UNCERTAIN for a
   * row in any other state (nothing changes), STORE_NO_ROW for a line the batch does not have. A failed row gives its
   * natural key up (rule 4): the person said the bank did not do it, so the same row may be sent again later.
   */
  resolveRow(batchId: string, line: number, settlement: Settlement): Resolution {
    return this.db.transaction(() => {
      const batch = this.requireBatch(batchId);
      const row = this.getRow(batchId, line);
      if (!row) {
        throw new StoreError(
          'STORE_NO_ROW',
          `${batch.fileName} (batch ${batchId.slice(0, 12)}) has no data line ${line}`,
        );
      }
      if (row.state !== 'uncertain') {
        const settled = this.getResolution(batchId, line);
        throw new StoreError(
          'ROW_NOT_UNCERTAIN',
          `Expected an uncertain row, got line ${line} of ${batch.fileName} ${row.state}` +
            (settled ? ` (settled by ${settled.by} at ${settled.at})` : '') +
            ': only a row whose outcome is unknown is settled by a person; nothing was changed',
        );
      }
      const at = this.ts();
      const resolution: Resolution = {
        batchId,
        line,
        from: row.state,
        to: settlement.as,
        step: row.currentStep,
        error: row.errorCode === null ? null : { code: row.errorCode, message: row.errorMessage ?? '' },
        by: settlement.by,
        at,
        note: settlement.note,
      };
      this.db
        .prepare(
          `INSERT INTO resolutions (batch_id, line, from_state, to_state, step, error_code, error_message, resolved_by,
             resolved_at, note)
           VALUES (@batchId, @line, @from, @to, @step, @errorCode, @errorMessage, @by, @at, @note)`,
        )
        .run({
          ...resolution,
          errorCode: resolution.error?.code ?? null,
          errorMessage: resolution.error?.message ?? null,
        });
      this.transitionRow(batchId, line, settlement.as, {
        error:
          settlement.as === 'failed'
            ? {
                code: RESOLVED_AS_FAILED,
                message: `Settled as failed by ${settlement.by} at ${at}: ${settlement.note}`,
              }
            : null,
      });
      // The counts recorded when the batch last finished are no longer true.
      if (batch.status === 'done') {
        this.db
          .prepare('UPDATE batches SET counts = ? WHERE id = ?')
          .run(JSON.stringify(this.countRows(batchId)), batchId);
      }
      return resolution;
    })();
  }

  /** How a person settled the row, if one did. */
  getResolution(batchId: string, line: number): Resolution | undefined {
    const r = this.db.prepare('SELECT * FROM resolutions WHERE batch_id = ? AND line = ?').get(batchId, line) as
      | ResolutionSql
      | undefined;
    return r && toResolution(r);
  }

  /** Every settlement by a person, of one batch or all, oldest first. */
  resolutions(batchId?: string): Resolution[] {
    const rows = (
      batchId === undefined
        ? this.db.prepare('SELECT * FROM resolutions ORDER BY resolved_at, batch_id, line').all()
        : this.db.prepare('SELECT * FROM resolutions WHERE batch_id = ? ORDER BY line').all(batchId)
    ) as ResolutionSql[];
    return rows.map(toResolution);
  }
}

interface ResolutionSql {
  batch_id: string;
  line: number;
  from_state: RowState;
  to_state: 'succeeded' | 'failed';
  step: string | null;
  error_code: string | null;
  error_message: string | null;
  resolved_by: string;
  resolved_at: string;
  note: string;
}

function toResolution(r: ResolutionSql): Resolution {
  return {
    batchId: r.batch_id,
    line: r.line,
    from: r.from_state,
    to: r.to_state,
    step: r.step,
    error: r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' },
    by: r.resolved_by,
    at: r.resolved_at,
    note: r.note,
  };
}

function toBatch(r: BatchSql): BatchRecord {
  return {
    id: r.id,
    kind: r.kind,
    fileName: r.file_name,
    dialect: JSON.parse(r.dialect) as Dialect,
    header: JSON.parse(r.header) as string[],
    status: r.status,
    policy: r.policy,
    rowCount: r.row_count,
    invalidCount: r.invalid_count,
    lastLine: r.last_line,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    counts: parseJson(r.counts),
    error: r.error_code === null ? null : { code: r.error_code, message: r.error_message ?? '' },
    changes: r.changes,
  };
}

function toRow(r: RowSql): RowRecord {
  return {
    batchId: r.batch_id,
    line: r.line,
    naturalKey: r.natural_key,
    idempotencyKey: r.idempotency_key,
    record: JSON.parse(r.record) as Record<string, string>,
    cells: parseJson(r.cells),
    parsed: parseJson(r.parsed),
    state: r.state,
    currentStep: r.current_step,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    outputs: parseJson(r.outputs) ?? {},
    amountCents: r.amount_cents,
    duplicateOf:
      r.duplicate_of_batch === null ? null : { batchId: r.duplicate_of_batch, line: r.duplicate_of_line ?? 0 },
    updatedAt: r.updated_at,
  };
}

function parseJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/** JSON of a parsed row; values JSON cannot hold (bigint) become strings, so storing never throws. */
function safeJson(value: unknown): string | null {
  if (value === undefined) return null;
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/** One code and one message for a row's cell errors: the first code; every error, with its column, in the message. */
export function describeCellErrors(errors: readonly CellError[], locale: Locale = DEFAULT_LOCALE): RowError {
  if (errors.length === 0) return { code: 'ROW_INVALID', message: t(locale, 'ROW_INVALID.invalid') };
  return {
    code: errors[0]!.code,
    message: errors
      .map((e) => {
        const text = render(locale, e.message);
        return e.column ? `${t(locale, 'WHERE.columnAbsent', { column: e.column })}: ${text}` : text;
      })
      .join('; '),
  };
}
