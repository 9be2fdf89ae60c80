/**
 * The store: batches, rows, steps and natural-key ownership, in SQL through a driver (./sql.ts): SQLite
 * (./sqlite-driver.ts, the embedded default) or PostgreSQL. The logic is written once, in the SQL both engines speak,
 * so every rule below and in ./rows.ts holds word for word on both.
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
 * Writes: every method is asynchronous, and one that writes runs in its own transaction when called on the store
 * itself (a read and the write that depends on it are never split by another caller's statement). Inside a
 * transaction (`transaction(fn)`, `write(fn)`), fn is given a view of the store bound to that transaction, and calls
 * the view's methods: they run inside it (a method that is a transaction of its own becomes a savepoint).
 * The rule of every transaction: its fn awaits nothing but the calls of its own view (no request, no file, no timer,
 * no statement on the store itself). The transaction holds the connection (SQLite's one writer, whose write lock is
 * taken at BEGIN) until fn returns; the driver queues every other call behind it (./sqlite-driver.ts), so an await on
 * anything else would stall every writer, and a statement on the store itself would wait for the transaction that
 * waits for it.
 *
 * Reads a write depends on, per engine: SQLite runs one writer at a time (its lock taken at BEGIN), so a read in a
 * transaction sees every write before it and none comes between. PostgreSQL runs transactions side by side (READ
 * COMMITTED): each such read locks what it read (`forUpdate`: a row's state before it moves, which also guards its
 * steps; the batch before its status or counts are written; a thing before its change; `resolveRow`'s row), and
 * `ingest` locks `natural_keys` (SHARE ROW EXCLUSIVE: ingestions take turns, reads go on) so that two files bringing
 * the same natural key at once give it one owner and one duplicate, and locks the owners' rows it makes duplicates of
 * (FOR SHARE, `lockOwners`) so that an owner's move and a duplicate of it stored at once do not miss each other. The
 * approvals' per-day sums lock their table (./approvals.ts, `immediate`). The rules of ./rows.ts hold the same on
 * both; test/store.test.ts ("concurrent transactions") runs each race on both engines. On PostgreSQL the hot path's
 * writes (an intent, a step's answer) may instead make what this process last read of the row its write's
 * condition (`RowHints`: compare and set), a round trip fewer each; the locked read runs when the condition fails.
 * Within a group commit those writes (the intents, the steps' answers) are one statement for the group's rows of each
 * kind (./group-batch.ts: each row still moves only on its own condition, and takes its locked path when it did not).
 *
 * Several daemons on one PostgreSQL store (./leases.ts, rule 8 of ./rows.ts): a daemon's lease is bound to its store
 * (`bindDaemon`); from then on `lockRow` refuses a row another daemon holds, and `recordIntent` a row this daemon does
 * not hold or when its lease is lost (STORE_ROW_NOT_HELD, STORE_LEASE_LOST). The `changes` bumps of a transaction are
 * applied at its end in batch id order (`AtCommit`): one lock order for every daemon (rows, then batches), no deadlock;
 * the PostgreSQL driver runs a deadlock's victim again whole all the same.
 *
 * The group commit: the engine, which has many rows in flight, goes through `write(fn)`: the writes queued in the same
 * tick of the event loop are committed together in ONE transaction, which turns N fsyncs into one; one failing write
 * undoes only itself (the group is then run again with a savepoint per write: `flush`). `write` resolves only after
 * the COMMIT has returned, so "await store.write((s) => s.recordIntent(...))" means the intent is on disk (SQLite
 * synchronous=FULL; PostgreSQL synchronous_commit=on) before the request leaves: this is how rule 1 of ./rows.ts
 * holds on both engines.
 * The commit window: with a fast disk, the rows in flight reach their writes one at a time, a tick apart, and each
 * would be a commit (an fsync) of its own; a commit costs CPU (the kernel's, SQLite's or PostgreSQL's round trips)
 * whatever it holds. A write marked `gather` (the engine marks a row's write so while other rows of it are in flight
 * and have not queued theirs) waits up to `commitWindowMs` (20 ms by default, config `store.commitWindowMs`, 0 = off)
 * for them; the group is committed at the end of the tick in which the last of them queues its write
 * (`flushGathered`), when a write not marked `gather` comes, or when the window ends. The request still leaves only
 * after its intent's COMMIT returned. The engine writes an intent before its row waits for a connection of the queue
 * (src/runner/engine.ts), so a write waiting out the window holds no connection: the other rows' requests keep them
 * busy meanwhile, and a window of 20 ms costs no throughput (docs/performance.md (d), eleventh pass).
 *
 * Dead row versions (PostgreSQL): the engine tells the store of each row whose drive ended (`rowEnded`, synchronous);
 * each `vacuumEveryRows` of them the store vacuums `rows` and `steps` on a connection of its own, never awaited by a
 * write, and cancels a vacuum under way when it closes (./vacuum.ts has the rules).
 *
 * Answers: a batch is one taking of a file (src/store/intakes.ts). Every row change that a result file shows (a row
 * reaching succeeded, failed, uncertain or rejected) bumps `batches.changes` of its batch, and of every batch holding a
 * duplicate of it, in the same transaction: an answer written at an older `changes` is stale, and is written again as a
 * new version by the next pass (src/outbox/result.ts), even after a crash between the row change and the rewrite.
 *
 * Durability per commit: every commit is durable (SQLite `synchronous = FULL`, PostgreSQL synchronous_commit=on), and
 * so is every grouped commit that holds at least one write not marked `{ durable: false }`. The engine marks only the
 * storing of a step's answer so: a group made only of answers is committed with `{ durable: false }` (SQLite
 * `synchronous = NORMAL` for that commit: no fsync, WAL keeps it atomic and in order; PostgreSQL
 * `synchronous_commit = off` for it), and every other commit stays durable. What must hold: an intent is never committed without fsync. Why an answer may be: in WAL mode the next FULL
 * commit syncs the log with every frame before it, and an answer lost in a power cut (never in a process crash: the
 * write reached the OS) leaves its step at `intent`, which the next run treats as an unknown outcome: resent with the
 * same IdempotencyKey, looked up by correlationId, or read again (src/runner/engine.ts). The fsync of every answer was
 * ~40% of the wall time of a bill-payment run (docs/performance.md). SQLite refuses to change the level inside a
 * transaction, hence one level per group, chosen before BEGIN. (On PostgreSQL the same holds: an asynchronous commit
 * lost in a crash of the server leaves the step at `intent`, handled the same way.)
 * A read step's answer is not committed alone: it rides in the row's next write, its next intent above all (rule 9 of
 * ./rows.ts; src/runner/engine.ts `writeRow`), so a bill payment is two commits, the intent's (durable) and the
 * payment's answer.
 * A lost COMMIT (PostgreSQL: the connection dies after COMMIT was sent, STORE_CONNECTION_LOST) rejects the `write` or
 * the method although the transaction may have committed: callers never read that rejection as "nothing was
 * written". For an intent it is safe as it stands: the request is not sent by this call, and an intent that did get
 * committed is an unknown outcome, settled by the rules of ./rows.ts after a restart (same IdempotencyKey).
 *
 * Row storage (migration 012; docs/performance.md (d)): a row's record is stored as '' when it is exactly what the
 * reader makes of its cells with the batch's `columns`, and derived again when read (`deriveRecord`); any other
 * record is stored whole. A step's output stays on its step record while its row is unfinished (a resumed row hands
 * it to the next steps: rule "a done step is never sent again" needs only the step's state, the outputs feed the
 * steps after it); when the row succeeds, the outputs its merged `outputs` hold whole are dropped from the steps.
 * Migration 015: a step done at its first attempt (no error) whose output the succeeded row holds whole is not kept
 * at all (its record would say "done", which the row's `succeeded` already says); a retried step, or one whose output
 * a later step overwrote in part, is kept. `outputs` and `parsed` are stored compact and `natural_key` by reference to
 * its cell (./outputs-codec.ts; plain JSON and whole keys of earlier rows are read as before). The idempotency key is
 * not stored when it is the one derived from the row's kind and natural key in the batch's `key_namespace` (stored
 * with the batch at its creation), and is derived again in that same namespace when read: the key a row was sent
 * with never changes, whatever the account id of a later run; rows of a batch without a namespace keep their key.
 * Migration 021: the per-row tables (rows, steps, natural_keys, and resolutions, keyed by a row) name their batch by
 * its number (`batches.batch_no`, never changed nor reused) instead of its 25-character id, which every row, step,
 * key claim and index entry held again. The store maps an id to its number once per batch (`batchNo`, a cache its
 * views share) and binds the number in every statement on those tables; everything it returns names batches by id,
 * as before. A duplicate names its owner's batch by id (`rows.duplicate_of_batch`, read by people), joined through
 * `batches` where a statement needs the owner's row.
 */

import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { CellError, Dialect, StepOutput, UndoneBy } from '../batches/kind.js';
import { DEFAULT_LOCALE, instant, type Locale, render, t } from '../i18n/index.js';
import type { Logger } from '../log.js';
import { isProcessRunning } from '../process-running.js';
import type { Cents, KindName } from '../types.js';
import { assertEffectAllowed, EFFECT_ALLOWED, effectAllowed } from './approvals.js';
import { type OpenDatabaseOptions, StoreError } from './db.js';
import { GroupBatch, type GroupStatement } from './group-batch.js';
import { shortBatchId } from './intakes.js';
import {
  deriveIdempotencyKey,
  explicitKeyDigest,
  lastChangeDigest,
  naturalKeyDigest,
  renewedIdempotencyKey,
} from './keys.js';
import { decodeKeyText, decodeNullable, decodeObject, encodeKeyText, encodeObject } from './outputs-codec.js';
import {
  assertRowTransition,
  assertStepTransition,
  OWNING_ROW_STATES,
  type RowState,
  type StepState,
  UNFINISHED_ROW_STATES,
} from './rows.js';
import { isRetryableConflict, type SqlDriver, type SqlExecutor, type SqlParam, type SqlTransaction } from './sql.js';
import { openSqliteDriver } from './sqlite-driver.js';
import { DEFAULT_VACUUM_EVERY_ROWS, RowVacuums, type VacuumStats } from './vacuum.js';

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
  /**
   * The record key of each cell, in header order (null: a cell the record leaves out), when the record is read from
   * the cells by them (src/csv/reader.ts). A row whose record is exactly that reading of its cells stores no record of
   * its own: it is derived again from its cells when read (see `ingest`). Absent: every row stores its record.
   */
  columns?: ReadonlyArray<string | null> | undefined;
  /**
   * The namespace the rows' idempotency keys are derived in (src/store/keys.ts `accountNamespace` of the run's account
   * id). A row whose key is exactly the one derived in it from its kind and natural key stores no key of its own: it is
   * derived again, in this stored namespace, when read (migration 015). Absent: every row stores its key.
   */
  keyNamespace?: string | undefined;
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
      /** The thing the row changes (`BatchKind.changes`): its last change decides what a repeat is (rule 4). */
      changes?: string | undefined;
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

/** A valid row as the engine hands it to the store at ingestion. */
export type ValidIngestRow = Extract<IngestRow, { valid: true }>;

/** The row that owns a natural key, as `SameOperation` sees it. */
export interface KeyOwner {
  batchId: string;
  line: number;
  /** Whether the owner is a row of the batch being ingested (of this file). */
  sameBatch: boolean;
  /** The owner batch's file name, and the base name of its answers when it came through an intake. */
  fileName: string | null;
  answerName: string | null;
  /** The owner's parsed row, as stored (JSON's values: what `IngestRow.parsed` was, read back). */
  parsed: unknown;
}

/**
 * Whether `row` is the same operation as the owner of its natural key (then it is its `duplicate`): undefined, else
 * why not, and the row is refused (`rejected`, counted as an invalid row). Called inside the ingestion's transaction:
 * it must not await nor throw (the engine builds it from the kind's `mustMatch`, src/batches/same-operation.ts).
 */
export type SameOperation = (row: ValidIngestRow, owner: KeyOwner) => RowError | undefined;

export interface IngestResult {
  /** Rows stored by this call. */
  stored: number;
  /** Rows skipped because they were stored before (ingestion resumed after a crash). */
  skipped: number;
}

export type OutputValue = StepOutput[string];

/** A read step's answer not committed yet: it rides in the row's next intent (rule 9 of ./rows.ts). */
export interface ReadAnswer {
  step: string;
  output: StepOutput;
}

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

/**
 * A row as the result file shows it (src/outbox/result.ts): what its line holds, no more. Its natural key, idempotency
 * key and parsed form are neither read nor derived: the answer shows none of them, and a result row read whole cost
 * each row of a big file a key derived again and its parsed form decoded (docs/performance.md (d) seventeenth pass).
 * A duplicate carries its owner's state and outputs.
 */
export interface ResultRowRecord
  extends Pick<
    RowRecord,
    | 'batchId'
    | 'line'
    | 'record'
    | 'cells'
    | 'state'
    | 'errorCode'
    | 'errorMessage'
    | 'outputs'
    | 'amountCents'
    | 'duplicateOf'
  > {
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
  /** Language of the row's message in the answer (the command's `locale`). @defaultValue DEFAULT_LOCALE */
  locale?: Locale | undefined;
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

/** Code of a row refused at ingestion: its own idempotency key is another operation's (rule 4 of ./rows.ts). */
export const IDEMPOTENCY_KEY_REUSED = 'IDEMPOTENCY_KEY_REUSED';

export interface StoreOptions extends OpenDatabaseOptions {
  /** Clock, for tests. @defaultValue () => new Date() */
  now?: () => Date;
  /**
   * Take `<file>.lock` (holding this process's pid) so that no second process drives the same rows at the same time
   * (a nightly `run` while the daemon works). A lock whose process is gone is taken over. Readers (`status`) leave it
   * off. @defaultValue false
   */
  exclusive?: boolean;
  /**
   * The commit window: how long a write marked `gather` may wait for the writes of the other rows in flight, so that
   * one commit (one fsync) holds them all. 0: every group is committed at the end of its tick. See "The group commit"
   * at the top of this file. @defaultValue DEFAULT_COMMIT_WINDOW_MS
   */
  commitWindowMs?: number;
  /**
   * PostgreSQL: the store vacuums `rows` and `steps` itself each this many rows of this process ended (`rowEnded`),
   * on a connection of its own, never awaited by a row (./vacuum.ts draws the rules). 0 = never. Ignored on SQLite
   * and on a store opened `readonly`. @defaultValue DEFAULT_VACUUM_EVERY_ROWS (500)
   */
  vacuumEveryRows?: number;
  /** Where the store's own work beside the rows (its vacuums) says what went wrong. @defaultValue silent */
  logger?: Logger | undefined;
}

/** The default commit window (`StoreOptions.commitWindowMs`, config `store.commitWindowMs`). */
export const DEFAULT_COMMIT_WINDOW_MS = 20;

/** What this process last saw of a row: its state and its outputs as stored (see `RowHints`). */
interface RowHint {
  state: RowState;
  outputs: string | null;
}

/** Rows hinted at most; past it the hints are dropped whole and come back with the next pages read. */
const MAX_ROW_HINTS = 4096;

/**
 * PostgreSQL: what this process last saw of the rows it drives (state and stored outputs), read with their page
 * (`rowsAfter`, `rowsAt`) or written by its hot path. A hint, never trusted as it stands: the hot writes (an intent,
 * a step's answer: `intentIn`, `stepDoneIn`) make it a condition of the row's own write (compare and set: the row
 * moves only if it still has that state and those outputs, and with several daemons is held by this one), and so
 * need no statement of their own to lock and read the row first: a round trip or two fewer each. A hint gone wrong (a
 * transaction rolled back, a change made by another process or command) fails that condition; the write changes
 * nothing, and the locked path runs as it always did. The checks then run on the state the condition proved.
 * What the lock's own statement gave besides: a write that starts before the row's lock is held (another transaction
 * holds it) reads the row's step records as they were when it started. The condition is evaluated on the row as that
 * transaction left it, so one that changed the row fails it; one that changed only the row's step records under its
 * lock would go unseen. None does while this process drives the row: its step records move only by this engine's
 * writes of that row (one at a time), another daemon refuses a row it does not hold, and a person's commands that
 * settle rows refuse while a daemon drives their folder (src/runner/engine.ts `run`).
 */
class RowHints {
  private readonly byBatch = new Map<string, Map<number, RowHint>>();
  private size = 0;

  get(batchId: string, line: number): RowHint | undefined {
    return this.byBatch.get(batchId)?.get(line);
  }

  set(batchId: string, line: number, hint: RowHint): void {
    let lines = this.byBatch.get(batchId);
    if (lines === undefined) {
      lines = new Map();
      this.byBatch.set(batchId, lines);
    }
    const before = lines.size;
    lines.set(line, hint);
    this.size += lines.size - before;
    if (this.size > MAX_ROW_HINTS) {
      this.byBatch.clear();
      this.size = 0;
    }
  }

  delete(batchId: string, line: number): void {
    const lines = this.byBatch.get(batchId);
    if (lines?.delete(line)) {
      this.size--;
      if (lines.size === 0) this.byBatch.delete(batchId);
    }
  }
}

/** What `intentIn` hands `intentMove`: the row's write of an intent. */
interface IntentMove {
  pg: boolean;
  batchId: string;
  /** The batch's number (`Store.batchNo`), which the per-row tables bind. */
  no: number;
  line: number;
  step: string;
  now: string;
  /** The row's merged outputs with the riding answer's, or undefined when no answer rides in the intent. */
  outputs: string | null | undefined;
  answered: ReadAnswer | undefined;
  /** The step records' upsert parameters: the intent's, after the riding answer's when there is one. */
  records: SqlParam[];
}

/**
 * Row hints (`RowHints`) as the condition of a write of `rows AS r` joined with the values `v` that carry each row's
 * hint (`hint_state`, `hint_outputs`): its state and stored outputs unchanged and, with several daemons, the row held
 * by this one (`strict`: rule 8 of ./rows.ts for an intent) or at least by no other (what `lockRow` refuses). Its one
 * parameter, with a daemon: the daemon's name.
 */
function hintCondition(daemon: RowHolder | undefined, strict: boolean): string {
  const unchanged = ' AND r.state = v.hint_state AND r.outputs IS NOT DISTINCT FROM v.hint_outputs';
  if (daemon === undefined) return unchanged;
  return unchanged + (strict ? ' AND r.holder = ?' : ' AND (r.holder IS NULL OR r.holder = ?)');
}

/** The row's stored outputs with a step's output merged in (its keys replace the row's). */
function mergedObject(stored: string | null, output: StepOutput): Record<string, OutputValue> {
  const merged: Record<string, OutputValue> = stored === null ? {} : decodeObject(stored);
  for (const k in output) merged[k] = output[k] as OutputValue;
  return merged;
}

/** `mergedObject`, encoded as stored. */
function mergedOutputs(stored: string | null, output: StepOutput): string | null {
  return encodeObject(mergedObject(stored, output));
}

/** A row's last answer on its hint (`lastStepsWrite`): what `lastStepWrite` is given, outputs encoded. */
interface LastStepEntry {
  batchId: string;
  no: number;
  line: number;
  now: string;
  outputs: string | null;
  hint: RowHint;
}

/**
 * A row moved in flight on its hint (`inFlightWrite`): an intent (what `intentMove` is given) or the answer of a step
 * before the last (its step record in `records`), the hint its condition.
 */
type InFlightEntry = IntentMove & { hint: RowHint };

/** A row a group statement moved (`onePerRow`). */
interface MovedRow {
  batch_no: number;
  line: number;
}

/**
 * A group statement's entries (./group-batch.ts) one per row: the first entry of a row goes in the statement (`run`,
 * which returns the rows it moved); a later entry of the same row is answered undefined (not moved: its write takes
 * its locked path, after the first's, as it would have without the group). Each entry's result at its index.
 */
async function onePerRow<E extends { no: number; line: number }, M extends MovedRow>(
  entries: readonly E[],
  run: (kept: readonly E[]) => Promise<M[]>,
): Promise<Array<M | undefined>> {
  const rowKey = (no: number, line: number) => `${line}\n${no}`;
  const first = new Map<string, number>();
  const kept: E[] = [];
  for (const [i, e] of entries.entries()) {
    const key = rowKey(e.no, e.line);
    if (first.has(key)) continue;
    first.set(key, i);
    kept.push(e);
  }
  const moved = new Map<string, M>();
  for (const m of await run(kept)) moved.set(rowKey(Number(m.batch_no), m.line), m);
  return entries.map((e, i) => {
    const key = rowKey(e.no, e.line);
    return first.get(key) === i ? moved.get(key) : undefined;
  });
}

/** A succeeded row's step records as JSON, for the last answer's RETURNING (`lastStepWrite`, `heldSteps` reads it). */
const STEPS_JSON = `(SELECT json_agg(json_build_array(s.step, s.state, s.attempts, s.output, s.error_code))
  FROM steps s WHERE s.batch_no = r.batch_no AND s.line = r.line)::text`;

/** The group of a write whose hot statements serve the group's rows together (./group-batch.ts). */
interface RowGroup {
  batch: GroupBatch;
  intents: GroupStatement<InFlightEntry, IntentStepStates | undefined>;
  answers: GroupStatement<InFlightEntry, IntentStepStates | undefined>;
  lastSteps: GroupStatement<LastStepEntry, LastStepBack | undefined>;
}

/** What the last step's write returns (`lastStepWrite`): the row's step records and its duplicates' batches. */
interface LastStepBack {
  steps: string | null;
  dups: string | null;
}

/** An intent's step record upsert parameters: the intent's, after the riding answer's when there is one. */
function intentRecords(
  no: number,
  line: number,
  step: string,
  now: string,
  answered: ReadAnswer | undefined,
): SqlParam[] {
  const intent: SqlParam[] = [no, line, step, 'intent', 1, null, null, null, now];
  return answered === undefined
    ? intent
    : [no, line, answered.step, 'done', 0, JSON.stringify(answered.output), null, null, now, ...intent];
}

/** `recordIntent`'s transition checks, on the row's state as locked and its steps' as read (before or by the write). */
function checkIntent(
  state: RowState,
  steps: IntentStepStates,
  line: number,
  step: string,
  answered: ReadAnswer | undefined,
): void {
  let from = state;
  if (answered !== undefined) {
    assertStepTransition(steps.other_state ?? null, 'done', `step ${answered.step} (line ${line})`);
    if (from !== 'in_flight') assertRowTransition(from, 'in_flight', `row (line ${line})`);
    from = 'in_flight';
  }
  assertStepTransition(steps.step_state, 'intent', `step ${step} (line ${line})`);
  assertRowTransition(from, 'in_flight', `row (line ${line})`);
}

/** `recordStepDone`'s transition checks, on the row's state as read or locked and its step's as read. */
function checkStepDone(state: RowState, stepState: StepState | null, line: number, step: string, last: boolean): void {
  assertStepTransition(stepState, 'done', `step ${step} (line ${line})`);
  if (state !== 'in_flight') assertRowTransition(state, 'in_flight', `row (line ${line})`);
  assertRowTransition('in_flight', last ? 'succeeded' : 'in_flight', `row (line ${line})`);
}

interface PendingWrite {
  fn: (s: Store) => Promise<unknown>;
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
  /**
   * Other rows in flight are expected to queue writes soon (the engine knows: ../runner/engine.ts): the group may wait
   * up to the commit window for them, unless a write not marked so, or `flushGathered`, commits it sooner.
   * @defaultValue false
   */
  gather?: boolean;
}

interface RowSql {
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

/** A row as `resultRowsAfter` reads it: what its line in the answer shows, with its owner's when a duplicate. */
type ResultRowSql = Pick<
  RowSql,
  | 'line'
  | 'record'
  | 'cells'
  | 'state'
  | 'error_code'
  | 'error_message'
  | 'outputs'
  | 'amount_cents'
  | 'duplicate_of_batch'
  | 'duplicate_of_line'
> & {
  owner_state: RowState | null;
  owner_outputs: string | null;
  owner_file: string | null;
  owner_answer: string | null;
};

interface BatchSql {
  id: string;
  batch_no: number;
  columns: string | null;
  key_namespace: string | null;
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

/** Opens the SQLite store file (WAL, synchronous=FULL, migrations applied unless read-only). */
export async function openStore(file: string, options: StoreOptions = {}): Promise<Store> {
  const release = options.exclusive ? takeLock(`${path.resolve(file)}.lock`) : undefined;
  try {
    const driver = openSqliteDriver(file, options);
    try {
      return await openStoreWith(driver, file, { ...options, onClose: release });
    } catch (error) {
      await driver.close();
      throw error;
    }
  } catch (error) {
    release?.();
    throw error;
  }
}

/**
 * The store over any driver (./sql.ts): applies the driver's pending migrations (unless `readonly`). `name` names the
 * store in messages (the SQLite file; for PostgreSQL, its URL without credentials).
 */
export async function openStoreWith(
  driver: SqlDriver,
  name: string,
  options: Omit<StoreOptions, 'exclusive' | 'migrationsDir' | 'busyTimeoutMs'> & { onClose?: () => void } = {},
): Promise<Store> {
  if (!options.readonly) await driver.migrate();
  const store = new Store(driver, name, options);
  store.onClose = options.onClose;
  return store;
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
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isProcessRunning(holder)) {
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

/** The mutable state a store shares with its views (a view is the store bound to one transaction). */
interface StoreShared {
  queued: PendingWrite[];
  flushScheduled: boolean;
  /** The commit window's timer, while the queued group waits for more writes (`gather`). */
  gatherTimer: NodeJS.Timeout | undefined;
  commitWindowMs: number;
  /** The group commits begun and not yet settled (close waits for them). */
  flushing: Set<Promise<void>>;
  closed: boolean;
  /** The closing under way (see `close`). */
  closing: Promise<void> | undefined;
  onClose: (() => void) | undefined;
  /** The daemon driving this store among several (./leases.ts); undefined: the only one (SQLite, the commands). */
  daemon: RowHolder | undefined;
  /** PostgreSQL: the rows' hints of the hot writes (`RowHints`); undefined on SQLite. */
  hints: RowHints | undefined;
  /** PostgreSQL: the vacuums of the hot tables as rows end (./vacuum.ts); undefined on SQLite, readonly or off. */
  vacuums: RowVacuums | undefined;
}

/**
 * A daemon sharing the store with others (./leases.ts `DaemonLease`): the rows it may move are the ones it holds.
 * Checked where a row is locked (`lockRow`) and, against the database, in an intent's transaction (`recordIntent`).
 */
export interface RowHolder {
  readonly name: string;
  /** Throws STORE_LEASE_LOST when the lease is known lost (or past its local deadline). */
  assertLive(): void;
  /** In the intent's transaction: throws STORE_LEASE_LOST unless the database says the lease still holds. */
  assertLeaseInDb(s: Store): Promise<void>;
  /**
   * The same check as an SQL condition (true while the database says the lease holds), for the intent's row write to
   * carry: one statement fewer an intent; `assertLeaseInDb` runs only when that write changed nothing, to say why.
   */
  leaseHeldSql(s: Store): { sql: string; params: SqlParam[] };
}

export class Store {
  /** The driver (./sql.ts): SQLite (./sqlite-driver.ts) or PostgreSQL. */
  readonly driver: SqlDriver;
  /**
   * Where this store's statements go: the driver itself, or, in a view given to a `write` or `transaction` fn, that
   * transaction (its savepoint). Modules of the store (./approvals.ts, ./intakes.ts, ./things.ts) query through it.
   */
  readonly sql: SqlExecutor;
  /** The transaction this view is bound to; undefined on the store itself. */
  readonly tx: SqlTransaction | undefined;
  /** The SQLite file, or the PostgreSQL store's name without credentials (for messages). */
  readonly file: string;
  private readonly now: () => Date;
  private readonly shared: StoreShared;
  /** What each batch's rows are read with (`rowContext`), once read; shared with the transaction views. */
  private readonly contextByBatch = new Map<string, RowContext>();
  /** Each batch's number by its id (`batchNo`), once read; shared with the transaction views. */
  private readonly noByBatch = new Map<string, number>();

  constructor(driver: SqlDriver, file: string, options: StoreOptions = {}) {
    this.driver = driver;
    this.sql = driver;
    this.tx = undefined;
    this.file = file;
    this.now = options.now ?? (() => new Date());
    this.shared = {
      queued: [],
      flushScheduled: false,
      gatherTimer: undefined,
      commitWindowMs: options.commitWindowMs ?? DEFAULT_COMMIT_WINDOW_MS,
      flushing: new Set(),
      closed: false,
      closing: undefined,
      onClose: undefined,
      daemon: undefined,
      hints: driver.dialect === 'postgres' ? new RowHints() : undefined,
      vacuums: undefined,
    };
    const everyRows = options.vacuumEveryRows ?? DEFAULT_VACUUM_EVERY_ROWS;
    const runAlone = driver.runAlone?.bind(driver);
    if (runAlone && everyRows > 0 && options.readonly !== true) {
      this.shared.vacuums = new RowVacuums({ everyRows, run: runAlone, logger: options.logger });
    }
  }

  /**
   * One row of this process ended its drive (the engine calls it once a row, after the row's last write committed):
   * counted for the store's vacuums (./vacuum.ts). Synchronous: it never makes the row wait.
   */
  rowEnded(): void {
    this.shared.vacuums?.rowEnded();
  }

  /** The store's vacuums so far (by how each ended), or undefined when it runs none (SQLite, readonly, off). */
  get vacuumStats(): Readonly<VacuumStats> | undefined {
    return this.shared.vacuums?.stats;
  }

  /** Called once after the database is closed (releases the lock file of an exclusive store). */
  get onClose(): (() => void) | undefined {
    return this.shared.onClose;
  }

  set onClose(fn: (() => void) | undefined) {
    this.shared.onClose = fn;
  }

  /**
   * Commits the queued writes (and those queued while it waits), waits for the commits under way, and closes the
   * database; a write asked for once it is closed is refused (STORE_CLOSED). Calls after the first share its promise.
   */
  close(): Promise<void> {
    const shared = this.shared;
    shared.closing ??= (async () => {
      // A vacuum under way is cancelled, not waited for (./vacuum.ts, rule 5).
      await shared.vacuums?.stop();
      for (;;) {
        if (shared.queued.length > 0) void this.flush();
        if (shared.flushing.size === 0) break;
        await Promise.allSettled([...shared.flushing]);
      }
      shared.closed = true;
      await this.driver.close();
      shared.onClose?.();
    })();
    return shared.closing;
  }

  /** Binds the daemon lease of a shared store (./leases.ts): from then on its row writes check what it holds. */
  bindDaemon(daemon: RowHolder | undefined): void {
    this.shared.daemon = daemon;
  }

  /** The daemon bound to this store (./leases.ts), if several share it. */
  get daemon(): RowHolder | undefined {
    return this.shared.daemon;
  }

  get isOpen(): boolean {
    return !this.shared.closed;
  }

  /** This store bound to `tx`: every method of the view runs its statements inside that transaction. */
  private view(tx: SqlTransaction, group?: RowGroup): Store {
    const view = Object.create(this) as Store;
    const bound = view as unknown as { sql: SqlExecutor; tx: SqlTransaction; atCommit: AtCommit; group?: RowGroup };
    bound.sql = tx;
    bound.tx = tx;
    bound.atCommit = new AtCommit();
    // Set on every view, never inherited: a savepoint's view (made from a write's view) parks nothing, since the
    // other writes of the group would then run inside that savepoint.
    bound.group = group;
    return view;
  }

  /**
   * The group this view's write belongs to, when its hot statements may serve the group's rows together
   * (./group-batch.ts; PostgreSQL, a group run without savepoints: `groupIn`).
   */
  private group: RowGroup | undefined;

  /**
   * What this transaction (or savepoint) leaves to its end (`AtCommit`): its `batches.changes` bumps and the step
   * records it drops. A savepoint's are handed to its parent only when it succeeds.
   */
  private atCommit: AtCommit | undefined;

  /**
   * Runs fn on a new view of `tx`; once fn succeeded, hands what it left to its end to `into` (a savepoint's parent).
   */
  private async inView<T>(
    tx: SqlTransaction,
    fn: (s: Store) => Promise<T>,
    into: AtCommit,
    group?: RowGroup,
  ): Promise<T> {
    const v = this.view(tx, group);
    const result = await fn(v);
    v.atCommit!.handTo(into);
    return result;
  }

  /**
   * Runs what a transaction left to its end, just before its COMMIT: the step records dropped (one statement for the
   * whole group's, however many rows), then the bumps in batch id order. On PostgreSQL the drops ride in the first
   * bump's statement (a data-modifying WITH): no round trip of their own.
   */
  private async applyAtCommit(tx: SqlTransaction, end: AtCommit): Promise<void> {
    const ids = [...end.bumps.keys()].sort();
    const drops = end.drops;
    let withDrops: { sql: string; params: SqlParam[] } | undefined;
    for (let i = 0; i < drops.length; i += DROPS_PER_STATEMENT) {
      const part = drops.slice(i, i + DROPS_PER_STATEMENT);
      const sql = `DELETE FROM steps WHERE (batch_no, line, step) IN (${part.map(() => '(?, ?, ?)').join(', ')})`;
      const params = part.flat();
      const lastPart = i + DROPS_PER_STATEMENT >= drops.length;
      if (lastPart && ids.length > 0 && this.driver.dialect === 'postgres') withDrops = { sql, params };
      else await tx.run(sql, params);
    }
    for (const [i, id] of ids.entries()) {
      const bump = 'UPDATE batches SET changes = changes + ? WHERE id = ?';
      if (i === 0 && withDrops) {
        await tx.run(`WITH dropped AS (${withDrops.sql}) ${bump}`, [...withDrops.params, end.bumps.get(id)!, id]);
      } else await tx.run(bump, [end.bumps.get(id)!, id]);
    }
  }

  // ---------------------------------------------------------------- transactions and the group commit

  /**
   * Runs fn in one transaction and resolves with its result once committed (on disk, unless `durable: false`). On a
   * view (inside a transaction already), fn runs in a savepoint of it instead: a throw undoes fn's writes alone.
   * fn awaits nothing but the calls of the view it is given (see the top of this file).
   */
  transaction<T>(fn: (s: Store) => Promise<T>, options: WriteOptions = {}): Promise<T> {
    const forget = (error: unknown): never => {
      this.forgetNumbers();
      throw error;
    };
    if (this.tx) return this.tx.savepoint((tx) => this.inView(tx, fn, this.atCommit!)).catch(forget);
    if (this.shared.closed) return Promise.reject(new StoreError('STORE_CLOSED', 'The store is closed'));
    return this.driver
      .transaction(async (tx) => {
        const end = new AtCommit();
        const result = await this.inView(tx, fn, end);
        await this.applyAtCommit(tx, end);
        return result;
      }, options)
      .catch(forget);
  }

  /**
   * The statements of one method as a unit: on a view, in the enclosing transaction as they are (a write's savepoint
   * already bounds them); on the store, in a transaction of their own, so that no other caller's statement comes
   * between a read and the write that depends on it.
   */
  private unit<T>(fn: (s: Store) => Promise<T>): Promise<T> {
    if (this.tx) return fn(this);
    return this.transaction(fn);
  }

  /**
   * Runs `fn` in a transaction shared with the other writes queued in this tick; resolves with its result once that
   * transaction is committed (on disk, synchronous=FULL, unless every write of the group said `durable: false`),
   * rejects with its error (its savepoint is rolled back, the other writes are kept). fn is given the store bound to
   * its savepoint, and uses that (`(s) => s.recordIntent(...)`), never the store itself: a statement on the store
   * would wait for the transaction that waits for fn.
   */
  write<T>(fn: (s: Store) => Promise<T>, options: WriteOptions = {}): Promise<T> {
    const shared = this.shared;
    if (shared.closed) return Promise.reject(new StoreError('STORE_CLOSED', 'The store is closed'));
    return new Promise<T>((resolve, reject) => {
      shared.queued.push({
        fn: fn as (s: Store) => Promise<unknown>,
        resolve: resolve as (v: unknown) => void,
        reject,
        durable: options.durable !== false,
      });
      if (options.gather !== true || shared.commitWindowMs <= 0) this.flushGathered();
      else if (!shared.flushScheduled) {
        shared.flushScheduled = true;
        shared.gatherTimer = setTimeout(() => {
          shared.gatherTimer = undefined;
          void this.flush();
        }, shared.commitWindowMs);
      }
    });
  }

  /**
   * The queued writes are committed at the end of this tick, not at the end of the commit window: no other write is
   * expected (the engine's rows in flight have all queued theirs), or a write that may not wait came.
   */
  flushGathered(): void {
    const shared = this.shared;
    if (shared.gatherTimer !== undefined) {
      clearTimeout(shared.gatherTimer);
      shared.gatherTimer = undefined;
      shared.flushScheduled = false;
    }
    if (!shared.flushScheduled && shared.queued.length > 0) {
      shared.flushScheduled = true;
      setImmediate(() => void this.flush());
    }
  }

  /**
   * Commits the queued writes now, in one transaction; resolves once settled. Savepoints only when needed: the group
   * runs without any, and only if one of its writes throws is it run again with a savepoint each (a failed write is
   * rare: a row held by another daemon, a lost lease, a state the row's machine refuses).
   */
  flush(): Promise<void> {
    const shared = this.shared;
    shared.flushScheduled = false;
    if (shared.gatherTimer !== undefined) {
      clearTimeout(shared.gatherTimer);
      shared.gatherTimer = undefined;
    }
    const ops = shared.queued;
    if (ops.length === 0 || shared.closed) return Promise.resolve();
    shared.queued = [];
    let durable = false;
    for (const op of ops) durable ||= op.durable;
    if (ops.length === 1) {
      // A group of one write needs no savepoint: its failure rolls the whole transaction back, which is only its own
      // (two statements fewer per write; at concurrency 8 most groups hold one or two writes).
      const op = ops[0]!;
      const alone = this.transaction(op.fn, { durable: op.durable })
        .then(op.resolve, op.reject)
        .finally(() => shared.flushing.delete(alone));
      shared.flushing.add(alone);
      return alone;
    }
    const done = this.groupWithoutSavepoints(ops, durable)
      // A write of the group failed: the transaction was rolled back whole; the group runs again, a savepoint each, so
      // that only that write fails and the others are kept. Writes are functions of the store's state (what the
      // PostgreSQL driver relies on already when it runs a deadlock's victim group again whole).
      .then((outcome) => (outcome === 'a write failed' ? this.groupWithSavepoints(ops, durable) : outcome))
      .then(
        (results) => {
          ops.forEach((op, i) => {
            const r = results[i]!;
            if (r.ok) op.resolve(r.value);
            else op.reject(r.error);
          });
        },
        (error: unknown) => {
          for (const op of ops) op.reject(error);
        },
      )
      .finally(() => shared.flushing.delete(done));
    shared.flushing.add(done);
    return done;
  }

  /**
   * The group's writes in one transaction with no savepoint (two statements fewer per write on SQLite, one round trip
   * fewer on PostgreSQL): the common case, where no write fails. 'a write failed' when one threw: the transaction is
   * rolled back whole and nothing of it was written. A failure of BEGIN, COMMIT or the bumps rejects as before.
   */
  private async groupWithoutSavepoints(
    ops: readonly PendingWrite[],
    durable: boolean,
  ): Promise<Array<{ ok: true; value: unknown }> | 'a write failed'> {
    const failed = new Set<unknown>();
    try {
      return await this.driver.transaction((tx) => this.groupIn(tx, ops, failed), { durable });
    } catch (error) {
      this.forgetNumbers();
      if (failed.has(error)) return 'a write failed';
      throw error;
    }
  }

  /** `groupWithoutSavepoints`' transaction on `tx` (see `intentIn`); a write's own failure is added to `failed`. */
  private async groupIn(
    tx: SqlTransaction,
    ops: readonly PendingWrite[],
    failed: Set<unknown>,
  ): Promise<Array<{ ok: true; value: unknown }>> {
    const results: Array<{ ok: true; value: unknown }> = [];
    const end = new AtCommit();
    try {
      if (this.shared.hints !== undefined) {
        // PostgreSQL: the writes' hot statements may serve the group's rows together (./group-batch.ts).
        const batch = new GroupBatch();
        const group: RowGroup = {
          batch,
          intents: { run: (entries) => this.inFlightWrite(tx, entries, true) },
          answers: { run: (entries) => this.inFlightWrite(tx, entries, false) },
          lastSteps: { run: (entries) => this.lastStepsWrite(tx, entries) },
        };
        const values = await batch.run(ops.length, (i) => this.inView(tx, ops[i]!.fn, end, group));
        for (const value of values) results.push({ ok: true, value });
      } else {
        for (const op of ops) results.push({ ok: true, value: await this.inView(tx, op.fn, end) });
      }
    } catch (error) {
      // A deadlock or serialisation failure is the whole group's: rolled back and run again by the driver.
      if (!isRetryableConflict(error)) failed.add(error);
      throw error;
    }
    await this.applyAtCommit(tx, end);
    return results;
  }

  /** The group's writes in one transaction, each in its savepoint: a write that throws undoes only itself. */
  private groupWithSavepoints(
    ops: readonly PendingWrite[],
    durable: boolean,
  ): Promise<Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>> {
    return this.driver.transaction(
      async (tx) => {
        const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
        const end = new AtCommit();
        for (const op of ops) {
          try {
            results.push({ ok: true, value: await tx.savepoint((sp) => this.inView(sp, op.fn, end)) });
          } catch (error) {
            this.forgetNumbers();
            // A deadlock or serialisation failure is the whole group's: rolled back and run again by the driver.
            if (isRetryableConflict(error)) throw error;
            results.push({ ok: false, error });
          }
        }
        await this.applyAtCommit(tx, end);
        return results;
      },
      { durable },
    );
  }

  private ts(): string {
    return this.now().toISOString();
  }

  /**
   * ` FOR UPDATE` on PostgreSQL, nothing on SQLite: a read whose value a write of the same transaction depends on
   * locks what it read, so that a transaction running side by side (READ COMMITTED) waits, then reads the value
   * written (./pg-driver.ts). SQLite needs it not: one writer at a time, its lock taken at BEGIN.
   */
  get forUpdate(): string {
    return this.driver.dialect === 'postgres' ? ' FOR UPDATE' : '';
  }

  /** Locks the row (see `forUpdate`) until the end of the transaction; its state, or undefined when there is none. */
  private async lockRow(
    batchId: string,
    line: number,
  ): Promise<{ state: RowState; outputs: string | null } | undefined> {
    const daemon = this.shared.daemon;
    const no = await this.batchNo(batchId);
    if (daemon === undefined) {
      return this.sql.get<{ state: RowState; outputs: string | null }>(
        `SELECT state, outputs FROM rows WHERE batch_no = ? AND line = ?${this.forUpdate}`,
        [no, line],
      );
    }
    // Several daemons share the store (./leases.ts): a row held by another one is never moved by this one.
    daemon.assertLive();
    const row = await this.sql.get<{ state: RowState; outputs: string | null; holder: string | null }>(
      `SELECT state, outputs, holder FROM rows WHERE batch_no = ? AND line = ?${this.forUpdate}`,
      [no, line],
    );
    if (row && row.holder !== null && row.holder !== daemon.name) {
      throw new StoreError(
        'STORE_ROW_NOT_HELD',
        `Row ${batchId} line ${line} is held by daemon "${row.holder}", not by "${daemon.name}"`,
      );
    }
    return row;
  }

  // ---------------------------------------------------------------- batches

  /** Creates the batch, or returns it unchanged when a batch with the same id (same content) exists. */
  createBatch(batch: NewBatch): Promise<BatchRecord> {
    return this.unit(async (s) => {
      // Its number (migration 021): PostgreSQL's sequence (the column's default); on SQLite, whose one writer holds
      // the transaction, one more than the highest (batches are never deleted).
      const [noColumn, noValue] =
        s.driver.dialect === 'postgres'
          ? ['', '']
          : [', batch_no', ', (SELECT COALESCE(MAX(batch_no), 0) + 1 FROM batches)'];
      await s.sql.run(
        `INSERT INTO batches (id, kind, file_name, dialect, header, columns, key_namespace, status, created_at${noColumn})
         VALUES (?, ?, ?, ?, ?, ?, ?, 'ingesting', ?${noValue}) ON CONFLICT (id) DO NOTHING`,
        [
          batch.id,
          batch.kind,
          batch.fileName,
          JSON.stringify(batch.dialect),
          JSON.stringify(batch.header),
          batch.columns ? JSON.stringify(batch.columns) : null,
          batch.keyNamespace ?? null,
          s.ts(),
        ],
      );
      return (await s.getBatch(batch.id))!;
    });
  }

  async getBatch(id: string): Promise<BatchRecord | undefined> {
    const row = await this.sql.get<BatchSql>('SELECT * FROM batches WHERE id = ?', [id]);
    if (row) this.remember(row);
    return row && toBatch(row);
  }

  /** Every batch, newest first. */
  async listBatches(): Promise<BatchRecord[]> {
    return (await this.sql.all<BatchSql>('SELECT * FROM batches ORDER BY created_at DESC, id')).map(toBatch);
  }

  /**
   * Batches with work left, oldest first: not finished (an `ingesting` one needs its file again), or with rows
   * pending, in flight or uncertain.
   */
  async unfinishedBatches(): Promise<BatchRecord[]> {
    return (
      await this.sql.all<BatchSql>(
        `SELECT * FROM batches b WHERE b.status NOT IN ('done', 'rejected')
           OR EXISTS (SELECT 1 FROM rows r WHERE r.batch_no = b.batch_no
                      AND r.state IN ('pending', 'in_flight', 'waiting', 'uncertain'))
         ORDER BY b.created_at, b.id`,
      )
    ).map(toBatch);
  }

  /** The batch, locked until the transaction ends; STORE_NO_BATCH when there is none. */
  private async requireBatch(batchId: string): Promise<BatchRecord> {
    // Locked (see `forUpdate`): every caller writes the batch by what it read of it, in the same transaction.
    const row = await this.sql.get<BatchSql>(`SELECT * FROM batches WHERE id = ?${this.forUpdate}`, [batchId]);
    if (row) this.remember(row);
    const batch = row && toBatch(row);
    if (!batch) throw new StoreError('STORE_NO_BATCH', `No batch ${batchId}`);
    return batch;
  }

  /** The batch while its rows are being stored; STORE_BATCH_INGESTED, saying `why` that matters, once they are. */
  /**
   * The owner of each of `keys` (natural keys of `kind`): its row's place, state and parsed row (to tell a duplicate
   * from a key reused for another operation), the owner batch's file and answer name (for a duplicate's message).
   * Keys nobody owns are absent. A statement per 100 keys. `digests`: each key's digest, the table's key
   * (`naturalKeyDigest`), computed once by the caller, whose claims use them too.
   */
  private async naturalKeyOwners(digests: ReadonlyMap<string, Buffer>): Promise<Map<string, NaturalKeyOwner>> {
    const owners = new Map<string, NaturalKeyOwner>();
    /** Each key by its digest's hex. */
    const byDigest = new Map<string, { key: string; digest: Buffer }>();
    for (const [key, digest] of digests) byDigest.set(digest.toString('hex'), { key, digest });
    const unique = [...byDigest.values()];
    for (let i = 0; i < unique.length; i += KEYS_PER_STATEMENT) {
      const part = unique.slice(i, i + KEYS_PER_STATEMENT);
      const found = await this.sql.all<NaturalKeyOwner & { key_digest: Uint8Array }>(
        `SELECT k.key_digest, k.batch_no, b.id AS batch_id, k.line, r.state, r.error_code, r.parsed, r.cells, r.outputs,
           b.file_name, (SELECT i.answer_name FROM intakes i WHERE i.batch_id = b.id LIMIT 1) AS answer_name
         FROM natural_keys k
           LEFT JOIN rows r ON r.batch_no = k.batch_no AND r.line = k.line
           LEFT JOIN batches b ON b.batch_no = k.batch_no
         WHERE k.key_digest IN (${part.map(() => '?').join(', ')})`,
        part.map((k) => k.digest),
      );
      for (const { key_digest, ...owner } of found) {
        const key = byDigest.get(Buffer.from(key_digest).toString('hex'))?.key;
        if (key !== undefined) owners.set(key, owner);
      }
    }
    if (this.driver.dialect === 'postgres') await this.lockOwners(owners);
    return owners;
  }

  /**
   * The owners (of `owners`, read from the table) whose operation a row of `undoneBy.kind` undoes: that row's natural
   * key, as the owner's outputs give it, is owned by a row that is not failed or rejected (`BatchKind.undoneBy`).
   */
  private async undoneOwners(owners: Map<string, NaturalKeyOwner>, undoneBy: UndoneBy): Promise<Set<NaturalKeyOwner>> {
    const byKey = new Map<string, NaturalKeyOwner[]>();
    for (const owner of owners.values()) {
      if (owner.outputs == null) continue;
      let key: string | undefined;
      try {
        key = undoneBy.naturalKey(decodeObject(owner.outputs));
      } catch {
        key = undefined; // outputs this version cannot read: the owner stands, as before the rule
      }
      if (key !== undefined) byKey.set(key, [...(byKey.get(key) ?? []), owner]);
    }
    const undone = new Set<NaturalKeyOwner>();
    if (byKey.size === 0) return undone;
    const digests = new Map([...byKey.keys()].map((k) => [k, naturalKeyDigest(undoneBy.kind, k)]));
    for (const [key, undoer] of await this.naturalKeyOwners(digests)) {
      if (undoer.state == null || !OWNING_ROW_STATES.includes(undoer.state)) continue;
      for (const owner of byKey.get(key)!) undone.add(owner);
    }
    return undone;
  }

  /**
   * PostgreSQL: the owners' rows locked (FOR SHARE) until the ingestion commits, and their states read again through
   * the lock. A duplicate's file shows its owner's state, and an owner that moves marks the files holding its
   * duplicates stale, reading them with its row locked (`duplicatedIn`). Without this lock an ingestion running side
   * by side with that move stored a duplicate the move did not see, and read the owner as it was before: the
   * duplicate's file answered with the old state and never marked stale. With it, the one waits for the other: the
   * move sees the duplicate, or the ingestion sees the move (test/store.test.ts, "an owner moving while a duplicate of
   * it is ingested"). SQLite's one writer already orders them so. Only owners that can still move (unfinished: a
   * final state never changes): none on a first night, few when a file already answered is dropped again.
   */
  private async lockOwners(owners: Map<string, NaturalKeyOwner>): Promise<void> {
    const held = [...owners.values()].filter((o) => o.state !== null && UNFINISHED_ROW_STATES.includes(o.state));
    for (let i = 0; i < held.length; i += KEYS_PER_STATEMENT) {
      const part = held.slice(i, i + KEYS_PER_STATEMENT);
      const locked = await this.sql.all<{ batch_no: number; line: number; state: RowState }>(
        `SELECT batch_no, line, state FROM rows WHERE (batch_no, line) IN (${part.map(() => '(?, ?)').join(', ')})
         ORDER BY batch_no, line FOR SHARE`,
        part.flatMap((o) => [o.batch_no, o.line]),
      );
      const now = new Map(locked.map((r) => [`${r.batch_no}\n${r.line}`, r.state]));
      for (const o of part) o.state = now.get(`${o.batch_no}\n${o.line}`) ?? null;
    }
  }

  private async ingestingBatch(batchId: string, why: string): Promise<BatchRecord> {
    const batch = await this.requireBatch(batchId);
    if (batch.status !== 'ingesting') {
      throw new StoreError('STORE_BATCH_INGESTED', `Batch ${batchId} is ${batch.status}: ${why}`);
    }
    return batch;
  }

  /** Every still-pending row of the batch becomes `rejected` with `error`, which gives its natural key up. */
  private async rejectPendingRows(batchId: string, error: RowError, now: string): Promise<void> {
    await this.sql.run(
      `UPDATE rows SET state = 'rejected', error_code = ?, error_message = ?, updated_at = ?
       WHERE batch_no = ? AND state = 'pending'`,
      [error.code, error.message, now, await this.batchNo(batchId)],
    );
  }

  /**
   * Stores a chunk of rows in one transaction. Lines at or below the batch's last stored line are skipped (the
   * ingestion of this batch was interrupted and is being redone from the file). A valid row whose natural key is
   * owned by another row becomes `duplicate`, unless `sameOperation` says it is another operation than its owner's
   * (the key reused with other content): then it is `rejected` with its error, as an invalid row, and claims nothing.
   * Otherwise it takes the key (a failed or rejected owner gives it up). Without `sameOperation`, every row with an
   * owned key is a duplicate.
   */
  ingest(
    batchId: string,
    rows: readonly IngestRow[],
    locale: Locale = DEFAULT_LOCALE,
    sameOperation?: SameOperation,
    undoneBy?: UndoneBy,
  ): Promise<IngestResult> {
    return this.transaction(async (s) => {
      // Who owns a natural key is read, then claimed: on PostgreSQL, another ingestion running side by side would
      // read the same "no owner" and both rows would own the key (sent twice). The table's lock, taken first, makes
      // ingestions of one store take turns (reads of it go on); SQLite's one writer does the same.
      if (s.driver.dialect === 'postgres') await s.sql.run('LOCK TABLE natural_keys IN SHARE ROW EXCLUSIVE MODE');
      const batch = await s.ingestingBatch(batchId, 'its rows are already stored');
      const no = await s.batchNo(batchId);
      const now = s.ts();
      const columns = batch.columns;
      const ns = batch.keyNamespace;
      /** The key as stored: NULL when it is the one derived in the batch's namespace (migration 015). */
      const keyText = (row: { naturalKey: string; idempotencyKey: string }): string | null =>
        ns !== undefined && row.idempotencyKey === deriveIdempotencyKey(ns, batch.kind, row.naturalKey)
          ? null
          : row.idempotencyKey;
      /** The record as stored: '' when it is exactly what `deriveRecord` reads from its cells (see the schema). */
      const recordText = (row: IngestRow): string =>
        columns !== undefined && row.cells && sameRecord(row.record, columns, row.cells)
          ? DERIVED_RECORD
          : JSON.stringify(row.record);
      let stored = 0;
      let skipped = 0;
      let invalid = 0;
      let lastLine = batch.lastLine;
      const fresh: IngestRow[] = [];
      for (const row of rows) {
        if (row.line <= lastLine) {
          skipped++;
          continue;
        }
        lastLine = row.line;
        stored++;
        fresh.push(row);
      }
      // Who owns each natural key of the chunk, read at once; a row of the chunk that claims a key becomes its owner
      // for the rows after it, as a read per row, after the rows before it were stored, saw it.
      const digests = new Map<string, Buffer>();
      for (const row of fresh) {
        if (row.valid && !digests.has(row.naturalKey)) {
          digests.set(row.naturalKey, naturalKeyDigest(batch.kind, row.naturalKey));
        }
      }
      const owners = await s.naturalKeyOwners(digests);
      // The last row that claimed each thing the chunk's rows change (`BatchKind.changes`), read and kept the same way.
      const things = new Map<string, Buffer>();
      for (const row of fresh) {
        if (row.valid && row.changes !== undefined && !things.has(row.changes)) {
          things.set(row.changes, lastChangeDigest(batch.kind, row.changes));
        }
      }
      const lastChanges = things.size > 0 ? await s.naturalKeyOwners(things) : new Map<string, NaturalKeyOwner>();
      const undone = undoneBy === undefined ? new Set<NaturalKeyOwner>() : await s.undoneOwners(owners, undoneBy);
      // The rows' own explicit idempotency keys (stored: not the derived one), claimed beside the natural keys: the
      // row that first carried a key to the bank holds it unless it was refused before anything was sent (rule 4).
      // Each valid row's key as stored, worked out once (a derivation a row) for both uses below.
      const storedKeys = new Map<IngestRow, string | null>();
      const explicit = new Map<string, Buffer>();
      for (const row of fresh) {
        if (!row.valid) continue;
        const own = keyText(row);
        storedKeys.set(row, own);
        if (own !== null && !explicit.has(own)) explicit.set(own, explicitKeyDigest(batch.kind, own));
      }
      const keyHolders = explicit.size > 0 ? await s.naturalKeyOwners(explicit) : new Map<string, NaturalKeyOwner>();
      /** A row refused at ingestion (invalid cells, or its key reused for another operation): nothing of it is sent. */
      const rejectedRow = (row: IngestRow, err: RowError): SqlParam[] => [
        no,
        row.line,
        null,
        null,
        recordText(row),
        row.cells ? JSON.stringify(row.cells) : null,
        null,
        'rejected',
        err.code,
        err.message,
        row.amountCents ?? null,
        null,
        null,
        now,
      ];
      const inserts: SqlParam[][] = [];
      /** The keys and things claimed, by digest: a later row of the chunk claiming one again replaces the claim. */
      const claims = new Map<string, SqlParam[]>();
      const claim = (digest: Buffer, line: number) => claims.set(digest.toString('hex'), [digest, no, line]);
      for (const row of fresh) {
        if (!row.valid) {
          invalid++;
          const err = describeCellErrors(row.errors, locale);
          if (row.message !== undefined) err.message = row.message;
          inserts.push(rejectedRow(row, err));
          continue;
        }
        const own = owners.get(row.naturalKey);
        const owning = own?.state != null && OWNING_ROW_STATES.includes(own.state);
        const stored = storedKeys.get(row)!;
        // Another row claimed the owner's thing since (a later change of the charge): the owner is no longer what
        // the bank holds, and the row is sent again, not answered with the owner's outcome. Not with the row's own
        // explicit key (the bank would replay the owner's answer to it), nor before the last change was recorded.
        const last = row.changes === undefined ? undefined : lastChanges.get(row.changes);
        const overtaken =
          owning &&
          stored === null &&
          ((last !== undefined && (last.batch_id !== own!.batch_id || last.line !== own!.line)) || undone.has(own!));
        const isDuplicate = owning && !overtaken;
        const reused = isDuplicate && sameOperation ? sameOperation(row, keyOwner(own!, batchId)) : undefined;
        if (reused !== undefined) {
          // The key reused for another operation: refused as an invalid row (the batch's policy applies), its key
          // left to its owner, and never answered with the owner's outcome.
          invalid++;
          inserts.push(rejectedRow(row, reused));
          continue;
        }
        // Its own idempotency key carried by another operation (another natural key): the bank would refuse it, or
        // answer it with that operation's outcome. Refused as an invalid row; a row that gave nothing to the bank
        // (rejected) holds no key, and the natural key's own owner (a failed row dropped again) may keep it.
        const holder = stored === null || isDuplicate ? undefined : keyHolders.get(stored);
        if (
          holder !== undefined &&
          holder.state !== 'rejected' &&
          !(own !== undefined && own.batch_id === holder.batch_id && own.line === holder.line)
        ) {
          invalid++;
          inserts.push(
            rejectedRow(row, {
              code: IDEMPOTENCY_KEY_REUSED,
              message: t(locale, 'IDEMPOTENCY_KEY_REUSED', {
                key: stored!,
                line: holder.line,
                where:
                  holder.batch_id === batchId
                    ? t(locale, 'NATURAL_KEY_REUSED.thisFile')
                    : t(locale, 'NATURAL_KEY_REUSED.otherFile', { file: holder.file_name ?? holder.batch_id }),
              }),
            }),
          );
          continue;
        }
        // A failed owner gives its key up; the row sends under a key of its own (renewedIdempotencyKey says why),
        // unless the key is the row's own explicit one, or a person settled the owner as failed (their word, not
        // the bank's: should they be wrong, the old key makes the bank replay what it did, never do it twice).
        const renew =
          overtaken ||
          (stored === null &&
            !isDuplicate &&
            own?.state === 'failed' &&
            own.error_code !== RESOLVED_AS_FAILED &&
            own.batch_id !== batchId);
        // Never the derived key (keyText's null): stored as it is.
        const key = renew ? renewedIdempotencyKey(row.idempotencyKey, own!.batch_id, own!.line) : stored;
        inserts.push([
          no,
          row.line,
          encodeKeyText(row.naturalKey, row.cells),
          key,
          recordText(row),
          row.cells ? JSON.stringify(row.cells) : null,
          encodeObject(row.parsed, row.cells),
          isDuplicate ? 'duplicate' : 'pending',
          isDuplicate ? DUPLICATE_NATURAL_KEY : null,
          isDuplicate
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
          row.amountCents ?? null,
          isDuplicate ? own!.batch_id : null,
          isDuplicate ? own!.line : null,
          now,
        ]);
        if (!isDuplicate) {
          const owner: NaturalKeyOwner = {
            batch_id: batchId,
            batch_no: no,
            line: row.line,
            state: 'pending',
            file_name: batch.fileName,
            answer_name: null,
            parsed: null,
            cells: null,
            fresh: { parsed: row.parsed },
          };
          claim(digests.get(row.naturalKey)!, row.line);
          owners.set(row.naturalKey, owner);
          if (stored !== null && explicit.has(stored)) {
            claim(explicit.get(stored)!, row.line);
            keyHolders.set(stored, owner);
          }
          if (row.changes !== undefined) {
            claim(things.get(row.changes)!, row.line);
            lastChanges.set(row.changes, owner);
          }
        }
      }
      // Several rows a statement (the rows before their keys' claims: a claim names its row).
      await insertMany(
        s.sql,
        `INSERT INTO rows (batch_no, line, natural_key, idempotency_key, record, cells, parsed, state, error_code,
           error_message, amount_cents, duplicate_of_batch, duplicate_of_line, updated_at)`,
        inserts,
      );
      await insertMany(
        s.sql,
        'INSERT INTO natural_keys (key_digest, batch_no, line)',
        [...claims.values()],
        ' ON CONFLICT (key_digest) DO UPDATE SET batch_no = excluded.batch_no, line = excluded.line',
      );
      await s.sql.run(
        `UPDATE batches SET row_count = row_count + ?, invalid_count = invalid_count + ?, last_line = ? WHERE id = ?`,
        [stored, invalid, lastLine, batchId],
      );
      return { stored, skipped };
    });
  }

  /**
   * Ends ingestion: applies the policy (all-or-nothing with any invalid row: every pending row becomes `rejected`
   * with BATCH_HAS_INVALID_ROWS, which also gives its natural key up) and marks the batch ready.
   */
  finishIngest(batchId: string, policy: BatchPolicy, locale: Locale = DEFAULT_LOCALE): Promise<BatchRecord> {
    return this.transaction(async (s) => {
      const batch = await s.requireBatch(batchId);
      if (batch.status !== 'ingesting') return batch;
      if (policy === 'all-or-nothing' && batch.invalidCount > 0) {
        await s.rejectPendingRows(
          batchId,
          {
            code: BATCH_HAS_INVALID_ROWS,
            message: t(locale, 'BATCH_HAS_INVALID_ROWS', { kind: batch.kind, count: batch.invalidCount }),
          },
          s.ts(),
        );
      }
      await s.sql.run(`UPDATE batches SET status = 'ready', policy = ? WHERE id = ?`, [policy, batchId]);
      return (await s.getBatch(batchId))!;
    });
  }

  /**
   * The file turned out to be broken while its rows were being stored (nothing was sent yet): the batch is rejected
   * as a whole, and its stored rows become `rejected` so that they give their natural keys up.
   */
  rejectBatch(batchId: string, error: RowError): Promise<BatchRecord> {
    return this.transaction(async (s) => {
      await s.ingestingBatch(batchId, 'it can no longer be rejected');
      const now = s.ts();
      await s.rejectPendingRows(batchId, error, now);
      await s.sql.run(
        `UPDATE batches SET status = 'rejected', error_code = ?, error_message = ?, finished_at = ? WHERE id = ?`,
        [error.code, error.message, now, batchId],
      );
      return (await s.getBatch(batchId))!;
    });
  }

  /** Marks the batch running (from ready, or from done when uncertain rows are retried). */
  async markBatchRunning(batchId: string): Promise<void> {
    await this.sql.run(
      `UPDATE batches SET status = 'running', started_at = COALESCE(started_at, ?), finished_at = NULL
       WHERE id = ? AND status IN ('ready', 'running', 'done')`,
      [this.ts(), batchId],
    );
  }

  /** Marks the batch done and records its counts. Throws if a row is still pending, in flight or waiting. */
  markBatchDone(batchId: string): Promise<BatchRecord> {
    return this.transaction(async (s) => {
      await s.sql.get(`SELECT id FROM batches WHERE id = ?${s.forUpdate}`, [batchId]);
      const counts = await s.countRows(batchId);
      if (counts.pending + counts.in_flight + counts.waiting > 0) {
        throw new StoreError(
          'STORE_BATCH_NOT_FINISHED',
          `Batch ${batchId} still has ${counts.pending} pending, ${counts.in_flight} in-flight and ${counts.waiting} waiting rows`,
        );
      }
      await s.sql.run(`UPDATE batches SET status = 'done', finished_at = ?, counts = ? WHERE id = ?`, [
        s.ts(),
        JSON.stringify(counts),
        batchId,
      ]);
      return (await s.getBatch(batchId))!;
    });
  }

  /** Live counts of the batch's rows by state. */
  async countRows(batchId: string): Promise<RowCounts> {
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
    for (const r of await this.sql.all<{ state: RowState; n: number }>(
      'SELECT state, COUNT(*) AS n FROM rows WHERE batch_no = ? GROUP BY state',
      [await this.batchNo(batchId)],
    )) {
      counts[r.state] = r.n;
    }
    return counts;
  }

  /** Sum of `amount_cents` by row state (rows without an amount are left out). */
  async sumAmounts(batchId: string): Promise<Partial<Record<RowState, Cents>>> {
    const out: Partial<Record<RowState, Cents>> = {};
    for (const r of await this.sql.all<{ state: RowState; total: number }>(
      `SELECT state, CAST(SUM(amount_cents) AS BIGINT) AS total FROM rows
       WHERE batch_no = ? AND amount_cents IS NOT NULL GROUP BY state`,
      [await this.batchNo(batchId)],
    )) {
      out[r.state] = r.total;
    }
    return out;
  }

  // ---------------------------------------------------------------- rows

  async getRow(batchId: string, line: number): Promise<RowRecord | undefined> {
    const row = await this.sql.get<RowSql>('SELECT * FROM rows WHERE batch_no = ? AND line = ?', [
      await this.batchNo(batchId),
      line,
    ]);
    return row && toRow(row, await this.rowContext(batchId), batchId);
  }

  /**
   * Up to `limit` rows after `afterLine`, in line order, optionally only in the given states. Keyset paging: callers
   * stream a batch of any size with bounded memory, and no statement stays open across an await.
   */
  async rowsAfter(
    batchId: string,
    afterLine: number,
    limit: number,
    states: readonly RowState[] = [],
  ): Promise<RowRecord[]> {
    // The unfinished states as literals, the text of the partial index rows_unfinished's condition (migration 015),
    // so that the planner may use it; the engine's pages go by the primary key.
    const unfinished =
      states.length === UNFINISHED_ROW_STATES.length && UNFINISHED_ROW_STATES.every((st) => states.includes(st));
    const filter = unfinished
      ? `AND state IN (${UNFINISHED_SQL})`
      : states.length > 0
        ? `AND state IN (${states.map(() => '?').join(', ')})`
        : '';
    const rows = await this.sql.all<RowSql>(
      `SELECT * FROM rows WHERE batch_no = ? AND line > ? ${filter} ORDER BY line LIMIT ?`,
      [await this.batchNo(batchId), afterLine, ...(unfinished ? [] : states), limit],
    );
    this.hint(batchId, rows);
    return this.toRows(batchId, rows);
  }

  /** The batch's rows at these lines, in line order (rows claimed by a daemon: ./leases.ts `claimRows`). */
  async rowsAt(batchId: string, lines: readonly number[]): Promise<RowRecord[]> {
    if (lines.length === 0) return [];
    const rows = await this.sql.all<RowSql>(
      `SELECT * FROM rows WHERE batch_no = ? AND line IN (${lines.map(() => '?').join(', ')}) ORDER BY line`,
      [await this.batchNo(batchId), ...lines],
    );
    this.hint(batchId, rows);
    return this.toRows(batchId, rows);
  }

  /** PostgreSQL: the unfinished rows of a page read, as hints of the hot writes to come (`RowHints`). */
  private hint(batchId: string, rows: readonly RowSql[]): void {
    const hints = this.shared.hints;
    if (hints === undefined) return;
    for (const r of rows) {
      if (UNFINISHED_ROW_STATES.includes(r.state)) hints.set(batchId, r.line, { state: r.state, outputs: r.outputs });
    }
  }

  /** Rows of one batch as records (its context read once, and only when there is a row). */
  private async toRows(batchId: string, rows: readonly RowSql[]): Promise<RowRecord[]> {
    if (rows.length === 0) return [];
    const context = await this.rowContext(batchId);
    const out: RowRecord[] = [];
    for (const r of rows) out.push(toRow(r, context, batchId));
    return out;
  }

  /** Like rowsAfter, for the result file (`ResultRowRecord`): duplicates come with their owner's state and outputs. */
  async resultRowsAfter(batchId: string, afterLine: number, limit: number): Promise<ResultRowRecord[]> {
    const rows = await this.sql.all<ResultRowSql>(
      `SELECT r.line, r.record, r.cells, r.state, r.error_code, r.error_message, r.outputs, r.amount_cents,
         r.duplicate_of_batch, r.duplicate_of_line, o.state AS owner_state, o.outputs AS owner_outputs,
         ob.file_name AS owner_file,
         (SELECT i.answer_name FROM intakes i WHERE i.batch_id = r.duplicate_of_batch LIMIT 1) AS owner_answer
       FROM rows r
         LEFT JOIN batches ob ON ob.id = r.duplicate_of_batch
         LEFT JOIN rows o ON o.batch_no = ob.batch_no AND o.line = r.duplicate_of_line
       WHERE r.batch_no = ? AND r.line > ? ORDER BY r.line LIMIT ?`,
      [await this.batchNo(batchId), afterLine, limit],
    );
    if (rows.length === 0) return [];
    const context = await this.rowContext(batchId);
    const out: ResultRowRecord[] = [];
    for (const r of rows) {
      const cells = parseJson<string[]>(r.cells);
      out.push({
        batchId,
        line: r.line,
        record: storedRecord(r, cells, context, batchId),
        cells,
        state: r.state,
        errorCode: r.error_code,
        errorMessage: r.error_message,
        outputs: decodeNullable<Record<string, OutputValue>>(r.outputs) ?? {},
        amountCents: r.amount_cents,
        duplicateOf:
          r.duplicate_of_batch === null ? null : { batchId: r.duplicate_of_batch, line: r.duplicate_of_line ?? 0 },
        owner:
          r.owner_state === null
            ? null
            : {
                state: r.owner_state,
                outputs: decodeNullable(r.owner_outputs) ?? {},
                fileName: r.owner_file ?? '',
                line: r.duplicate_of_line!,
                answerName: r.owner_answer,
              },
      });
    }
    return out;
  }

  /** Rows left uncertain, across batches (for `remessa status`), oldest first. */
  async uncertainRows(limit = 100): Promise<Array<RowRecord & { fileName: string; kind: KindName }>> {
    return (
      await this.sql.all<
        RowSql & {
          batch_id: string;
          file_name: string;
          kind: KindName;
          batch_columns: string | null;
          key_namespace: string | null;
        }
      >(
        `SELECT r.*, b.id AS batch_id, b.file_name, b.kind, b.columns AS batch_columns, b.key_namespace
         FROM rows r JOIN batches b ON b.batch_no = r.batch_no
         WHERE r.state = 'uncertain' ORDER BY r.updated_at, b.id, r.line LIMIT ?`,
        [limit],
      )
    ).map((r) => ({
      ...toRow(
        r,
        {
          columns: parseJson<Array<string | null>>(r.batch_columns) ?? undefined,
          kind: r.kind,
          keyNamespace: r.key_namespace ?? undefined,
        },
        r.batch_id,
      ),
      fileName: r.file_name,
      kind: r.kind,
    }));
  }

  /**
   * What the batch's rows are read with (its record columns, kind and key namespace), read once per batch and kept:
   * none of them changes once the batch exists. Undefined for a batch that does not exist (not kept).
   */
  private async rowContext(batchId: string): Promise<RowContext | undefined> {
    let context = this.contextByBatch.get(batchId);
    if (context === undefined) {
      const r = await this.sql.get<{ columns: string | null; kind: KindName; key_namespace: string | null }>(
        'SELECT columns, kind, key_namespace FROM batches WHERE id = ?',
        [batchId],
      );
      if (!r) return undefined;
      context = {
        columns: parseJson<Array<string | null>>(r.columns) ?? undefined,
        kind: r.kind,
        keyNamespace: r.key_namespace ?? undefined,
      };
      this.contextByBatch.set(batchId, context);
    }
    return context;
  }

  /**
   * The batch's number (migration 021): the per-row tables (rows, steps, natural_keys, resolutions) refer to their
   * batch by it, and every statement on them binds it; callers name batches by their ids, and never see it. Read once
   * per batch and kept (a batch's number never changes; on PostgreSQL the database hands it out, so every daemon of
   * one store reads the same), shared with the transaction views: the hot path runs no statement for it. 0 for a batch
   * that does not exist (not kept: a statement bound to it finds nothing, as one bound to the unknown id did).
   * What keeps the cache true: every read of a batch's own record keeps its number again (`remember`: `getBatch`,
   * `requireBatch`, and so `createBatch`), and a transaction or savepoint that fails forgets them all
   * (`forgetNumbers`). A number read in a transaction that created its batch and was then undone is so never used:
   * SQLite gives it to the next batch created, and PostgreSQL, running a deadlock's victim again, creates the batch
   * anew under a new number, which its `createBatch` keeps.
   */
  async batchNo(batchId: string): Promise<number> {
    const known = this.noByBatch.get(batchId);
    if (known !== undefined) return known;
    const r = await this.sql.get<{ batch_no: number }>('SELECT batch_no FROM batches WHERE id = ?', [batchId]);
    if (r === undefined) return 0;
    this.noByBatch.set(batchId, Number(r.batch_no));
    return Number(r.batch_no);
  }

  /** Keeps the number of a batch whose record was read (`batchNo`). */
  private remember(row: BatchSql): void {
    this.noByBatch.set(row.id, Number(row.batch_no));
  }

  /** A transaction or savepoint failed: the numbers read in it may be of batches it created (`batchNo`). */
  private forgetNumbers(): void {
    this.noByBatch.clear();
  }

  /** Number of rows that still have work (pending, in flight, uncertain) in the batch. */
  async countUnfinished(batchId: string): Promise<number> {
    const r = await this.sql.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM rows WHERE batch_no = ? AND state IN (${UNFINISHED_SQL})`,
      [await this.batchNo(batchId)],
    );
    return r!.n;
  }

  // ---------------------------------------------------------------- steps and transitions

  /** The row's step records, by step name. */
  async getSteps(batchId: string, line: number): Promise<Map<string, StepRecord>> {
    const out = new Map<string, StepRecord>();
    for (const s of await this.sql.all<StepSql>('SELECT * FROM steps WHERE batch_no = ? AND line = ?', [
      await this.batchNo(batchId),
      line,
    ])) {
      out.set(s.step, toStep(s));
    }
    return out;
  }

  /**
   * The steps of the batch's rows from `firstLine` to `lastLine`, by line, in one statement: the engine reads a page's
   * steps with its page of rows (a row without steps is absent).
   */
  async getStepsBetween(
    batchId: string,
    firstLine: number,
    lastLine: number,
  ): Promise<Map<number, Map<string, StepRecord>>> {
    const out = new Map<number, Map<string, StepRecord>>();
    for (const s of await this.sql.all<StepSql & { line: number }>(
      'SELECT * FROM steps WHERE batch_no = ? AND line BETWEEN ? AND ?',
      [await this.batchNo(batchId), firstLine, lastLine],
    )) {
      let steps = out.get(s.line);
      if (steps === undefined) {
        steps = new Map();
        out.set(s.line, steps);
      }
      steps.set(s.step, toStep(s));
    }
    return out;
  }

  /** Moves the row to `to` (checked against the machine in rows.ts). */
  transitionRow(
    batchId: string,
    line: number,
    to: RowState,
    patch: { currentStep?: string | null; error?: RowError | null; outputs?: Record<string, OutputValue> } = {},
  ): Promise<void> {
    return this.unit((s) => s.applyRowTransition(batchId, line, to, patch));
  }

  private async applyRowTransition(
    batchId: string,
    line: number,
    to: RowState,
    patch: { currentStep?: string | null; error?: RowError | null; outputs?: Record<string, OutputValue> },
  ): Promise<void> {
    const cur = await this.lockRow(batchId, line);
    if (!cur) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
    assertRowTransition(cur.state, to, `row (line ${line})`);
    this.shared.hints?.delete(batchId, line);
    const sets = ['state = ?', 'updated_at = ?'];
    const params: SqlParam[] = [to, this.ts()];
    if (patch.currentStep !== undefined) {
      sets.push('current_step = ?');
      params.push(patch.currentStep);
    }
    if (patch.error !== undefined) {
      sets.push('error_code = ?', 'error_message = ?');
      params.push(patch.error?.code ?? null, patch.error?.message ?? null);
    }
    if (patch.outputs !== undefined) {
      sets.push('outputs = ?');
      params.push(encodeObject({ ...(decodeNullable(cur.outputs) ?? {}), ...patch.outputs }));
    }
    await this.sql.run(`UPDATE rows SET ${sets.join(', ')} WHERE batch_no = ? AND line = ?`, [
      ...params,
      await this.batchNo(batchId),
      line,
    ]);
    if (ANSWERED_ROW_STATES.includes(to)) await this.markAnswersStale(batchId, line);
  }

  /**
   * The durable "answer is stale" mark (src/store/intakes.ts), in the same transaction as the row's change: bumps the
   * `changes` of the row's batch and of every batch holding a duplicate of the row (their result lines show it).
   */
  private async markAnswersStale(
    batchId: string,
    line: number,
    /** The batches holding duplicates of the row, when read already in this transaction with the row locked. */
    duplicatedIn?: readonly string[],
  ): Promise<void> {
    const dups =
      duplicatedIn ??
      batchList(
        (
          await this.sql.get<{ dups: string | null }>(
            `SELECT ${this.duplicatedIn('?')} AS dups FROM rows r WHERE r.batch_no = ? AND r.line = ?`,
            [batchId, await this.batchNo(batchId), line],
          )
        )?.dups ?? null,
      );
    const end = this.atCommit;
    // Every caller is a unit's view (a transaction's): the bumps have their place there.
    if (end === undefined) throw new StoreError('STORE_NOT_IN_TRANSACTION', 'markAnswersStale outside a transaction');
    // Applied at the end of the transaction, in batch id order (`AtCommit`), in the same transaction as the row.
    for (const id of [batchId, ...dups]) end.bumps.set(id, (end.bumps.get(id) ?? 0) + 1);
  }

  /**
   * The batches other than its own holding duplicates of the row `r` of a statement, as a JSON array of their ids
   * (`batchList` reads it; NULL or [] when none): what `markAnswersStale` bumps. `id`: the SQL of the row's batch id
   * (a duplicate names its owner's batch by its id: `rows.duplicate_of_batch`), a parameter or a column.
   */
  private duplicatedIn(id: string): string {
    const list =
      this.driver.dialect === 'postgres' ? 'json_agg(DISTINCT db.id)::text' : 'json_group_array(DISTINCT db.id)';
    return `(SELECT ${list} FROM rows d JOIN batches db ON db.batch_no = d.batch_no
      WHERE d.duplicate_of_batch = ${id} AND d.duplicate_of_line = r.line AND d.batch_no <> r.batch_no)`;
  }

  /** Moves the step to `to` (checked against the step machine in rows.ts); `attempt` adds one to its attempts. */
  transitionStep(
    batchId: string,
    line: number,
    step: string,
    to: StepState,
    patch: { attempt?: boolean; output?: StepOutput | null; error?: RowError | null } = {},
  ): Promise<void> {
    return this.unit((s) => s.applyStepTransition(batchId, line, step, to, patch));
  }

  private async applyStepTransition(
    batchId: string,
    line: number,
    step: string,
    to: StepState,
    patch: { attempt?: boolean; output?: StepOutput | null; error?: RowError | null },
  ): Promise<void> {
    // The row's lock guards its steps too (a step that does not exist yet has no row of its own to lock).
    if (this.driver.dialect === 'postgres') await this.lockRow(batchId, line);
    const no = await this.batchNo(batchId);
    const cur = await this.sql.get<{ state: StepState }>(
      'SELECT state FROM steps WHERE batch_no = ? AND line = ? AND step = ?',
      [no, line, step],
    );
    assertStepTransition(cur?.state ?? null, to, `step ${step} (line ${line})`);
    await this.sql.run(STEP_UPSERT, [
      no,
      line,
      step,
      to,
      patch.attempt ? 1 : 0,
      patch.output ? JSON.stringify(patch.output) : null,
      patch.error?.code ?? null,
      patch.error?.message ?? null,
      this.ts(),
    ]);
  }

  /**
   * The row and the state of one of its steps, in one statement on SQLite (its one writer: nothing comes between): the
   * reads of the hot path (`recordIntent` on SQLite, `recordStepDone`). STORE_NO_ROW when there is no row. On
   * PostgreSQL the row is locked first by a statement of its own (`lockRow`; the row's lock guards its steps too): a
   * statement reads what was committed when it started, so the step must be read by a statement that starts once the
   * lock is held (a locking join would give the row as the transaction before left it but its step as it was before
   * that).
   */
  private async rowAndStep(
    batchId: string,
    line: number,
    step: string,
    /** Another step of the row whose state is read too (`other_state`): a read answer riding in an intent. */
    other?: string,
  ): Promise<{
    state: RowState;
    outputs: string | null;
    step_state: StepState | null;
    other_state?: StepState | null;
  }> {
    if (this.driver.dialect === 'postgres') await this.lockRow(batchId, line);
    const no = await this.batchNo(batchId);
    const cur =
      other === undefined
        ? await this.sql.get<{ state: RowState; outputs: string | null; step_state: StepState | null }>(
            `SELECT r.state, r.outputs, s.state AS step_state FROM rows r
         LEFT JOIN steps s ON s.batch_no = r.batch_no AND s.line = r.line AND s.step = ?
       WHERE r.batch_no = ? AND r.line = ?`,
            [step, no, line],
          )
        : await this.sql.get<{
            state: RowState;
            outputs: string | null;
            step_state: StepState | null;
            other_state: StepState | null;
          }>(
            `SELECT r.state, r.outputs, s.state AS step_state, o.state AS other_state FROM rows r
         LEFT JOIN steps s ON s.batch_no = r.batch_no AND s.line = r.line AND s.step = ?
         LEFT JOIN steps o ON o.batch_no = r.batch_no AND o.line = r.line AND o.step = ?
       WHERE r.batch_no = ? AND r.line = ?`,
            [step, other, no, line],
          );
    if (!cur) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
    return cur;
  }

  /**
   * `rowAndStep`, with every step record of the row (`steps`) and the batches holding duplicates of it
   * (`duplicatedIn`, for `markAnswersStale`) in the same statement: one result row per step (a row with no step: one,
   * its step columns NULL), each with the same list.
   */
  private async rowAndSteps(
    batchId: string,
    line: number,
    step: string,
  ): Promise<{
    state: RowState;
    outputs: string | null;
    step_state: StepState | null;
    steps: HeldStep[];
    duplicatedIn: string[];
  }> {
    if (this.driver.dialect === 'postgres') await this.lockRow(batchId, line);
    const found = await this.sql.all<
      { state: RowState; outputs: string | null; dups: string | null } & NullableHeldStep
    >(
      `SELECT r.state, r.outputs, s.step, s.state AS step_state, s.attempts, s.output, s.error_code,
         ${this.duplicatedIn('?')} AS dups
       FROM rows r LEFT JOIN steps s ON s.batch_no = r.batch_no AND s.line = r.line
       WHERE r.batch_no = ? AND r.line = ?`,
      [batchId, await this.batchNo(batchId), line],
    );
    const first = found[0];
    if (!first) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
    const steps: HeldStep[] = [];
    for (const f of found) {
      if (f.step === null) continue;
      steps.push({
        step: f.step,
        state: f.step_state!,
        attempts: f.attempts!,
        output: f.output,
        error_code: f.error_code,
      });
    }
    return {
      state: first.state,
      outputs: first.outputs,
      step_state: stateOf(steps, step),
      steps,
      duplicatedIn: batchList(first.dups),
    };
  }

  /**
   * Rule 1 of rows.ts: the intent of the step, committed before its request leaves. Row -> in_flight. The same
   * checks and writes as a step transition to `intent` and a row transition to `in_flight`, in three statements on
   * both engines: the batch's approval (rule 1 of ./approvals.ts) is a condition of the row's write, read on its own
   * only when the row did not move; an answer riding in it is upserted with the intent's step record, in the same
   * statement.
   * - SQLite: the row and its steps read in one statement (its one writer: nothing comes between), checked, written.
   * - PostgreSQL: the row locked and read (`lockForIntent`), or, with its hint (`RowHints`), not read: the hint is a
   *   condition of the row's write; its steps read by the row's write itself (RETURNING: a statement that starts once
   *   the lock is held, as `rowAndStep` explains), and checked after it, in the same order:
   *   a write refused by a check is undone with its transaction or savepoint, as any failed write of a group. With
   *   several daemons the lease is a condition of that write too (rule 8 of ./rows.ts).
   *
   * `answered`: a read step's answer that rides in this intent (rule 9 of ./rows.ts): the same checks and writes as
   * `recordStepDone(answered.step, answered.output, last = false)` before the intent, with the row read and written
   * once for both (one step upsert more).
   */
  recordIntent(batchId: string, line: number, step: string, answered?: ReadAnswer): Promise<void> {
    return this.unit((s) => s.intentIn(batchId, line, step, answered));
  }

  /**
   * `recordIntent`'s statements, on the store or view `unit` gives. A method, not a closure made at each call: V8
   * drops a closure's optimized code at each full collection, and the hot path's closures were compiled again after
   * each one (docs/performance.md (d) eleventh pass). The same holds for the other methods named `...In` below.
   */
  private async intentIn(batchId: string, line: number, step: string, answered: ReadAnswer | undefined): Promise<void> {
    const daemon = this.shared.daemon;
    const pg = this.driver.dialect === 'postgres';
    const no = await this.batchNo(batchId);
    let cur: { state: RowState; outputs: string | null };
    if (pg) {
      // The row as this process last saw it, as the write's condition: no statement to lock and read it first.
      const hint = this.shared.hints!.get(batchId, line);
      if (hint !== undefined && (await this.intentOnHint(hint, daemon, batchId, no, line, step, answered))) return;
      cur = await this.lockForIntent(daemon, batchId, line);
    } else {
      // Rule 8 of ./rows.ts: held by this daemon (a SQLite store has one daemon: never bound, kept for the rule).
      if (daemon) await this.assertHeldForIntent(daemon, batchId, line);
      const read = await this.rowAndStep(batchId, line, step, answered?.step);
      checkIntent(read.state, read, line, step, answered);
      cur = read;
    }
    const now = this.ts();
    const outputs = answered === undefined ? undefined : mergedOutputs(cur.outputs, answered.output);
    // The row moves only if its batch may start an effect (rule 1 of ./approvals.ts, in the intent's own
    // transaction) and, with several daemons, while the database says this one's lease holds (rule 8 of
    // ./rows.ts); if it did not move, nothing is written and `assertLeaseInDb`, then `assertEffectAllowed`, say
    // why. On PostgreSQL a decision committed between the two statements may have allowed it since: then the row
    // moves, as a read of the approval before the write would have let it (the lease was just read as live).
    // The step records: the intent's, and the read answer's riding in it.
    const records = intentRecords(no, line, step, now, answered);
    const m: IntentMove = { pg, batchId, no, line, step, now, outputs, answered, records };
    const lease = daemon?.leaseHeldSql(this);
    const allowed = lease ? ` AND ${EFFECT_ALLOWED} AND ${lease.sql}` : ` AND ${EFFECT_ALLOWED}`;
    let moved = await this.intentMove(m, allowed, lease ? [no, ...lease.params] : [no]);
    if (moved === undefined) {
      // Refused by a condition: the transitions are checked first all the same (as on SQLite, where they were).
      if (pg)
        checkIntent(cur.state, await this.intentStepStates(batchId, line, step, answered?.step), line, step, answered);
      if (daemon) await daemon.assertLeaseInDb(this);
      await assertEffectAllowed(this, batchId);
      moved = await this.intentMove(m, '', []);
    }
    if (pg) {
      if (moved === undefined) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
      // Checked after the write (its step records with it): a refusal undoes them with the transaction or savepoint.
      checkIntent(cur.state, moved, line, step, answered);
      this.shared.hints!.set(batchId, line, {
        state: 'in_flight',
        outputs: outputs === undefined ? cur.outputs : outputs,
      });
      return;
    }
    await this.sql.run(answered === undefined ? STEP_UPSERT : STEP_UPSERT_TWO, records);
  }

  /**
   * PostgreSQL, `recordIntent` on the row's hint (`RowHints`): the row's write of `intentIn` with the hint as its
   * condition besides the approval's and the lease's, and the same checks after it on the state the condition proved.
   * false: the row did not move (the hint was wrong, or a condition refused): nothing was written, and `intentIn`
   * takes the locked path, which says why when a condition refuses.
   */
  private async intentOnHint(
    hint: RowHint,
    daemon: RowHolder | undefined,
    batchId: string,
    no: number,
    line: number,
    step: string,
    answered: ReadAnswer | undefined,
  ): Promise<boolean> {
    daemon?.assertLive();
    const now = this.ts();
    const outputs = answered === undefined ? undefined : mergedOutputs(hint.outputs, answered.output);
    const records = intentRecords(no, line, step, now, answered);
    const entry: InFlightEntry = { pg: true, batchId, no, line, step, now, outputs, answered, records, hint };
    const moved = await this.inFlightOnHint(entry, true);
    if (moved === undefined) return false;
    checkIntent(hint.state, moved, line, step, answered);
    this.shared.hints!.set(batchId, line, {
      state: 'in_flight',
      outputs: outputs === undefined ? hint.outputs : outputs,
    });
    return true;
  }

  /** The row's write of `recordIntent` (`intentIn`), on the condition given; undefined when the row did not move. */
  private async intentMove(
    m: IntentMove,
    condition: string,
    params: SqlParam[],
  ): Promise<IntentStepStates | undefined> {
    const { outputs, step, no, line, answered } = m;
    const sql = `UPDATE rows SET state = 'in_flight', updated_at = ?, current_step = ?, error_code = NULL, error_message = NULL${
      outputs === undefined ? '' : ', outputs = ?'
    } WHERE batch_no = ? AND line = ?${condition}`;
    const all = [m.now, step, ...(outputs === undefined ? [] : [outputs]), no, line, ...params];
    // SQLite: the states were read and checked before the write; what is returned only says the row moved.
    if (!m.pg) return (await this.sql.run(sql, all)).changes === 0 ? undefined : { step_state: null };
    // PostgreSQL, one statement: the row's write returns its steps' states as they were (the statement's
    // snapshot), and the step records are upserted only if the row moved.
    return this.sql.get<IntentStepStates>(
      `WITH moved AS (${sql} RETURNING ${intentStepStatesSql(answered !== undefined)}),
         recorded AS (${stepUpsertIfMoved(answered === undefined ? 1 : 2)})
       SELECT * FROM moved`,
      [...all, ...intentStepStatesParams(step, answered?.step), ...m.records],
    );
  }

  /**
   * `inFlightWrite` of one row: in a group (./group-batch.ts), parked for the group's statement for its rows; alone,
   * the same statement for this row.
   */
  private async inFlightOnHint(entry: InFlightEntry, intent: boolean): Promise<IntentStepStates | undefined> {
    const group = this.group;
    if (group === undefined) return (await this.inFlightWrite(this.sql, [entry], intent))[0];
    return group.batch.park(intent ? group.intents : group.answers, entry);
  }

  /**
   * Rows moved in flight on their hints (`RowHints`), one statement for all (a group's rows, ./group-batch.ts, or one
   * row): `intentOnHint`'s write (`intent`: the holder's, the approval's and the lease's conditions besides the
   * hint's) or `stepDoneOnHint`'s (not held by another daemon, as `lockRow` refuses). Each row moved only on its own
   * conditions, its step records upserted only if it moved, its steps' states returned as they were. Each entry's
   * result at its index: undefined for a row that did not move.
   */
  private async inFlightWrite(
    sql: SqlExecutor,
    entries: readonly InFlightEntry[],
    intent: boolean,
  ): Promise<Array<IntentStepStates | undefined>> {
    const daemon = this.shared.daemon;
    const lease = intent ? daemon?.leaseHeldSql(this) : undefined;
    const allowed = intent ? ` AND ${effectAllowed('r.batch_no')}` : '';
    const stateOf = (step: string) =>
      `(SELECT st.state FROM steps st WHERE st.batch_no = r.batch_no AND st.line = r.line AND st.step = ${step})`;
    const moved = await onePerRow(entries, (kept) => {
      const rows: SqlParam[] = [];
      const records: SqlParam[] = [];
      for (const e of kept) {
        const outputs = e.outputs === undefined ? [0, null] : [1, e.outputs];
        rows.push(e.no, e.line, e.now, e.step, e.answered?.step ?? null, ...outputs, e.hint.state, e.hint.outputs);
        records.push(...e.records);
      }
      return sql.all<IntentStepStates & MovedRow>(
        `WITH moved AS (UPDATE rows AS r SET state = 'in_flight', updated_at = v.now, current_step = v.step,
         error_code = NULL, error_message = NULL,
         outputs = CASE WHEN v.set_outputs = 1 THEN v.outputs ELSE r.outputs END
       FROM (VALUES ${kept.map(() => '(?::integer, ?::integer, ?, ?, ?, ?::integer, ?, ?, ?)').join(', ')})
         AS v (batch_no, line, now, step, other, set_outputs, outputs, hint_state, hint_outputs)
       WHERE r.batch_no = v.batch_no AND r.line = v.line${hintCondition(daemon, intent)}${allowed}${
         lease === undefined ? '' : ` AND ${lease.sql}`
       }
       RETURNING r.batch_no, r.line, ${stateOf('v.step')} AS step_state, ${stateOf('v.other')} AS other_state),
         recorded AS (INSERT INTO steps (batch_no, line, step, state, attempts, output, error_code, error_message,
           updated_at)
         SELECT rec.* FROM (VALUES ${Array.from({ length: records.length / 9 }, () => STEP_RECORD_VALUES).join(', ')})
           AS rec (batch_no, line, step, state, attempts, output, error_code, error_message, updated_at)
         JOIN moved ON moved.batch_no = rec.batch_no AND moved.line = rec.line
         ${STEP_UPSERT_CONFLICT})
       SELECT * FROM moved`,
        [...rows, ...(daemon === undefined ? [] : [daemon.name]), ...(lease?.params ?? []), ...records],
      );
    });
    // Without a riding answer the states are the step's alone, as `intentMove` and `stepDoneOnHint` return them.
    return moved.map((m, i) =>
      m === undefined
        ? undefined
        : entries[i]!.answered === undefined
          ? { step_state: m.step_state }
          : { step_state: m.step_state, other_state: m.other_state ?? null },
    );
  }

  /**
   * PostgreSQL: the row locked for its intent (see `recordIntent`), its state and outputs as locked. With several
   * daemons, rule 8 of ./rows.ts as `assertHeldForIntent` checks it: held by this daemon, not by another or none.
   */
  private async lockForIntent(
    daemon: RowHolder | undefined,
    batchId: string,
    line: number,
  ): Promise<{ state: RowState; outputs: string | null }> {
    daemon?.assertLive();
    const row = await this.sql.get<{ state: RowState; outputs: string | null; holder: string | null }>(
      `SELECT state, outputs, holder FROM rows WHERE batch_no = ? AND line = ?${this.forUpdate}`,
      [await this.batchNo(batchId), line],
    );
    if (!row) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
    if (daemon) assertHeldBy(daemon, row.holder, batchId, line);
    return row;
  }

  /** The states of an intent's step and of the read step riding in it, read on their own (`recordIntent`). */
  private async intentStepStates(
    batchId: string,
    line: number,
    step: string,
    other: string | undefined,
  ): Promise<IntentStepStates> {
    const sql = `SELECT ${intentStepStatesSql(other !== undefined)} FROM rows WHERE batch_no = ? AND line = ?`;
    const params = [...intentStepStatesParams(step, other), await this.batchNo(batchId), line];
    return (await this.sql.get<IntentStepStates>(sql, params))!;
  }

  /**
   * Several daemons (./leases.ts): a step is sent only by the daemon that holds its row (claimed before) and whose lease
   * the database says is live, checked in the intent's transaction with the row locked: STORE_ROW_NOT_HELD here,
   * STORE_LEASE_LOST from the local deadline here or from the database by the intent's row write (`recordIntent`).
   */
  private async assertHeldForIntent(daemon: RowHolder, batchId: string, line: number): Promise<void> {
    daemon.assertLive();
    const row = await this.sql.get<{ holder: string | null }>(
      `SELECT holder FROM rows WHERE batch_no = ? AND line = ?${this.forUpdate}`,
      [await this.batchNo(batchId), line],
    );
    if (row) assertHeldBy(daemon, row.holder, batchId, line);
  }

  /**
   * The step answered: its output is stored and merged into the row's outputs; the row succeeds after its last step.
   * One read of the row and one write of it (this runs once per step of every row: the hot path of a run).
   *
   * Storage: a step's output is kept on its step record only while the row is unfinished (a resumed row hands the done
   * steps' outputs to the next ones). When the row succeeds, every step output that the row's merged `outputs` holds
   * whole (each of its keys with the same value) is dropped from its step record: it would repeat the row's outputs
   * byte for byte. An output that a later step overwrote in part stays on its step (nothing an audit reads is lost).
   */
  recordStepDone(batchId: string, line: number, step: string, output: StepOutput, last: boolean): Promise<void> {
    return this.unit((s) => s.stepDoneIn(batchId, line, step, output, last));
  }

  /** `recordStepDone`'s statements, on the store or view `unit` gives (see `intentIn`). */
  private async stepDoneIn(
    batchId: string,
    line: number,
    step: string,
    output: StepOutput,
    last: boolean,
  ): Promise<void> {
    // The last step reads every step of the row with it (which of them to keep is decided below); another, its own.
    // PostgreSQL's last step: the row locked and read, then its steps and duplicates read by the row's write
    // (RETURNING, a statement that starts once the lock is held) and checked after it, as `recordIntent` does.
    // With the row's hint (`RowHints`), that write carries it as its condition instead of the lock's statement.
    const late = last && this.driver.dialect === 'postgres';
    const no = await this.batchNo(batchId);
    let withSteps = last && !late ? await this.rowAndSteps(batchId, line, step) : undefined;
    let cur!: { state: RowState; outputs: string | null };
    let merged!: Record<string, OutputValue>;
    /** `merged` as stored (a step before the last: the row's next hint). */
    let stored: string | null = null;
    /** The step's record was upserted by the row's write itself (`stepDoneOnHint`). */
    let recorded = false;
    const to: RowState = last ? 'succeeded' : 'in_flight';
    const now = this.ts();
    if (late) {
      const hint = this.shared.hints!.get(batchId, line);
      let back: LastStepBack | undefined;
      if (hint !== undefined) {
        this.shared.daemon?.assertLive();
        merged = mergedObject(hint.outputs, output);
        // In a group, the group's statement for its rows; alone, the same statement for this row.
        const entry: LastStepEntry = { batchId, no, line, now, outputs: encodeObject(merged), hint };
        const group = this.group;
        back =
          group === undefined
            ? (await this.lastStepsWrite(this.sql, [entry]))[0]
            : await group.batch.park(group.lastSteps, entry);
        cur = hint;
      }
      if (back === undefined) {
        const locked = await this.lockRow(batchId, line);
        if (!locked) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
        cur = locked;
        merged = mergedObject(cur.outputs, output);
        back = await this.lastStepWrite(batchId, no, line, now, merged);
        if (!back) throw new StoreError('STORE_NO_ROW', `No row ${batchId} line ${line}`);
      }
      this.shared.hints!.delete(batchId, line);
      const steps = heldSteps(back.steps);
      withSteps = { ...cur, steps, duplicatedIn: batchList(back.dups), step_state: stateOf(steps, step) };
      checkStepDone(cur.state, withSteps.step_state, line, step, last);
    } else {
      // PostgreSQL, a step before the last (a charge's creation before its PDF): on the row's hint as the last step.
      const hint = last ? undefined : this.shared.hints?.get(batchId, line);
      if (hint !== undefined) {
        merged = mergedObject(hint.outputs, output);
        stored = encodeObject(merged);
        recorded = await this.stepDoneOnHint(batchId, no, line, step, now, output, stored, hint);
        cur = hint;
      }
      if (!recorded) {
        const read = withSteps ?? (await this.rowAndStep(batchId, line, step));
        checkStepDone(read.state, read.step_state, line, step, last);
        cur = read;
        merged = mergedObject(cur.outputs, output);
        stored = encodeObject(merged);
        await this.sql.run(
          `UPDATE rows SET state = ?, updated_at = ?, current_step = ?, error_code = NULL, error_message = NULL,
           outputs = ? WHERE batch_no = ? AND line = ?`,
          [to, now, last ? null : step, stored, no, line],
        );
      }
    }
    if (!last) {
      if (!recorded)
        await this.sql.run(STEP_UPSERT, [no, line, step, 'done', 0, JSON.stringify(output), null, null, now]);
      this.shared.hints?.set(batchId, line, { state: 'in_flight', outputs: stored });
      return;
    }
    // The duplicates of the row and its step records, as read with the row (locked): nothing wrote them since.
    await this.markAnswersStale(batchId, line, withSteps!.duplicatedIn);
    // The row succeeded: which of its step records say more than "done" (see above)?
    const held = withSteps!.steps;
    const plain: string[] = [];
    let kept = false;
    for (const h of held) {
      const current = h.step === step;
      // The answered step's record becomes `done` with no error and no output (its output is the row's).
      const errorCode = current ? null : h.error_code;
      if (!current && h.state !== 'done') continue; // not possible for a succeeded row; kept as it is
      const whole = current || h.output === null || heldWhole(JSON.parse(h.output) as StepOutput, merged);
      if (whole && h.attempts <= 1 && errorCode === null) plain.push(h.step);
      else if (current) kept = true;
      else if (whole && h.output !== null)
        await this.sql.run('UPDATE steps SET output = NULL WHERE batch_no = ? AND line = ? AND step = ?', [
          no,
          line,
          h.step,
        ]);
    }
    if (kept) await this.sql.run(STEP_UPSERT, [no, line, step, 'done', 0, null, null, null, now]);
    // Dropped at the end of the transaction, with the other rows' of its group (`AtCommit`).
    for (const p of plain) this.atCommit!.drops.push([no, line, p]);
  }

  /**
   * PostgreSQL, `recordStepDone` of a step before the last on the row's hint (`RowHints`): the row's write (in flight
   * with the merged outputs) on the hint's condition and not held by another daemon (what `lockRow` refuses), with the
   * step's record upserted in the same statement only if the row moved, returning the step's state as it was before,
   * checked after it as the last step's are. `outputs`: the row's merged outputs as stored. false when the row did not
   * move (nothing written: the locked path runs). The write is `inFlightWrite`'s: in a group (./group-batch.ts), the
   * group's statement for its rows.
   */
  private async stepDoneOnHint(
    batchId: string,
    no: number,
    line: number,
    step: string,
    now: string,
    output: StepOutput,
    outputs: string | null,
    hint: RowHint,
  ): Promise<boolean> {
    this.shared.daemon?.assertLive();
    const records = [no, line, step, 'done', 0, JSON.stringify(output), null, null, now];
    const entry: InFlightEntry = {
      pg: true,
      batchId,
      no,
      line,
      step,
      now,
      outputs,
      answered: undefined,
      records,
      hint,
    };
    const moved = await this.inFlightOnHint(entry, false);
    if (moved === undefined) return false;
    checkStepDone(hint.state, moved.step_state, line, step, false);
    return true;
  }

  /**
   * PostgreSQL, the row's write of `recordStepDone` for its last step: succeeded with its merged outputs, returning its
   * step records and the batches holding duplicates of it (a statement that starts once the row's lock is held).
   * On the row's hint instead: `lastStepsWrite`.
   */
  private lastStepWrite(
    batchId: string,
    no: number,
    line: number,
    now: string,
    merged: Record<string, OutputValue>,
  ): Promise<LastStepBack | undefined> {
    return this.sql.get<LastStepBack>(
      `UPDATE rows AS r SET state = 'succeeded', updated_at = ?, current_step = NULL, error_code = NULL,
         error_message = NULL, outputs = ? WHERE r.batch_no = ? AND r.line = ?
       RETURNING ${STEPS_JSON} AS steps, ${this.duplicatedIn('?')} AS dups`,
      [now, encodeObject(merged), no, line, batchId],
    );
  }

  /**
   * `lastStepWrite` on the rows' hints (`RowHints`), one statement for all (a group's rows, ./group-batch.ts, or one
   * row): each row moved only if it still has its hinted state and outputs and is not held by another daemon (what
   * `lockRow` refuses). Each entry's result at its index: undefined for a row that did not move.
   */
  private async lastStepsWrite(
    sql: SqlExecutor,
    entries: readonly LastStepEntry[],
  ): Promise<Array<LastStepBack | undefined>> {
    const daemon = this.shared.daemon;
    return onePerRow(entries, (kept) => {
      const params: SqlParam[] = [];
      for (const e of kept) params.push(e.no, e.batchId, e.line, e.now, e.outputs, e.hint.state, e.hint.outputs);
      if (daemon !== undefined) params.push(daemon.name);
      return sql.all<LastStepBack & MovedRow>(
        `UPDATE rows AS r SET state = 'succeeded', updated_at = v.now, current_step = NULL, error_code = NULL,
           error_message = NULL, outputs = v.outputs
         FROM (VALUES ${kept.map(() => '(?::integer, ?, ?::integer, ?, ?, ?, ?)').join(', ')})
           AS v (batch_no, batch_id, line, now, outputs, hint_state, hint_outputs)
         WHERE r.batch_no = v.batch_no AND r.line = v.line${hintCondition(daemon, false)}
         RETURNING r.batch_no, r.line, ${STEPS_JSON} AS steps, ${this.duplicatedIn('v.batch_id')} AS dups`,
        params,
      );
    });
  }

  /** The step's outcome is unknown (timeout, dropped connection, 5xx): it may have acted at the bank. */
  recordStepUnknown(batchId: string, line: number, step: string, error: RowError): Promise<void> {
    return this.transitionStep(batchId, line, step, 'unknown', { error });
  }

  /** The attempt certainly did not reach the bank, or the bank refused it unprocessed (429): sending again is safe. */
  recordStepNotSent(batchId: string, line: number, step: string, error: RowError): Promise<void> {
    return this.transitionStep(batchId, line, step, 'not_sent', { error });
  }

  /** The bank said no (or a check said no): the step and the row failed. */
  recordRowFailed(batchId: string, line: number, step: string | null, error: RowError): Promise<void> {
    return this.unit(async (s) => {
      if (step !== null) await s.applyStepTransition(batchId, line, step, 'failed', { error });
      await s.applyRowTransition(batchId, line, 'failed', { error, currentStep: step });
    });
  }

  /** The row could not be finished in this run; it is retried by the next one. */
  recordRowUncertain(batchId: string, line: number, step: string | null, error: RowError): Promise<void> {
    return this.transitionRow(batchId, line, 'uncertain', { error, currentStep: step });
  }

  /**
   * The bank could not be reached and certainly nothing of the row was sent: it waits, and is sent when the bank is
   * back (src/store/rows.ts).
   */
  recordRowWaiting(batchId: string, line: number, step: string | null, error: RowError): Promise<void> {
    return this.transitionRow(batchId, line, 'waiting', { error, currentStep: step });
  }

  /** Stopped between steps (nothing unknown): back to pending, resumed by the next run. */
  parkRow(batchId: string, line: number): Promise<void> {
    return this.unit(async (s) => {
      const state = (await s.getRow(batchId, line))?.state;
      if (state === 'in_flight') await s.applyRowTransition(batchId, line, 'pending', {});
    });
  }

  // ---------------------------------------------------------------- people: status and resolve

  /**
   * The batches a person's reference names, newest first: the full id; a unique prefix of it or the 8-character tag
   * at its end (`20261123T134049Z-5f3c9e21`: the part after the take time, as answer names show it), 4 characters at
   * least; or the file name as dropped, or a path ending in it (several batches when files of that name were dropped
   * more than once).
   */
  async findBatches(ref: string): Promise<BatchRecord[]> {
    const text = ref.trim();
    const exact = await this.getBatch(text);
    if (exact) return [exact];
    const name = text.split(/[\\/]/).pop() ?? text;
    const byName = (
      await this.sql.all<BatchSql>('SELECT * FROM batches WHERE file_name = ? ORDER BY created_at DESC, id', [name])
    ).map(toBatch);
    if (byName.length > 0) return byName;
    // Only letters, digits, `~` and `-`: nothing LIKE reads as a wildcard.
    if (!/^[0-9A-Za-z~-]{4,}$/.test(text)) return [];
    const lower = text.toLowerCase();
    return (
      await this.sql.all<BatchSql>(
        `SELECT * FROM batches WHERE lower(id) LIKE ? OR lower(id) LIKE ?
         ORDER BY created_at DESC, id`,
        [`${lower}%`, `%-${lower}%`],
      )
    ).map(toBatch);
  }

  /**
   * The batch's `duplicate` rows whose original has not succeeded (still waiting, in flight or uncertain): nothing of
   * theirs is done yet, so a run that answers them has not done all its file asked (`remessa run`'s exit code).
   */
  async duplicatesNotSucceeded(batchId: string): Promise<number> {
    const r = await this.sql.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM rows r JOIN batches ob ON ob.id = r.duplicate_of_batch
         JOIN rows o ON o.batch_no = ob.batch_no AND o.line = r.duplicate_of_line
       WHERE r.batch_no = ? AND r.state = 'duplicate' AND o.state <> 'succeeded'`,
      [await this.batchNo(batchId)],
    );
    return Number(r!.n);
  }

  /**
   * Rows of the batch that reached an end state or `uncertain` at or after `since` (ISO 8601 UTC, as the store
   * writes it): what a running batch has finished since it (re)started, for its rate.
   */
  async countFinishedSince(batchId: string, since: string): Promise<number> {
    const r = await this.sql.get<{ n: number }>(
      `SELECT COUNT(*) AS n FROM rows WHERE batch_no = ? AND updated_at >= ?
         AND state IN ('succeeded', 'failed', 'uncertain')`,
      [await this.batchNo(batchId), since],
    );
    return r!.n;
  }

  /**
   * A person settles an `uncertain` row (src/store/rows.ts, "settled by a person"): the row becomes `succeeded` or
   * `failed`, and who, when and why are recorded in `resolutions`, in one transaction. Throws ROW_NOT_UNCERTAIN for a
   * row in any other state (nothing changes), STORE_NO_ROW for a line the batch does not have. A failed row gives its
   * natural key up (rule 4): the person said the bank did not do it, so the same row may be sent again later.
   * Throws ROW_NOTHING_SENT for `succeeded` on a row of which no request with an effect ever left (no step in
   * `intent` or `unknown`): the bank cannot have done it (rule 7).
   */
  resolveRow(batchId: string, line: number, settlement: Settlement): Promise<Resolution> {
    const locale = settlement.locale ?? DEFAULT_LOCALE;
    return this.transaction(async (s) => {
      const batch = await s.requireBatch(batchId);
      await s.lockRow(batchId, line); // a second settlement at the same moment waits, then finds it settled
      const row = await s.getRow(batchId, line);
      if (!row) {
        throw new StoreError(
          'STORE_NO_ROW',
          t(locale, 'RESOLVE.noLine', { file: batch.fileName, batch: shortBatchId(batchId), line }),
        );
      }
      if (row.state !== 'uncertain') {
        const settled = await s.getResolution(batchId, line);
        throw new StoreError(
          'ROW_NOT_UNCERTAIN',
          t(locale, 'RESOLVE.notUncertain', {
            line,
            file: batch.fileName,
            state: row.state,
            by: settled?.by,
            at: settled ? instant(settled.at) : undefined,
          }),
        );
      }
      // Succeeded says the bank did it: only a row with a request that may have acted (a step in `intent` or
      // `unknown`). A row left uncertain before any (a lookup that got no answer, a batch that waits for approval:
      // rule 1 of ./approvals.ts) certainly was not done, however a person reads the statement.
      if (
        settlement.as === 'succeeded' &&
        (await s.sql.get(
          `SELECT 1 AS sent FROM steps WHERE batch_no = ? AND line = ? AND state IN ('intent', 'unknown')`,
          [await s.batchNo(batchId), line],
        )) === undefined
      ) {
        throw new StoreError(
          'ROW_NOTHING_SENT',
          t(locale, 'RESOLVE.nothingSent', { line, file: batch.fileName, step: row.currentStep ?? undefined }),
        );
      }
      const at = s.ts();
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
      await s.sql.run(
        `INSERT INTO resolutions (batch_no, line, from_state, to_state, step, error_code, error_message, resolved_by,
           resolved_at, note)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        [
          await s.batchNo(batchId),
          resolution.line,
          resolution.from,
          resolution.to,
          resolution.step,
          resolution.error?.code ?? null,
          resolution.error?.message ?? null,
          resolution.by,
          resolution.at,
          resolution.note,
        ],
      );
      await s.applyRowTransition(batchId, line, settlement.as, {
        error:
          settlement.as === 'failed'
            ? {
                code: RESOLVED_AS_FAILED,
                message: t(locale, RESOLVED_AS_FAILED, {
                  by: settlement.by,
                  at: instant(at),
                  note: settlement.note,
                }),
              }
            : null,
      });
      // The counts recorded when the batch last finished are no longer true.
      if (batch.status === 'done') {
        await s.sql.run('UPDATE batches SET counts = ? WHERE id = ?', [
          JSON.stringify(await s.countRows(batchId)),
          batchId,
        ]);
      }
      return resolution;
    });
  }

  /** How a person settled the row, if one did. */
  async getResolution(batchId: string, line: number): Promise<Resolution | undefined> {
    const r = await this.sql.get<ResolutionSql>(`${RESOLUTIONS_SQL} WHERE x.batch_no = ? AND x.line = ?`, [
      await this.batchNo(batchId),
      line,
    ]);
    return r && toResolution(r);
  }

  /** Every settlement by a person, of one batch or all, oldest first. */
  async resolutions(batchId?: string): Promise<Resolution[]> {
    const rows =
      batchId === undefined
        ? await this.sql.all<ResolutionSql>(`${RESOLUTIONS_SQL} ORDER BY x.resolved_at, b.id, x.line`)
        : await this.sql.all<ResolutionSql>(`${RESOLUTIONS_SQL} WHERE x.batch_no = ? ORDER BY x.line`, [
            await this.batchNo(batchId),
          ]);
    return rows.map(toResolution);
  }
}

/** The settlements with their batch's id (`resolutions` names its batch by number, migration 021). */
const RESOLUTIONS_SQL = 'SELECT x.*, b.id AS batch_id FROM resolutions x JOIN batches b ON b.batch_no = x.batch_no';

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
    ...(r.columns === null ? {} : { columns: JSON.parse(r.columns) as Array<string | null> }),
    ...(r.key_namespace === null ? {} : { keyNamespace: r.key_namespace }),
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

/**
 * `rows.record` of a row whose record is exactly `deriveRecord(batch columns, cells)`: the record is not stored twice
 * (migration 012). Any other record (implied or supplied values, a batch without columns, a store written before) is
 * stored whole, as JSON.
 */
const DERIVED_RECORD = '';

/** The record the reader makes of `cells` (src/csv/reader.ts `toRecord`): each named cell, trimmed, when not empty. */
function deriveRecord(columns: ReadonlyArray<string | null>, cells: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  const n = columns.length < cells.length ? columns.length : cells.length;
  for (let i = 0; i < n; i++) {
    const name = columns[i];
    if (name === null || name === undefined) continue;
    const v = cells[i]!.trim();
    if (v !== '') record[name] = v;
  }
  return record;
}

/** Whether `record` is exactly `deriveRecord(columns, cells)`: the same keys, in the same order, with the same values. */
function sameRecord(
  record: Readonly<Record<string, string>>,
  columns: ReadonlyArray<string | null>,
  cells: readonly string[],
): boolean {
  const derived = deriveRecord(columns, cells);
  const a = Object.keys(record);
  const b = Object.keys(derived);
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i] || record[a[i]!] !== derived[b[i]!]) return false;
  return true;
}

/** The step records a PostgreSQL row write returned (`recordStepDone`), from its JSON array of arrays. */
function heldSteps(json: string | null): HeldStep[] {
  if (json === null) return [];
  return (JSON.parse(json) as Array<[string, StepState, number, string | null, string | null]>).map(
    ([step, state, attempts, output, errorCode]) => ({ step, state, attempts, output, error_code: errorCode }),
  );
}

/** The state of `step` among a row's step records; null when it has none. */
function stateOf(steps: readonly HeldStep[], step: string): StepState | null {
  return steps.find((h) => h.step === step)?.state ?? null;
}

/** The states of an intent's step and of the read step riding in it (`recordIntent`). */
interface IntentStepStates {
  step_state: StepState | null;
  other_state?: StepState | null;
}

/** SQL of `IntentStepStates` for a statement on one row of `rows` (its parameters: `intentStepStatesParams`). */
function intentStepStatesSql(withOther: boolean): string {
  const of = (name: string) =>
    `(SELECT st.state FROM steps st WHERE st.batch_no = rows.batch_no AND st.line = rows.line AND st.step = ?) AS ${name}`;
  return withOther ? `${of('step_state')}, ${of('other_state')}` : of('step_state');
}

function intentStepStatesParams(step: string, other: string | undefined): SqlParam[] {
  return other === undefined ? [step] : [step, other];
}

/** Rule 8 of ./rows.ts for an intent: STORE_ROW_NOT_HELD unless `daemon` holds the row. */
function assertHeldBy(daemon: RowHolder, holder: string | null, batchId: string, line: number): void {
  if (holder !== daemon.name) {
    throw new StoreError(
      'STORE_ROW_NOT_HELD',
      `Row ${batchId} line ${line} is held by ${holder === null ? 'no daemon' : `daemon "${holder}"`}: "${daemon.name}" must claim it before sending a step`,
    );
  }
}

/** A step record's values in a SELECT's VALUES, typed: PostgreSQL cannot take them from the columns there. */
const STEP_RECORD_VALUES = '(?::integer, ?::integer, ?::text, ?::text, ?::integer, ?::text, ?::text, ?::text, ?::text)';

/** What a step record upsert does to a record already there (`stepUpsert`, `stepUpsertIfMoved`). */
const STEP_UPSERT_CONFLICT = `ON CONFLICT (batch_no, line, step) DO UPDATE SET
    state = excluded.state,
    attempts = steps.attempts + excluded.attempts,
    output = COALESCE(excluded.output, steps.output),
    error_code = excluded.error_code,
    error_message = excluded.error_message,
    updated_at = excluded.updated_at`;

/** A step's move (the row's lock, or SQLite's one writer, guards it): inserted, or its record updated. */
const STEP_UPSERT = stepUpsert(1);
/** STEP_UPSERT of two step records (two steps of one row) in one statement: a read answer riding in an intent. */
const STEP_UPSERT_TWO = stepUpsert(2);

/** The step records upsert of `n` records (nine values each, in STEP_UPSERT's order), all of different steps. */
function stepUpsert(n: number): string {
  return `INSERT INTO steps (batch_no, line, step, state, attempts, output, error_code, error_message, updated_at)
  VALUES ${Array.from({ length: n }, () => '(?, ?, ?, ?, ?, ?, ?, ?, ?)').join(', ')}
  ${STEP_UPSERT_CONFLICT}`;
}

/**
 * PostgreSQL: `stepUpsert(n)` as a part of a WITH whose part `moved` is the row's write: the records are upserted only
 * if the row moved (`recordIntent`). The values are typed: in a SELECT, PostgreSQL cannot take them from the columns.
 */
function stepUpsertIfMoved(n: number): string {
  return `INSERT INTO steps (batch_no, line, step, state, attempts, output, error_code, error_message, updated_at)
  SELECT * FROM (VALUES ${Array.from({ length: n }, () => STEP_RECORD_VALUES).join(', ')})
    AS v (batch_no, line, step, state, attempts, output, error_code, error_message, updated_at)
  WHERE EXISTS (SELECT 1 FROM moved)
  ${STEP_UPSERT_CONFLICT}`;
}

/** What a batch's rows are read with (`Store.rowContext`). */
interface RowContext {
  columns: ReadonlyArray<string | null> | undefined;
  kind: KindName;
  keyNamespace: string | undefined;
}

/** The unfinished row states as SQL literals (a partial index serves only a condition written as its own). */
const UNFINISHED_SQL = UNFINISHED_ROW_STATES.map((st) => `'${st}'`).join(', ');

function toRow(r: RowSql, context: RowContext | undefined, batchId: string): RowRecord {
  const cells = parseJson<string[]>(r.cells);
  const naturalKey = decodeKeyText(r.natural_key, cells);
  return {
    batchId,
    line: r.line,
    naturalKey,
    idempotencyKey: storedKey(r, naturalKey, context),
    record: storedRecord(r, cells, context, batchId),
    cells,
    parsed: decodeNullable(r.parsed, cells),
    state: r.state,
    currentStep: r.current_step,
    errorCode: r.error_code,
    errorMessage: r.error_message,
    outputs: decodeNullable<Record<string, OutputValue>>(r.outputs) ?? {},
    amountCents: r.amount_cents,
    duplicateOf:
      r.duplicate_of_batch === null ? null : { batchId: r.duplicate_of_batch, line: r.duplicate_of_line ?? 0 },
    updatedAt: r.updated_at,
  };
}

/** The row's record: stored, or derived again from its cells when it was exactly their reading (`DERIVED_RECORD`). */
function storedRecord(
  r: { line: number; record: string },
  cells: readonly string[] | null,
  context: RowContext | undefined,
  batchId: string,
): Record<string, string> {
  if (r.record !== DERIVED_RECORD) return JSON.parse(r.record) as Record<string, string>;
  const columns = context?.columns;
  if (columns !== undefined && cells !== null) return deriveRecord(columns, cells);
  throw new StoreError('STORE_CORRUPT', `Row ${batchId} line ${r.line}: its record cannot be read again`);
}

/**
 * The idempotency key the row is sent with: the stored one, or, when none is stored and the row has a natural key in
 * a batch with a key namespace, the one derived in that namespace (migration 015; the same derivation as at ingestion).
 */
function storedKey(r: RowSql, naturalKey: string | null, context: RowContext | undefined): string | null {
  if (r.idempotency_key !== null || naturalKey === null) return r.idempotency_key;
  if (context?.keyNamespace === undefined) return null;
  return deriveIdempotencyKey(context.keyNamespace, context.kind, naturalKey);
}

function parseJson<T>(text: string | null): T | null {
  return text === null ? null : (JSON.parse(text) as T);
}

/** Whether every key of `output` is in `merged` with the same value (the step's output adds nothing to the row's). */
function heldWhole(output: StepOutput, merged: Readonly<Record<string, OutputValue>>): boolean {
  for (const k in output) if (output[k] !== merged[k]) return false;
  return true;
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

/** The batch ids of `Store.duplicatedIn`'s JSON array (none when NULL). */
function batchList(json: string | null): string[] {
  return json === null ? [] : (JSON.parse(json) as string[]);
}

/** A step record as the last step's answer reads it (`rowAndSteps`). */
interface HeldStep {
  step: string;
  state: StepState;
  attempts: number;
  output: string | null;
  error_code: string | null;
}

/** `HeldStep` as a LEFT JOIN gives it: all NULL for a row with no step record. */
type NullableHeldStep = { step: string | null; step_state: StepState | null; attempts: number | null } & Pick<
  HeldStep,
  'output' | 'error_code'
>;

/**
 * What a transaction (or a savepoint of it) leaves to its end, run just before its COMMIT (`Store.applyAtCommit`):
 * - `bumps`: the `batches.changes` bumps, in batch id order. Why deferred: several daemons committing row changes of
 *   the same batches side by side would otherwise lock the batch rows in the order of their rows, and deadlock
 *   (PostgreSQL 40P01); one order for all (rows first, then batches by id) leaves them waiting, never deadlocked.
 * - `drops`: the step records a succeeded row no longer needs (`recordStepDone`), deleted in one statement for the
 *   whole group: a row's storage cleanup in its own transaction, no statement of its own (issue 13 §3). Nothing reads
 *   them between: the row is locked, and succeeded.
 * A savepoint's are handed to its parent only when it succeeds (`handTo`); a failed one's are dropped with it.
 */
class AtCommit {
  readonly bumps = new Map<string, number>();
  /** (batch number, line, step) of each step record to delete. */
  readonly drops: SqlParam[][] = [];

  handTo(parent: AtCommit): void {
    for (const [id, n] of this.bumps) parent.bumps.set(id, (parent.bumps.get(id) ?? 0) + n);
    for (const d of this.drops) parent.drops.push(d);
  }
}

/** Step records deleted per statement at a transaction's end (three values each). */
const DROPS_PER_STATEMENT = 300;

/** Who owns a natural key (`naturalKeyOwners`). */
interface NaturalKeyOwner {
  batch_id: string;
  /** Its batch's number (`Store.batchNo`). */
  batch_no: number;
  line: number;
  state: RowState | null;
  /** The owner row's error code (a `failed` owner settled by a person is RESOLVED_AS_FAILED). */
  error_code?: string | null;
  file_name: string | null;
  answer_name: string | null;
  /** The owner row's `parsed`, `cells` and `outputs` columns as stored. */
  parsed: string | null;
  cells: string | null;
  outputs?: string | null;
  /** An owner claimed by the ingestion under way (not read from the table): its parsed row as given. */
  fresh?: { parsed: unknown };
}

/**
 * `owner` as `SameOperation` sees it, for a row of batch `batchId`; its parsed row decoded (null when it cannot be:
 * the kind's check then takes the row for the same operation, a duplicate, as every row was before the check).
 */
function keyOwner(owner: NaturalKeyOwner, batchId: string): KeyOwner {
  let parsed: unknown = null;
  if (owner.fresh) parsed = owner.fresh.parsed;
  else {
    try {
      parsed = decodeNullable(owner.parsed, parseJson<string[]>(owner.cells));
    } catch {
      parsed = null;
    }
  }
  return {
    batchId: owner.batch_id,
    line: owner.line,
    sameBatch: owner.batch_id === batchId,
    fileName: owner.file_name,
    answerName: owner.answer_name,
    parsed,
  };
}

/** Natural keys read per statement at ingestion; rows (and claims) inserted per statement. */
const KEYS_PER_STATEMENT = 100;
const INSERTS_PER_STATEMENT = 50;

/**
 * `head VALUES (...), (...) tail` for `rows` (each the values of one tuple, all of one width), INSERTS_PER_STATEMENT
 * tuples a statement: one statement (on PostgreSQL one round trip) instead of one a row.
 */
async function insertMany(sql: SqlExecutor, head: string, rows: readonly SqlParam[][], tail = ''): Promise<void> {
  for (let i = 0; i < rows.length; i += INSERTS_PER_STATEMENT) {
    const part = rows.slice(i, i + INSERTS_PER_STATEMENT);
    const tuple = `(${part[0]!.map(() => '?').join(', ')})`;
    await sql.run(`${head} VALUES ${part.map(() => tuple).join(', ')}${tail}`, part.flat());
  }
}

/** A step as stored. */
interface StepSql {
  step: string;
  state: StepState;
  attempts: number;
  output: string | null;
  error_code: string | null;
  error_message: string | null;
}

function toStep(s: StepSql): StepRecord {
  return {
    step: s.step,
    state: s.state,
    attempts: s.attempts,
    output: parseJson(s.output),
    errorCode: s.error_code,
    errorMessage: s.error_message,
  };
}
