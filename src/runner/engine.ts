/**
 * The engine: drives the rows of one batch through their kind's steps, against the bank, through the queue, with every
 * state change in the store. The row and step state machines it follows are drawn in src/store/rows.ts.
 *
 * One batch, in two phases:
 * 1. Ingest: every record of the file is parsed by the kind and stored (valid -> pending, with its natural key and
 *    idempotency key; invalid -> rejected with every cell error; same natural key as an owning row -> duplicate), in
 *    chunks of rows per transaction. Then the policy is applied: all-or-nothing (default for kinds that move money
 *    out) rejects every valid row with BATCH_HAS_INVALID_ROWS when any row is invalid; send-valid sends the valid ones.
 *    Nothing is sent before every row is stored, so a file that turns out broken on its last line sends nothing.
 * 2. Run: the rows still pending, in flight (a crash) or uncertain (an earlier run) are read back from the store in
 *    line order, a page at a time, each taking a row slot of the queue (bounded memory), and driven step by step.
 *
 * One row, step by step (the first step without a stored output; a created charge whose PDF was not fetched only
 * fetches the PDF):
 * - effect step: the intent is committed (FULL sync) before the request leaves (rule 1 of src/store/rows.ts). A step
 *   that can be resent with its IdempotencyKey or looked up (`recover`: every effect step of the shipped kinds)
 *   commits it before its row waits for a connection of the queue, in the commit window it shares with the other
 *   rows' writes (src/store/store.ts): the commit holds no connection. A stop while the row waits records the step
 *   `not_sent` (certainly not sent; an earlier unknown outcome stays unknown, rule 6) and parks the row. A crash while
 *   it waits leaves the intent, which the next run resolves as any unknown outcome (rule 2): resent with the same key,
 *   or looked up and sent only if absent; never a second effect. The price: a crash leaves more rows to resolve so (up
 *   to the row slots of the group, not only the requests in flight), and one of them that the bank then refuses ends
 *   `uncertain` rather than `failed` unless its step has evidence (rule 5), never the reverse. A step that can be
 *   neither commits its intent inside the queue's task, at once: no row of it waits in the queue with an intent, since
 *   after a crash its row would be left `uncertain` for a person to check.
 * - answer: done (output stored, merged into the row) | the bank said no (4xx) -> failed. A read step's answer that
 *   is not the row's last is stored with the row's next write, its next intent above all (rule 9 of rows.ts).
 * - 429: the queue pauses the group; the step is `not_sent` and goes again when the group resumes. Still 429 after
 *   `maxRateLimitedAttempts` (20): the row is `waiting` (nothing was processed), sent by the next run or the daemon's
 *   next pass; `uncertain` only when an earlier attempt's outcome is unknown.
 * - no answer or 5xx, may have reached the bank: the step is `unknown`. Then:
 *     read step, or a step that sends the IdempotencyKey -> sent again (same key) per the retry policy; the step,
 *       run with `ctx.resend`, may look its effect up first and answer from it, or leave the row `uncertain` when
 *       the lookup cannot tell and the bank is not known to replay the key (pix-payments' `pay`,
 *       src/batches/pix-payments.ts);
 *     a step without key that has `recover` -> looked up first; created only if certainly absent;
 *     a step with neither (money above all) -> never resent: the row ends `uncertain`.
 * - retry budget spent -> the row ends `uncertain` with the reason; the next run of the batch (processBatch again,
 *   or resumeUnfinishedBatches) picks it up where it stands.
 * - a step may decide its row's outcome itself by throwing StepOutcomeError (`failed`: a check says the request must
 *   not go; `uncertain`: it cannot tell whether an earlier attempt took effect): no retry. A resend after an unknown
 *   outcome runs the step with `ctx.resend = true`.
 * - a refusal (4xx, or a step's `failed`) after an attempt of unknown outcome: rule 5 of rows.ts. `failed` only on
 *   proof that the first attempt did nothing (a replayed refusal; the step's `settleRefusal` evidence); the step's
 *   evidence of the row's own effect makes it done; else `uncertain` (REFUSED_AFTER_UNKNOWN_OUTCOME) with the
 *   refusal and the evidence in the message. A not-sent or 429 attempt after an unknown one keeps the step unknown.
 *
 * - the bank unreachable (certainly nothing sent: refused, DNS, TLS handshake; src/bank/errors.ts): not an outcome
 *   and no attempt used up. The row shows `waiting` (unless its step's outcome is already unknown: it keeps that),
 *   and waits at the bank gate (./bank-gate.ts): one probe per `unreachable.retryDelaysMs` step until an attempt
 *   reaches the bank, then every waiting row goes. With `unreachable.maxWaitMs` (the `run` command), rows still
 *   waiting at the limit stay `waiting` and the batch is not complete: its file is NOT answered until every row has
 *   an outcome (a `waiting` row has none yet); the next run or the daemon sends them. The daemon waits without limit.
 * - the bank refuses remessa's credentials (401/403 to any request of any row, a lookup included: src/bank/errors.ts
 *   `isCredentialsRefusal`): not an outcome either, and no attempt used up: a refusal before any processing, the same
 *   for every row until a person fixes the key. The step is `not_sent` (an earlier unknown outcome kept, rule 6), the
 *   row `waiting` (BANK_CREDENTIALS_REFUSED, saying which settings to check, never their values) unless its step's
 *   outcome is unknown, and the gate closes for credentials: other rows wait instead of being refused too, one probe
 *   per `credentialsRefused.retryEveryMs` (or at once when the daemon takes new credentials); any other answer opens
 *   it. The `run` command does not wait for a person: its rows are released at once, left `waiting` (a row whose
 *   outcome is unknown: `uncertain`, never `failed`), the result reports `credentialsRefused`, and `run` answers the
 *   file with the rows waiting and exits 4 (src/exit-codes.ts). A 401/403 never makes a row `failed`.
 *
 * Retries live here and only here: the engine calls the pure `decideRetry` of src/bank/retry-policy.ts per attempt.
 * The client given to the engine should therefore be built with `maxAttempts: 1` (no retries of its own); otherwise
 * attempts multiply (still safe, since the client only resends what is safe, but a 429 would then be slept on inside
 * the client instead of pausing the whole group at once).
 *
 * Graceful stop (the `signal`): no new row is taken; rows waiting in the queue leave it with their step recorded
 * `not_sent` when its intent was committed ahead (certainly not sent), untouched otherwise; a request already sent is
 * let finish and its answer stored; a row between steps is parked (`pending`);
 * a row waiting for an unreachable bank stays `waiting`; a row whose last attempt is unknown is left `uncertain`. The
 * batch stays unfinished and the next run resumes it.
 *
 * Several batches may run at once (they share the queue and its row slots); each batch's errors stay in it.
 *
 * Several daemons on one PostgreSQL store (src/store/leases.ts): a daemon drives only the rows it claims. The daemon
 * that took a file is its driver (ingest, approval gate, batch status, answer); other daemons may drive its rows not
 * started yet (`helpWithBatch`), and the driver answers only once no row of the file is worked elsewhere. A daemon
 * whose lease is lost sends nothing more: its writes are refused, and every task of the queue checks the lease as its
 * request leaves (an intent committed ahead was checked in the database when written, maybe long before).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { BankClient } from '../bank/client.js';
import {
  IdempotencyError,
  isCertainlyNotSent,
  isCredentialsRefusal,
  RateLimitedError,
  ServerError,
  ServiceConnectionError,
  ServiceError,
  ServiceTimeoutError,
} from '../bank/errors.js';
import { defaultSleep } from '../bank/options.js';
import { backoffDelayMs, decideRetry, type RetryDecision, type RetrySettings } from '../bank/retry-policy.js';
import { type ColumnLabel, columnLabeller, formatCellErrors, readableAmount } from '../batches/fields.js';
import {
  type BatchKind,
  type CellError,
  type Dialect,
  type RefusalEvidence,
  type StepContext,
  StepOutcomeError,
  type StepOutput,
  type StepSpec,
} from '../batches/kind.js';
import { sameOperationCheck } from '../batches/same-operation.js';
import { InputError, RemessaError } from '../errors.js';
import { DEFAULT_LOCALE, type Locale, msg, t } from '../i18n/index.js';
import { type Logger, scrubSecrets, silentLogger } from '../log.js';
import type { QueueTask, RequestQueue } from '../queue/request-queue.js';
import { shortBatchId } from '../store/intakes.js';
import { accountNamespace, IdempotencyKeys } from '../store/keys.js';
import { claimRows, releaseUnfinishedRows, rowsWorkedElsewhere } from '../store/leases.js';
import type { RowState } from '../store/rows.js';
import type {
  BatchPolicy,
  BatchRecord,
  IngestRow,
  ReadAnswer,
  RowCounts,
  RowError,
  RowRecord,
  StepRecord,
  Store,
  WriteOptions,
} from '../store/store.js';
import { BankGate, type CredentialsRefusedSettings, type UnreachableWaitSettings } from './bank-gate.js';

/** One record as H6's reader gives it (src/csv/reader.ts BatchRecord). */
export interface InputRecord {
  line: number;
  record: Record<string, string>;
  cells?: string[];
  /**
   * The reader's problems of the record (a cell count other than the header's, a value under no header, a type
   * contradicting its header): the row is invalid, as `validate` says (src/batches/results.ts `validateRecord`).
   */
  problems?: readonly CellError[];
}

/** The file side of a batch: what `readBatch` returns (dialect, header, rows). */
export interface BatchInput {
  dialect: Dialect;
  /**
   * Header in file order: the source names (or `{ source, column }` objects as the reader gives them: then a cell
   * error names the column as the file does, `coluna 4 (Vencimento -> dueDate)`).
   */
  header: ReadonlyArray<string | { source: string; column?: string | null; supplied?: true }>;
  rows: AsyncIterable<InputRecord>;
}

export interface ProcessBatchOptions {
  store: Store;
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds kinds of every row type
  kind: BatchKind<any>;
  /** The batch: its intake's id (src/store/intakes.ts); SHA-256 of the content for batches stored before 003. */
  batchId: string;
  /** The file name as dropped (kept in the store, shown in duplicate messages). */
  fileName: string;
  /**
   * The file's reader. Needed the first time (and after a crash during ingestion); ignored once the batch's rows are
   * all stored (then the caller should close the reader).
   */
  input?: BatchInput | undefined;
  client: BankClient;
  queue: RequestQueue;
  /** Folder where steps write their files (PDFs, PNGs): `outbox/<kind>/<name>/`. Created when first used. */
  filesDir: string;
  /** The account id: the namespace of the idempotency keys (src/store/keys.ts). */
  accountId: string;
  /** @defaultValue 'all-or-nothing' when the kind moves money out, else 'send-valid' */
  policy?: BatchPolicy | undefined;
  /** Retry settings of the pure retry policy (config `bank.retry`). @defaultValue DEFAULT_ENGINE_RETRY */
  retry?: RetrySettings;
  /** 429 answers a step may get in one run before the row is left `uncertain`. @defaultValue 20 */
  maxRateLimitedAttempts?: number;
  /** Language of the messages stored for people (row errors in the result file). @defaultValue 'pt-BR' */
  locale?: Locale;
  /** Rows stored per transaction during ingestion. @defaultValue 500 */
  ingestChunkRows?: number;
  /**
   * While the bank cannot be reached (certainly nothing sent): when to try again, and how long to wait at most
   * before leaving the rows `waiting` (config `bank.unreachable`; `run` gives a limit, the daemon none).
   * @defaultValue DEFAULT_UNREACHABLE_DELAYS_MS, no limit
   */
  unreachable?: UnreachableWaitSettings | undefined;
  /**
   * While the bank refuses remessa's credentials (401/403): how often one row asks again, and whether rows wait for
   * that at all (config `bank.credentialsRefused`; `run` does not wait, the daemon does).
   * @defaultValue every DEFAULT_CREDENTIALS_RETRY_EVERY_MS, waiting
   */
  credentialsRefused?: CredentialsRefusedSettings | undefined;
  /** Graceful stop: see the top of this file. */
  signal?: AbortSignal | undefined;
  logger?: Logger;
  /** Progress, for a progress bar: called after each chunk stored and each row finished. */
  onProgress?: (progress: BatchProgress) => void;
  /**
   * The money controls' gate (src/runner/approval.ts), asked once the rows are stored and before any row runs, while
   * the batch is `ready` or `awaiting_approval`: 'go' (released: run), 'hold' (waits for approval: only read steps
   * run, every row is parked before its first effect step) or 'skip' (not now: nothing runs). Absent: 'go'.
   */
  gate?: ((batch: BatchRecord) => Promise<'go' | 'hold' | 'skip'>) | undefined;
  /** Randomness for backoff jitter, in [0, 1). @defaultValue Math.random */
  random?: () => number;
  /** Wait between attempts; must reject when the signal aborts. @defaultValue an abortable timer */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface BatchProgress {
  batchId: string;
  phase: 'ingest' | 'run';
  /** Rows stored so far (ingest) / rows in the batch (run). */
  rows: number;
  /** Rows that reached an end state in this run. */
  finished: number;
  /** Rows this run set out to drive. */
  toRun: number;
}

export interface ProcessBatchResult {
  batch: BatchRecord;
  counts: RowCounts;
  /** No row is pending, in flight or waiting (uncertain rows may remain: they are retried by the next run). */
  complete: boolean;
  /** The signal stopped the run before it completed. */
  stopped: boolean;
  /** Requests the run made attempts of (intents committed plus read calls); 0 for a batch already done. */
  attempts: number;
  /** The batch waits for approval (the gate said 'hold', or 'skip'): only read steps ran; not complete. */
  held?: boolean;
  /** The bank refused remessa's credentials (401/403) and still did when the run ended: rows were left waiting. */
  credentialsRefused?: boolean;
}

/** The file is broken as a whole (found while storing its rows): nothing was sent. H8 answers with a rejection. */
export class BatchRejectedError extends RemessaError {
  readonly batchId: string;

  constructor(batchId: string, error: RowError, options?: { cause?: unknown }) {
    super(error.code, error.message, options);
    this.batchId = batchId;
  }
}

export const DEFAULT_ENGINE_RETRY: RetrySettings = {
  maxAttempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 20_000,
  maxRetryAfterMs: 120_000,
};

/** Codes the engine stores on rows it leaves uncertain or failed on its own account. */
export const ENGINE_CODES = {
  /** A step with an effect may have happened and can be neither looked up nor resent safely: check at the bank. */
  unknownNotResent: 'UNKNOWN_OUTCOME_NOT_RESENT',
  /** Retries spent while the outcome stays unknown. */
  unknownAfterRetries: 'UNKNOWN_OUTCOME',
  /** The bank could not be reached; certainly nothing of the row was sent: it waits (row state `waiting`). */
  bankUnreachable: 'BANK_UNREACHABLE',
  /** The bank refused remessa's credentials (401/403); nothing of the row was done: it waits (row state `waiting`). */
  bankCredentialsRefused: 'BANK_CREDENTIALS_REFUSED',

  /** Stopped while the outcome of the last attempt was unknown. */
  stoppedUnknown: 'STOPPED_OUTCOME_UNKNOWN',
  /** Stopped after a step's intent was committed and before its request left: certainly not sent. */
  stoppedBeforeSend: 'STOPPED_BEFORE_SEND',
  /** The row's stored record no longer parses (the kind changed between runs). */
  rowUnparsable: 'ROW_UNPARSABLE',
  /** A step failed with an error that is not the bank's (a bug, a full disk). */
  stepError: 'STEP_ERROR',
  /**
   * The bank refused a resend after an attempt of unknown outcome, and that attempt may explain the refusal (bill
   * already paid, QR code already used, ...): never `failed` on a guess; the evidence is in the message.
   */
  refusedAfterUnknown: 'REFUSED_AFTER_UNKNOWN_OUTCOME',
} as const;

const PAGE_ROWS = 256;
/**
 * Several daemons on one store: a page of claimed rows is held by one daemon until it has driven them, so pages are
 * smaller there (a few times a daemon's row slots): the rows of one file spread evenly over the daemons to its end.
 */
const SHARED_PAGE_ROWS = 64;
const RUNNABLE_STATES: readonly RowState[] = ['pending', 'in_flight', 'waiting', 'uncertain'];
/** The rows another daemon may help with (`helpWithBatch`): those not started yet. */
const HELPABLE_STATES: readonly RowState[] = ['pending'];
/** How often the driver of a batch looks whether the rows other daemons help with have ended. */
const HELPERS_POLL_MS = 500;

/** Per queue (so per process): whether the bank can be reached (src/runner/bank-gate.ts). */
const gates = new WeakMap<RequestQueue, BankGate>();

/**
 * The bank gate of the queue's process (made on first use with these settings): the daemon reads it for the metric
 * `remessa_bank_credentials_refused`, and lets a probe go at once when it takes new credentials.
 */
export function bankGateOf(
  queue: RequestQueue,
  settings?: UnreachableWaitSettings | undefined,
  credentials?: CredentialsRefusedSettings | undefined,
): BankGate {
  let gate = gates.get(queue);
  if (!gate) {
    gate = new BankGate(settings?.retryDelaysMs, credentials);
    gates.set(queue, gate);
  }
  return gate;
}

/** Per store: batches being processed now, so the same batch is never driven twice at once. */
const running = new WeakMap<Store, Map<string, Promise<unknown>>>();

/**
 * Processes (or resumes) one batch: ingest if needed, then drive every unfinished row. Safe to call again with the
 * same batch at any time: rows already finished are never sent again. Throws BatchRejectedError when the file is
 * broken as a whole (nothing sent).
 */
export async function processBatch(options: ProcessBatchOptions): Promise<ProcessBatchResult> {
  return oneAtATime(options.store, options.batchId, () => new BatchRun(options).process());
}

/**
 * Several daemons on one store (src/store/leases.ts): drives rows of a batch whose file another live daemon holds
 * (its driver), to share one big file's rows. Only a batch that is `running` (its file read whole, its approval gate
 * passed: no effect of an unapproved batch is ever started here) and only its `pending` rows that nobody holds, claimed
 * a page at a time like the driver's; rows in flight, waiting or uncertain stay the driver's. Nothing else: no
 * ingestion, no gate, no batch status, no answer (the driver waits for the rows others hold, then answers the file).
 * Resolves with the number of rows driven (0: nothing to help with).
 */
export async function helpWithBatch(options: ProcessBatchOptions): Promise<number> {
  return oneAtATime(options.store, options.batchId, () => new BatchRun(options).help());
}

/** Runs `work` for the batch once every earlier one of this process for the same batch has ended. */
async function oneAtATime<T>(store: Store, batchId: string, work: () => Promise<T>): Promise<T> {
  let perStore = running.get(store);
  if (!perStore) {
    perStore = new Map();
    running.set(store, perStore);
  }
  const before = perStore.get(batchId);
  const mine = (async () => {
    if (before) await before.catch(() => undefined);
    return work();
  })();
  perStore.set(batchId, mine);
  try {
    return await mine;
  } finally {
    if (perStore.get(batchId) === mine) perStore.delete(batchId);
  }
}

export interface ResumeUnfinishedOptions
  extends Omit<ProcessBatchOptions, 'kind' | 'batchId' | 'fileName' | 'input' | 'filesDir' | 'policy'> {
  // biome-ignore lint/suspicious/noExplicitAny: a registry holds kinds of every row type
  kindFor(name: BatchRecord['kind']): BatchKind<any> | undefined;
  /** The files folder of a batch (`outbox/<kind>/<name>/`). */
  filesDirFor(batch: BatchRecord): string | Promise<string>;
  policyFor?(batch: BatchRecord): BatchPolicy | undefined;
  /** Only these batches (by id), for `remessa retry BATCH`. @defaultValue every batch with work left */
  batchIds?: readonly string[];
  /** Batches to leave alone (another daemon drives them: src/store/leases.ts). @defaultValue none */
  skip?(batch: BatchRecord): Promise<boolean>;
  /** The progress reports of one batch resumed (the daemon's `batch progress` lines). @defaultValue `onProgress` */
  progressFor?(batch: BatchRecord): ((progress: BatchProgress) => void) | undefined;
}

/**
 * Resumes every batch whose rows are all stored but that still has work (rows pending, in flight or uncertain), one
 * after the other; one failing batch does not stop the others. Batches still `ingesting` need their file again and
 * are skipped (returned in `needFile`). The caller writes the result files afterwards.
 */
export async function resumeUnfinishedBatches(options: ResumeUnfinishedOptions): Promise<{
  results: ProcessBatchResult[];
  needFile: BatchRecord[];
  errors: Array<{ batch: BatchRecord; error: unknown }>;
}> {
  const results: ProcessBatchResult[] = [];
  const needFile: BatchRecord[] = [];
  const errors: Array<{ batch: BatchRecord; error: unknown }> = [];
  for (const batch of await options.store.unfinishedBatches()) {
    if (options.signal?.aborted) break;
    if (options.batchIds && !options.batchIds.includes(batch.id)) continue;
    if (options.skip && (await options.skip(batch))) continue;
    if (batch.status === 'ingesting') {
      needFile.push(batch);
      continue;
    }
    const kind = options.kindFor(batch.kind);
    if (!kind) {
      errors.push({ batch, error: new RemessaError('UNKNOWN_KIND', `No batch kind "${batch.kind}" is registered`) });
      continue;
    }
    try {
      results.push(
        await processBatch({
          ...options,
          kind,
          batchId: batch.id,
          fileName: batch.fileName,
          filesDir: await options.filesDirFor(batch),
          policy: options.policyFor?.(batch),
          onProgress: options.progressFor?.(batch) ?? options.onProgress,
        }),
      );
    } catch (error) {
      errors.push({ batch, error });
    }
  }
  return { results, needFile, errors };
}

type StepResult = { kind: 'done'; output: StepOutput } | { kind: 'ended' } | { kind: 'stopped' };

/**
 * A step's context before the queue runs it: its requests' options (`request`) exist only inside a task of the
 * queue, built by `inTask` from the task's handle, so that no step call can reach the bank without the handle the
 * rate limiter counts it by (src/queue/request-queue.ts).
 */
type RowStepContext = Omit<StepContext<unknown>, 'request'>;

/** The step's context inside the queue's task `task`. No stop signal: a request already sent is let finish. */
function inTask(ctx: RowStepContext, task: QueueTask): StepContext<unknown> {
  return { ...ctx, request: { task } };
}

class BatchRun {
  private readonly o: ProcessBatchOptions;
  private readonly store: Store;
  // biome-ignore lint/suspicious/noExplicitAny: see ProcessBatchOptions.kind
  private readonly kind: BatchKind<any>;
  private readonly log: Logger;
  private readonly retry: RetrySettings;
  private readonly random: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;
  private readonly signal: AbortSignal | undefined;
  private readonly gate: BankGate;
  private dialect!: Dialect;
  private filesDirReady = false;
  private attempts = 0;
  private finished = 0;
  private toRun = 0;
  private rowCount = 0;
  /** The batch waits for approval: no effect step starts (rows are parked before it). */
  private holdEffects = false;
  private readonly locale: Locale;
  /** Names a column as the batch's file does (set when its rows are read). */
  private label: ColumnLabel | undefined;
  /** Several daemons on one store: the lines this run has driven (each once, over every pass of `run`). */
  private readonly driven = new Set<number>();

  constructor(options: ProcessBatchOptions) {
    this.o = options;
    this.store = options.store;
    this.kind = options.kind;
    this.log = (options.logger ?? silentLogger()).child({
      batch: shortBatchId(options.batchId),
      kind: options.kind.name,
    });
    this.retry = options.retry ?? DEFAULT_ENGINE_RETRY;
    this.random = options.random ?? Math.random;
    this.sleep = options.sleep ?? defaultSleep;
    this.signal = options.signal;
    this.gate = bankGateOf(options.queue, options.unreachable, options.credentialsRefused);
    this.locale = options.locale ?? DEFAULT_LOCALE;
  }

  async process(): Promise<ProcessBatchResult> {
    const { store, batchId } = this.o;
    let batch = await store.getBatch(batchId);
    if (!batch) {
      const input = this.o.input;
      if (!input) {
        throw new RemessaError(
          'ENGINE_NEEDS_FILE',
          `Batch ${batchId} is not in the store: its file must be read first`,
        );
      }
      batch = await store.createBatch({
        id: batchId,
        kind: this.kind.name,
        fileName: this.o.fileName,
        dialect: input.dialect,
        header: input.header.map((h) => (typeof h === 'string' ? h : h.source)),
        // The record key of each cell: rows whose record is just their cells read by these store no record.
        columns: input.header.map((h) => (typeof h === 'string' ? h : (h.column ?? null))),
        // The account's key namespace: rows whose key is derived in it store no key (src/store/keys.ts).
        keyNamespace: accountNamespace(this.o.accountId),
      });
    }
    if (batch.kind !== this.kind.name) {
      throw new RemessaError(
        'ENGINE_KIND_MISMATCH',
        `Batch ${batchId} (${batch.fileName}) is of kind ${batch.kind}, not ${this.kind.name}`,
      );
    }
    if (batch.status === 'rejected')
      throw new BatchRejectedError(batchId, batch.error ?? { code: 'FILE_REJECTED', message: 'Rejected' });
    this.dialect = batch.dialect;
    this.rowCount = batch.rowCount;

    if (batch.status === 'ingesting') {
      const ingested = await this.ingest(batch);
      if (!ingested) return this.result(true);
      batch = (await store.getBatch(batchId))!;
    }
    if (this.signal?.aborted) return this.result(true);

    if ((batch.status === 'ready' || batch.status === 'awaiting_approval') && this.o.gate) {
      // Money controls (src/store/approvals.ts): released, held for approval (read steps only), or not now.
      const verdict = await this.o.gate(batch);
      if (verdict !== 'go') {
        if (verdict === 'hold') {
          this.holdEffects = true;
          await this.run();
        }
        return { ...(await this.result(true)), complete: false, held: true };
      }
      batch = (await store.getBatch(batchId))!;
    }
    if ((await store.countUnfinished(batchId)) === 0 && batch.status === 'done') {
      return this.result(false); // already done: nothing is sent again
    }
    await store.markBatchRunning(batchId);
    let took = await this.run();
    // Several daemons on one store: rows of this batch that others help with (helpWithBatch) are waited for, then
    // the batch is passed over again for the rows a helper that stopped or died let go (its `intent` steps turned
    // unknown by the takeover, rule 8 of src/store/rows.ts). The answer is written once, after the last of them.
    // (Counted after each pass: a row a helper is claiming at that instant, skipped by the pass, is not this daemon's,
    // so it counts, whoever held it before.)
    while (store.daemon && !this.signal?.aborted) {
      if (took === 0) {
        if ((await rowsWorkedElsewhere(store, batchId)) === 0) break;
        await this.sleep(HELPERS_POLL_MS, this.signal).catch(() => undefined);
      }
      took = await this.run();
    }
    const counts = await store.countRows(batchId);
    const stopped = counts.pending + counts.in_flight + counts.waiting > 0;
    if (!stopped) await store.markBatchDone(batchId);
    return this.result(stopped);
  }

  /** See `helpWithBatch`. */
  async help(): Promise<number> {
    const batch = await this.store.getBatch(this.o.batchId);
    if (!this.store.daemon || !batch || batch.status !== 'running' || batch.kind !== this.kind.name) return 0;
    this.dialect = batch.dialect;
    this.rowCount = batch.rowCount;
    try {
      return await this.run(HELPABLE_STATES);
    } finally {
      // Rows claimed and not finished (stopped before them, or left waiting) go back to the driver.
      await releaseUnfinishedRows(this.store, this.o.batchId).catch((error: unknown) =>
        this.log.warn({ err: error }, 'could not let go of the rows left after helping'),
      );
    }
  }

  private async result(stopped: boolean): Promise<ProcessBatchResult> {
    const batch = (await this.store.getBatch(this.o.batchId))!;
    const counts = await this.store.countRows(this.o.batchId);
    return {
      batch,
      counts,
      complete: counts.pending + counts.in_flight + counts.waiting === 0 && batch.status !== 'ingesting',
      stopped,
      attempts: this.attempts,
      ...(this.gate.credentialsRefused ? { credentialsRefused: true } : {}),
    };
  }

  // ------------------------------------------------------------------ phase 1: ingest

  /** Stores every record of the file; false when stopped before the end (ingestion resumes next time). */
  private async ingest(batch: BatchRecord): Promise<boolean> {
    const input = this.o.input;
    if (!input) {
      throw new RemessaError(
        'ENGINE_NEEDS_FILE',
        `Batch ${batch.id} (${batch.fileName}) was not fully read before: its file must be given again`,
      );
    }
    const keys = new IdempotencyKeys(this.o.accountId);
    const header = input.header.map((h) => (typeof h === 'string' ? { source: h, column: h } : h));
    this.label = columnLabeller(header);
    // A row whose natural key another row owns is its duplicate only when it is the same operation (the kind's
    // `mustMatch`); a key reused for another operation is refused (src/batches/same-operation.ts).
    const sameOperation = sameOperationCheck(this.kind, header, this.label, this.locale);
    const chunkSize = this.o.ingestChunkRows ?? 500;
    let chunk: IngestRow[] = [];
    let stored = batch.rowCount;
    const flush = async () => {
      if (chunk.length === 0) return;
      stored += (await this.store.ingest(batch.id, chunk, this.locale, sameOperation, this.kind.undoneBy)).stored;
      chunk = [];
      this.rowCount = stored;
      this.o.onProgress?.({ batchId: batch.id, phase: 'ingest', rows: stored, finished: 0, toRun: 0 });
    };
    try {
      for await (const rec of input.rows) {
        if (rec.line <= batch.lastLine) continue;
        chunk.push(this.toIngestRow(rec, keys));
        if (chunk.length >= chunkSize) {
          await flush();
          // Let other batches' rows and timers run between chunks: ingestion of a big file must not starve them.
          await new Promise((r) => setImmediate(r));
          if (this.signal?.aborted) return false;
        }
      }
      await flush();
    } catch (error) {
      if (error instanceof InputError) {
        // The file is broken further down (InputError from the reader): reject it whole; nothing was sent.
        const rejection = { code: error.code, message: error.describe(this.locale) };
        await this.store.rejectBatch(batch.id, rejection);
        throw new BatchRejectedError(batch.id, rejection, { cause: error });
      }
      throw error;
    }
    const policy = this.o.policy ?? (this.kind.movesMoneyOut ? 'all-or-nothing' : 'send-valid');
    await this.store.finishIngest(batch.id, policy, this.locale);
    return true;
  }

  private toIngestRow(rec: InputRecord, keys: IdempotencyKeys): IngestRow {
    const errors: CellError[] = rec.problems ? [...rec.problems] : [];
    let parsed: ReturnType<BatchKind['parse']>;
    try {
      parsed = this.kind.parse(rec.record, this.dialect);
    } catch (error) {
      parsed = {
        ok: false,
        errors: [{ code: 'ROW_INVALID', message: msg('ROW_INVALID', { reason: (error as Error).message }) }],
      };
    }
    if (!parsed.ok) errors.push(...parsed.errors);
    const base = { line: rec.line, record: rec.record, cells: rec.cells };
    if (errors.length > 0 || !parsed.ok) {
      return {
        ...base,
        valid: false,
        errors,
        message: formatCellErrors(errors, this.locale, this.label),
        amountCents: readableAmount(rec.record.amount, this.dialect),
      };
    }
    const row = parsed.row;
    const naturalKey = this.kind.naturalKey(row);
    return {
      ...base,
      valid: true,
      parsed: row,
      naturalKey,
      idempotencyKey: keys.forRow(this.kind.name, naturalKey, this.kind.explicitIdempotencyKey?.(row)),
      amountCents: this.kind.amountCents?.(row),
      changes: this.kind.changes?.(row),
    };
  }

  // ------------------------------------------------------------------ phase 2: run

  /**
   * Drives the batch's rows in `states`, in line order, a page at a time; resolves with the number of rows taken once
   * every one of them has ended. A row is driven once per BatchRun (`driven`), however many times `run` is called.
   */
  private async run(states: readonly RowState[] = RUNNABLE_STATES): Promise<number> {
    const { store, queue, batchId } = this.o;
    this.toRun = await store.countUnfinished(batchId);
    const active = new Set<Promise<void>>();
    let after = 0;
    // Several daemons on one store: a row another transaction had locked at the instant of its page (SKIP LOCKED) was
    // skipped, not waited for: the batch is read again from its start until a pass takes no row not driven yet.
    const shared = store.daemon !== undefined;
    const driven = this.driven;
    let taken = 0;
    let total = 0;
    outer: for (;;) {
      // Several daemons on one store: only the rows this one claims (src/store/leases.ts); else rowsAfter.
      const page = await claimRows(store, batchId, after, shared ? SHARED_PAGE_ROWS : PAGE_ROWS, states);
      if (page.length === 0) {
        if (!shared || taken === 0) break;
        taken = 0;
        after = 0;
        continue;
      }
      // The page's steps, read with it (one statement, not one a row): a row is driven with its steps as read with
      // its page, as it is with its own state. Nothing else moves a row's steps meanwhile: this engine drives it once
      // a run, a shared store's row is held by this daemon (claimed above), and the commands that settle a row refuse
      // while a daemon drives its folder.
      const pageSteps = await store.getStepsBetween(batchId, page[0]!.line, page[page.length - 1]!.line);
      for (const row of page) {
        after = row.line;
        if (this.signal?.aborted) break outer;
        if (shared) {
          if (driven.has(row.line)) continue; // once per run, as on one daemon
          driven.add(row.line);
          taken++;
        }
        total++;
        // A change of a thing another row of the batch is still changing waits for it (`BatchKind.changes`): the
        // bank applies a file's changes of one charge in its line order.
        const thing = this.kind.changes?.(row.parsed);
        const before = thing === undefined ? undefined : this.changing.get(thing);
        if (before !== undefined) {
          await before; // not a tick of its own for the rows of other kinds (the hot path)
          if (this.signal?.aborted) break outer;
        }
        try {
          await queue.acquireRow(this.kind.group, this.signal);
        } catch {
          break outer; // stopped while waiting for a slot
        }
        this.driving++;
        const p = this.driveRow(row, pageSteps.get(row.line) ?? new Map())
          .catch(async (error: unknown) => {
            // Only a bug or a store failure lands here. Leave the row visibly uncertain (resumed next run) if the
            // store still takes writes; otherwise it stays as the store has it, which the next run also resumes.
            this.log.error({ err: error, line: row.line }, 'row could not be driven');
            await this.writeRow(row.line, async (s) => {
              const cur = await s.getRow(this.o.batchId, row.line);
              if (cur && (cur.state === 'pending' || cur.state === 'in_flight' || cur.state === 'uncertain')) {
                await s.recordRowUncertain(this.o.batchId, row.line, cur.currentStep, {
                  code: ENGINE_CODES.stepError,
                  message: t(this.locale, 'STEP_ERROR.internal', { reason: errorMessage(error, this.locale) }),
                });
              }
            }).catch(() => undefined);
          })
          .finally(() => {
            this.unsaved.delete(row.line); // a row whose every write failed: its lookup is done again next run
            queue.releaseRow(this.kind.group);
            active.delete(p);
            this.rowEnded();
          });
        active.add(p);
        if (thing !== undefined) {
          this.changing.set(thing, p);
          void p.then(() => this.changing.get(thing) === p && this.changing.delete(thing));
        }
      }
    }
    await Promise.all(active);
    return total;
  }

  private progress(): void {
    this.finished++;
    // Counted for the store's vacuums (src/store/vacuum.ts): synchronous, the row never waits for one.
    this.o.store.rowEnded();
    this.o.onProgress?.({
      batchId: this.o.batchId,
      phase: 'run',
      rows: this.rowCount,
      finished: this.finished,
      toRun: this.toRun,
    });
  }

  /**
   * Rule 9 of src/store/rows.ts: a read step's answer (a bill's lookup) is not a commit of its own; it is written in
   * the transaction of the row's next write, whatever that is (the next step's intent above all; else the row parked,
   * waiting, failed or uncertain), and at the latest when the row's drive ends.
   */
  private readonly unsaved = new Map<number, ReadAnswer>();

  /** The drive of the last row taken of each thing the kind's rows change (`BatchKind.changes`), until it ends. */
  private readonly changing = new Map<string, Promise<void>>();

  /** Rows being driven (`run`), and how many of them wait for a write of theirs to commit. */
  private driving = 0;
  private writing = 0;

  /**
   * `store.write` for a row being driven, in the store's commit window while other rows in flight may still queue
   * writes (`gather`, src/store/store.ts "The commit window"): their intents then share one commit, one fsync. The
   * write of the last row in flight to queue one is not marked, and so commits the group at the end of its tick.
   */
  private async gatheredWrite<T>(fn: (s: Store) => Promise<T>, options?: WriteOptions): Promise<T> {
    this.writing++;
    try {
      return await this.store.write(fn, { ...options, gather: this.driving > this.writing });
    } finally {
      this.writing--;
    }
  }

  /** A row's drive ended: when every other row in flight waits for a write, nothing more will join their group. */
  private rowEnded(): void {
    this.driving--;
    if (this.driving <= this.writing) this.store.flushGathered();
  }

  /** `store.write` for one row: the row's unsaved read answer first, in the same transaction (rule 9 of rows.ts). */
  private async writeRow<T>(line: number, fn: (s: Store) => Promise<T>, options?: WriteOptions): Promise<T> {
    const answer = this.unsaved.get(line);
    if (answer === undefined) return this.gatheredWrite(fn, options);
    const { batchId } = this.o;
    const result = await this.gatheredWrite(async (s) => {
      await s.recordStepDone(batchId, line, answer.step, answer.output, false);
      return fn(s);
    }, options);
    if (this.unsaved.get(line) === answer) this.unsaved.delete(line);
    return result;
  }

  /**
   * Rule 1 of rows.ts: the step's intent, durable; the row's unsaved read answer rides in it (rule 9). `gather` false:
   * the write holds a connection of the queue, and commits with the group at once instead of waiting for the window.
   */
  private async writeIntent(line: number, step: string, gather = true): Promise<void> {
    const answer = this.unsaved.get(line);
    const { batchId } = this.o;
    const write = (s: Store) => s.recordIntent(batchId, line, step, answer);
    await (gather ? this.gatheredWrite(write) : this.store.write(write));
    if (answer !== undefined && this.unsaved.get(line) === answer) this.unsaved.delete(line);
  }

  private async driveRow(row: RowRecord, steps: ReadonlyMap<string, StepRecord>): Promise<void> {
    await this.driveSteps(row, steps);
    // Not reached with an answer unsaved in a kind whose read steps are followed by a write; kept for any other.
    if (this.unsaved.has(row.line)) await this.writeRow(row.line, async () => undefined);
  }

  private async driveSteps(row: RowRecord, steps: ReadonlyMap<string, StepRecord>): Promise<void> {
    const { store, batchId } = this.o;
    const parsed = this.kind.parse(row.record, this.dialect);
    if (!parsed.ok) {
      const message = t(this.locale, 'ROW_UNPARSABLE', { errors: formatCellErrors(parsed.errors, this.locale) });
      await this.writeRow(row.line, async (s) => {
        if (row.state === 'in_flight' || row.state === 'waiting')
          await s.recordRowUncertain(batchId, row.line, row.currentStep, {
            code: ENGINE_CODES.rowUnparsable,
            message,
          });
        else if (row.state === 'pending')
          await s.recordRowFailed(batchId, row.line, null, { code: ENGINE_CODES.rowUnparsable, message });
      });
      this.progress();
      return;
    }
    const previous: Record<string, StepOutput> = {};
    const kindSteps = this.kind.steps;
    for (let i = 0; i < kindSteps.length; i++) {
      const step = kindSteps[i]!;
      const rec = steps.get(step.name);
      if (rec?.state === 'done') {
        previous[step.name] = rec.output ?? {};
        continue;
      }
      if (this.holdEffects && step.effect !== 'read') {
        // Held for approval: the read steps before are done (the preview shows them); park before the effect.
        await this.writeRow(row.line, (s) => s.parkRow(batchId, row.line));
        return;
      }
      if (this.signal?.aborted) {
        await this.stopRow(row.line, rec);
        return;
      }
      const ctx: RowStepContext = {
        row: parsed.row,
        idempotencyKey: row.idempotencyKey ?? '',
        client: this.o.client,
        previous: { ...previous },
        outputPath: (fileName) => this.outputPath(fileName),
        // The stop signal is NOT given to steps: a request already sent is let finish (its answer is stored).
      };
      const last = i === kindSteps.length - 1;
      const r = await this.runStep(row, step, rec, ctx, last);
      if (r.kind === 'stopped') return;
      if (r.kind === 'ended' || last) {
        // The last step's answer was committed with the row's success (`recordStepDone(..., last = true)`, one
        // transaction): nothing to read back.
        this.progress();
        return;
      }
      previous[step.name] = r.output;
    }
    // Every step was already done before this run (a crash after the last step's answer was stored cannot leave the
    // row unfinished: the last step's answer and the row's success are one transaction); nothing to send.
    const state = (await store.getRow(batchId, row.line))?.state;
    if (state !== 'succeeded') {
      await this.writeRow(row.line, async (s) => {
        if (state !== 'in_flight') await s.transitionRow(batchId, row.line, 'in_flight');
        await s.transitionRow(batchId, row.line, 'succeeded', { currentStep: null, error: null });
      });
    }
    this.progress();
  }

  /** Stopped before a step: park the row, or leave it uncertain when its current step's outcome is unknown. */
  private async stopRow(line: number, rec: StepRecord | undefined, unknownError?: RowError): Promise<StepResult> {
    const { batchId } = this.o;
    await this.writeRow(line, async (s) => {
      const state = (await s.getRow(batchId, line))?.state;
      const unknown = rec?.state === 'intent' || rec?.state === 'unknown' || unknownError !== undefined;
      if (unknown && state !== 'uncertain') {
        await s.recordRowUncertain(batchId, line, rec?.step ?? null, {
          code: ENGINE_CODES.stoppedUnknown,
          message: t(this.locale, 'STOPPED_OUTCOME_UNKNOWN', {
            step: rec?.step ?? '?',
            reason: unknownError?.message,
          }),
        });
      } else if (state === 'in_flight') await s.parkRow(batchId, line);
    });
    return { kind: 'stopped' };
  }

  private outputPath(fileName: string): string {
    if (
      fileName === '' ||
      fileName === '.' ||
      fileName === '..' ||
      path.basename(fileName) !== fileName ||
      fileName.includes('\0')
    ) {
      throw new RemessaError(
        'ENGINE_UNSAFE_FILE_NAME',
        `Expected a plain file name for a step output, got ${JSON.stringify(fileName)}`,
      );
    }
    if (!this.filesDirReady) {
      mkdirSync(this.o.filesDir, { recursive: true });
      this.filesDirReady = true;
    }
    return path.join(this.o.filesDir, fileName);
  }

  /** Runs one step of a row to an end: done, the row ended (failed/uncertain), or stopped. */
  private async runStep(
    row: RowRecord,
    step: StepSpec<unknown>,
    rec: StepRecord | undefined,
    ctx: RowStepContext,
    last: boolean,
  ): Promise<StepResult> {
    const { batchId, queue } = this.o;
    const line = row.line;
    const group = this.kind.group;
    const hasEffect = step.effect !== 'read';
    // Rule 2 of src/store/rows.ts: an earlier attempt (this run or a crashed one) may have acted at the bank.
    let unknown = hasEffect && (rec?.state === 'intent' || rec?.state === 'unknown');
    // An attempt of this step in this run or before may have acted, even if a lookup since said it did not (rule 5:
    // a refusal may still be that attempt's trace, e.g. a lookup that lags behind the bank's writes).
    let everUnknown = unknown;
    let lastUnknown: RowError | undefined = unknown
      ? {
          code: rec?.errorCode ?? ENGINE_CODES.unknownAfterRetries,
          message: rec?.errorMessage ?? t(this.locale, 'UNKNOWN_OUTCOME.earlierRun'),
        }
      : undefined;
    let attempt = 0;
    let rateLimited = 0;
    // Let through by the bank gate while it is still closed (its probe): the next attempt goes without waiting again.
    let released = false;

    const end = async (to: 'failed' | 'uncertain', error: RowError): Promise<StepResult> => {
      await this.writeRow(line, async (s) => {
        if (to === 'failed') {
          const cur = (await s.getSteps(batchId, line)).get(step.name)?.state;
          await s.recordRowFailed(batchId, line, cur === 'done' ? null : step.name, error);
        } else {
          await s.recordRowUncertain(batchId, line, step.name, error);
        }
      });
      this.log.info({ line, step: step.name, code: error.code }, to === 'failed' ? 'row failed' : 'row left uncertain');
      return { kind: 'ended' };
    };
    const done = async (output: StepOutput): Promise<StepResult> => {
      if (!hasEffect && !last) {
        // Rule 9 of src/store/rows.ts: a read's answer rides in the row's next write (its next step's intent).
        this.unsaved.set(line, { step: step.name, output });
        return { kind: 'done', output };
      }
      // An answer may skip its own fsync (src/store/store.ts): lost in a power cut, the step is still `intent` and
      // the next run resolves it as an unknown outcome. Intents are always FULL.
      await this.writeRow(line, (s) => s.recordStepDone(batchId, line, step.name, output, last), { durable: false });
      return { kind: 'done', output };
    };

    for (;;) {
      // An unknown outcome of a step that cannot be resent as is: look it up first, or give up on it.
      if (unknown && !step.usesIdempotencyKey) {
        if (!step.recover) {
          return end('uncertain', {
            code: ENGINE_CODES.unknownNotResent,
            message: t(this.locale, 'UNKNOWN_OUTCOME_NOT_RESENT', {
              step: step.name,
              reason: lastUnknown?.message ?? t(this.locale, 'UNKNOWN_OUTCOME.unknown'),
            }),
          });
        }
        const recovered = await this.recover(step, ctx, line);
        if (recovered.kind === 'found') return done(recovered.output);
        if (recovered.kind === 'stopped') return this.stopRow(line, rec, lastUnknown);
        if (recovered.kind === 'decided') return end(recovered.outcome, recovered.error);
        if (recovered.kind === 'failed') {
          return end('uncertain', {
            code: ENGINE_CODES.unknownAfterRetries,
            message: t(this.locale, 'UNKNOWN_OUTCOME.lookupFailed', {
              step: step.name,
              reason: recovered.error.message,
            }),
          });
        }
        // Certainly absent: the effect did not happen, sending is safe.
        unknown = false;
      }
      if (this.signal?.aborted)
        return this.stopRow(line, unknown ? (rec ?? stepRec(step.name, 'unknown')) : undefined, lastUnknown);
      // Whether this attempt is the gate's probe: let through while the gate is still closed.
      let probe = released;
      released = false;
      if (!probe && this.gate.isDown) {
        // The bank is unreachable (or refuses the key): wait for the probe (or its return) instead of adding to the
        // refused connections.
        const waited = await this.waitForBank(line, step.name, unknown, undefined, lastUnknown);
        if (waited) return waited;
        probe = this.gate.isDown;
      }

      attempt++;
      let sent = false;
      let answered = false;
      // Rule 1 of src/store/rows.ts: the intent is durable before the request leaves. A step that can be resent with
      // its key or looked up (rule 2) commits it before its row waits for a connection: the commit, shared with the
      // other rows' writes of its window, then holds no connection. A step that can be neither commits it inside the
      // queue's task, at once, so that no row of it waits in the queue with an intent (see the top of this file).
      const intentAhead = hasEffect && (step.usesIdempotencyKey || step.recover !== undefined);
      let intentWritten = false;
      try {
        if (intentAhead) {
          await this.writeIntent(line, step.name);
          intentWritten = true;
        }
        const output = await queue.run(
          group,
          async (task) => {
            // A daemon whose lease is lost sends nothing more (src/store/leases.ts). An intent committed ahead was
            // checked against the lease in the database then, and its row may have waited long since (a queue
            // behind, a 429 pause): checked again here, on the daemon's own clock, as the request leaves. Its step
            // stays `intent`, which whoever holds the row next resolves as an unknown outcome (rule 8 of rows.ts).
            this.store.daemon?.assertLive();
            // The bank refused remessa's key while this row waited for a connection: not sent (only the gate's probe
            // asks again), so that one refusal does not become one per row already queued.
            if (!probe && this.gate.credentialsRefused) throw new GateClosedError();
            if (hasEffect && !intentAhead) await this.writeIntent(line, step.name, false);
            sent = true;
            this.attempts++;
            try {
              return await step.run({ ...inTask(ctx, task), resend: unknown });
            } catch (error) {
              // Closed before the queue hands this connection to the next row's request, which then waits instead.
              if (isCredentialsRefusal(error)) this.gate.refused();
              throw error;
            }
          },
          { signal: this.signal },
        );
        answered = true;
        this.gate.reached();
        return await done(output);
      } catch (error) {
        // The bank answered and the step took its answer; what failed is our commit of it (a store failure: disk,
        // connection, lease). Never the bank's no (rule 5 of src/store/rows.ts): the row is left to run()'s handler
        // (uncertain if the store still takes writes), its step still `intent`, and the next run learns the outcome
        // the way it learns any unknown one (keyed resend, or lookup).
        if (answered) throw error;
        if (sent && isCertainlyNotSent(error)) {
          // The bank is unreachable; nothing of this attempt was sent. Not an outcome: the row waits for the bank
          // (rows.ts `waiting`), its step's unknown outcome, if any, kept (rule 6). No attempt is used up.
          const rowError: RowError = { code: errorCode(error), message: errorMessage(error, this.locale) };
          if (hasEffect)
            await this.writeRow(line, (s) => this.recordNotSent(s, line, step.name, rowError, unknown, lastUnknown));
          attempt--;
          this.gate.failed();
          const waited = await this.waitForBank(line, step.name, unknown, rowError, lastUnknown);
          if (waited) return waited;
          released = this.gate.isDown;
          continue;
        }
        if (sent && isCredentialsRefusal(error)) {
          // 401/403: the bank refused remessa's key before doing anything, and would refuse every row alike until a
          // person fixes it. Not an outcome (never `failed`): the row waits at the gate, closed for credentials, its
          // step's unknown outcome, if any, kept (rule 6). No attempt is used up.
          const rowError: RowError = { code: errorCode(error), message: errorMessage(error, this.locale) };
          if (hasEffect)
            await this.writeRow(line, (s) => this.recordNotSent(s, line, step.name, rowError, unknown, lastUnknown));
          attempt--;
          // The gate closed as the answer came, inside the queue's task (above).
          this.log.warn({ line, step: step.name, status: (error as ServiceError).status }, 'bank refused credentials');
          const waited = await this.waitForBank(line, step.name, unknown, rowError, lastUnknown);
          if (waited) return waited;
          released = this.gate.isDown;
          continue;
        }
        // A connection was made (an answer, or a break after the request left): the bank is reachable.
        if (error instanceof ServiceError && error.mayHaveReachedServer) this.gate.reached();
        if (!sent) {
          if (intentWritten) {
            // Its intent committed, the request never left (stopped while waiting for a connection): certainly not
            // sent, and so recorded (rule 6 keeps an earlier unknown outcome), not left for the next run to resolve.
            const notSent: RowError = this.signal?.aborted
              ? {
                  code: ENGINE_CODES.stoppedBeforeSend,
                  message: t(this.locale, 'STOPPED_BEFORE_SEND', { step: step.name }),
                }
              : { code: errorCode(error), message: errorMessage(error, this.locale) };
            await this.writeRow(line, (s) => this.recordNotSent(s, line, step.name, notSent, unknown, lastUnknown));
          }
          if (this.signal?.aborted)
            return this.stopRow(line, unknown ? stepRec(step.name, 'unknown') : undefined, lastUnknown);
          if (error instanceof GateClosedError) {
            // Certainly not sent, as any wait at the gate: this row waits there now.
            attempt--;
            const waited = await this.waitForBank(line, step.name, unknown, undefined, lastUnknown);
            if (waited) return waited;
            released = this.gate.isDown;
            continue;
          }
          throw error; // the intent could not be written: a store failure, not the bank's
        }
        const rowError: RowError = { code: errorCode(error), message: errorMessage(error, this.locale) };
        if (error instanceof StepOutcomeError) {
          // The step decided the row's outcome itself (a check said no; or it cannot tell whether an earlier attempt
          // took effect and must not guess): no retry. A check's no after an unknown outcome: rule 5 of rows.ts.
          if (error.outcome === 'failed' && hasEffect && everUnknown) {
            return this.refusedAfterUnknown(step, ctx, line, rowError, error, lastUnknown, end, done);
          }
          if (error.outcome === 'uncertain' && hasEffect && !unknown) {
            await this.writeRow(line, (s) => s.recordStepUnknown(batchId, line, step.name, rowError));
          }
          return end(error.outcome, rowError);
        }
        const verdict = classify(error, step);
        if (verdict === 'rate-limited') {
          // Not processed by the bank. The queue has paused the group; the next attempt waits for it. An earlier
          // attempt of unknown outcome stays unknown: this one not being sent says nothing about that one.
          if (hasEffect)
            await this.writeRow(line, (s) => this.recordNotSent(s, line, step.name, rowError, unknown, lastUnknown));
          rateLimited++;
          attempt--;
          if (rateLimited >= (this.o.maxRateLimitedAttempts ?? 20)) {
            if (unknown) {
              // An earlier attempt may have acted (rule 6): a person, or the next run's recovery, must tell.
              return end('uncertain', {
                code: rowError.code,
                message: t(this.locale, 'RATE_LIMITED.stillLimited', {
                  attempts: rateLimited,
                  reason: rowError.message,
                }),
              });
            }
            // Certainly nothing of this step was processed: the row waits (rows.ts `waiting`), its file unanswered,
            // and the next run (or the daemon's next pass) sends it. Never `uncertain`: nothing is left to check.
            await this.writeRow(line, (s) =>
              s.recordRowWaiting(batchId, line, step.name, {
                code: rowError.code,
                message: t(this.locale, 'RATE_LIMITED.waiting', { attempts: rateLimited }),
              }),
            );
            this.log.warn(
              { line, step: step.name, attempts: rateLimited },
              'bank still rate limiting: row left waiting',
            );
            return { kind: 'stopped' };
          }
          continue;
        }
        if (verdict === 'failed') {
          // A keyed resend answered 409 "in progress"/422 is about the key, not a no: see classify. A no after an
          // attempt of unknown outcome may be that attempt's own trace: rule 5 of rows.ts.
          if (hasEffect && everUnknown) {
            return this.refusedAfterUnknown(step, ctx, line, rowError, error, lastUnknown, end, done);
          }
          return end('failed', rowError);
        }
        if (verdict === 'not-sent') {
          if (hasEffect)
            await this.writeRow(line, (s) => this.recordNotSent(s, line, step.name, rowError, unknown, lastUnknown));
        } else if (verdict === 'unknown') {
          if (hasEffect) {
            await this.writeRow(line, (s) => s.recordStepUnknown(batchId, line, step.name, rowError));
            unknown = true;
            everUnknown = true;
            lastUnknown = rowError;
          }
        } else {
          // 'bug': an error that is not the bank's. With an effect, the request may have gone: unknown.
          if (hasEffect) {
            await this.writeRow(line, (s) => s.recordStepUnknown(batchId, line, step.name, rowError));
            unknown = true;
            everUnknown = true;
            lastUnknown = rowError;
          }
          return end('uncertain', { code: ENGINE_CODES.stepError, message: rowError.message });
        }
        const decision = this.retryDecision(
          attempt,
          step.effect === 'read' ? 'GET' : 'POST',
          step.usesIdempotencyKey,
          error,
        );
        let delayMs: number;
        if (unknown && !step.usesIdempotencyKey && !step.recover) {
          // Rule 2: neither a key nor a lookup: never resent. The loop's top says so on the row.
          continue;
        }
        if (decision.retry) delayMs = decision.delayMs;
        else if (decision.reason === 'unsafe-outcome-unknown' && step.recover && attempt < this.retry.maxAttempts) {
          // Not resendable as is, but it can be looked up: the loop recovers first, then resends only if absent.
          delayMs = backoffDelayMs(attempt, this.retry, this.random);
        } else {
          return end('uncertain', {
            code: unknown ? ENGINE_CODES.unknownAfterRetries : rowError.code,
            message: t(this.locale, unknown ? 'UNKNOWN_OUTCOME' : 'UNKNOWN_OUTCOME.notCompleted', {
              step: step.name,
              attempts: attempt,
              reason: rowError.message,
            }),
          });
        }
        this.log.warn(
          { line, step: step.name, code: rowError.code, attempt, delayMs },
          'step attempt failed; retrying',
        );
        try {
          if (delayMs > 0) await this.sleep(delayMs, this.signal);
        } catch {
          return this.stopRow(line, unknown ? stepRec(step.name, 'unknown') : undefined, lastUnknown);
        }
      }
    }
  }

  /**
   * Waits at the bank gate. A row of which nothing may have been sent shows `waiting` meanwhile (with why: the bank
   * unreachable, or refusing remessa's credentials; and when the next try is); a row whose step's outcome is unknown
   * keeps its state. Undefined: go on and try; else how the step ended (stopped; or `run`'s limit reached, or the
   * credentials refused in `run`: the row stays waiting, or `uncertain` when its outcome is unknown).
   */
  private async waitForBank(
    line: number,
    step: string,
    unknown: boolean,
    cause: RowError | undefined,
    lastUnknown?: RowError,
  ): Promise<StepResult | undefined> {
    const { batchId } = this.o;
    const credentials = this.gate.credentialsRefused;
    if (!unknown) {
      const nextS = Math.max(1, Math.ceil(this.gate.nextProbeInMs / 1000));
      const waiting: RowError = credentials
        ? {
            code: ENGINE_CODES.bankCredentialsRefused,
            message: t(
              this.locale,
              this.o.credentialsRefused?.waitForCredentials === false
                ? 'BANK_CREDENTIALS_REFUSED.run'
                : 'BANK_CREDENTIALS_REFUSED.waiting',
              { reason: cause?.message ?? t(this.locale, 'BANK_CREDENTIALS_REFUSED.otherRequest'), seconds: nextS },
            ),
          }
        : {
            code: ENGINE_CODES.bankUnreachable,
            message: t(this.locale, 'BANK_UNREACHABLE.waiting', {
              reason: cause?.message ?? t(this.locale, 'BANK_UNREACHABLE.otherRequest'),
              seconds: nextS,
            }),
          };
      await this.writeRow(line, (s) => s.recordRowWaiting(batchId, line, step, waiting));
    }
    const result = await this.gate.wait(this.signal, this.o.unreachable?.maxWaitMs);
    if (result === 'go') return undefined;
    if (result === 'stopped') {
      return this.stopRow(line, unknown ? stepRec(step, 'unknown') : undefined, lastUnknown);
    }
    if (result === 'refused') {
      // `run`, credentials refused: nothing more is sent. The row stays waiting; one of unknown outcome is left
      // uncertain (never failed), for the next run to resend with its key or look up once the key is accepted.
      if (unknown) {
        return this.endUncertain(line, step, {
          code: ENGINE_CODES.unknownAfterRetries,
          message: t(this.locale, 'UNKNOWN_OUTCOME.credentials', {
            step,
            reason: lastUnknown?.message ?? t(this.locale, 'UNKNOWN_OUTCOME.earlierAttempt'),
          }),
        });
      }
      this.log.warn({ line, step }, 'bank refused credentials: row left waiting');
      return { kind: 'stopped' };
    }
    // `run`'s limit: leave it for the next run or the daemon.
    if (unknown) {
      return this.endUncertain(line, step, {
        code: ENGINE_CODES.unknownAfterRetries,
        message: t(this.locale, 'UNKNOWN_OUTCOME.unreachable', {
          step,
          reason: lastUnknown?.message ?? t(this.locale, 'UNKNOWN_OUTCOME.earlierAttempt'),
        }),
      });
    }
    this.log.warn({ line, step }, 'bank unreachable: row left waiting');
    return { kind: 'stopped' };
  }

  private async endUncertain(line: number, step: string, error: RowError): Promise<StepResult> {
    const { batchId } = this.o;
    await this.writeRow(line, (s) => s.recordRowUncertain(batchId, line, step, error));
    return { kind: 'ended' };
  }

  /**
   * An attempt that certainly did not act (not sent, or 429). The step is `not_sent`, unless an earlier attempt's
   * outcome is unknown: then it stays `unknown` with that attempt's reason, so no later run takes it as never sent.
   */
  private recordNotSent(
    s: Store,
    line: number,
    step: string,
    error: RowError,
    unknown: boolean,
    lastUnknown?: RowError,
  ): Promise<void> {
    const { batchId } = this.o;
    if (unknown) return s.recordStepUnknown(batchId, line, step, lastUnknown ?? error);
    return s.recordStepNotSent(batchId, line, step, error);
  }

  /**
   * Rule 5 of src/store/rows.ts: the bank refused an attempt of a step whose earlier attempt has an unknown outcome.
   * The row fails only when the refusal is certainly not that attempt's trace: the bank replayed the first answer
   * (a refusal: the first attempt did nothing), or the step's evidence shows the earlier attempt did nothing. The
   * evidence may instead show the effect done by this row (the step is done); otherwise the row is `uncertain`, with
   * the refusal and the evidence in its message, for a person to check before acting by hand.
   */
  private async refusedAfterUnknown(
    step: StepSpec<unknown>,
    ctx: RowStepContext,
    line: number,
    refusal: RowError,
    error: unknown,
    lastUnknown: RowError | undefined,
    end: (to: 'failed' | 'uncertain', error: RowError) => Promise<StepResult>,
    done: (output: StepOutput) => Promise<StepResult>,
  ): Promise<StepResult> {
    const { batchId } = this.o;
    // A replayed refusal proves the first attempt did nothing, unless the bank already refused this key after an
    // unknown outcome (it had lost the key then): what it replays now is that refusal, not the first answer.
    const refusedBefore = lastUnknown?.code === ENGINE_CODES.refusedAfterUnknown;
    if (error instanceof ServiceError && error.replayed && !refusedBefore) {
      return end('failed', {
        code: refusal.code,
        message: t(this.locale, 'REFUSED.replayed', { message: refusal.message }),
      });
    }
    let evidence: RefusalEvidence | undefined;
    const serviceCode = error instanceof ServiceError ? error.serviceCode : undefined;
    // The step's own evidence; else its `recover` lookup (found: done; certainly absent: the attempt did nothing).
    const settle = step.settleRefusal
      ? (task: QueueTask) => step.settleRefusal!(inTask(ctx, task), { ...refusal, serviceCode })
      : step.recover
        ? async (task: QueueTask): Promise<RefusalEvidence> => {
            const found = await step.recover!(inTask(ctx, task));
            return found === undefined
              ? { kind: 'not-done', evidence: msg('EVIDENCE.lookedUpNotDone') }
              : { kind: 'done', output: found, evidence: msg('EVIDENCE.lookedUpDone') };
          }
        : undefined;
    if (settle) {
      try {
        this.attempts++;
        evidence = await this.o.queue.run(this.kind.group, settle, { signal: this.signal });
      } catch (lookupError) {
        if (this.signal?.aborted) {
          return this.stopRow(line, stepRec(step.name, 'unknown'), lastUnknown);
        }
        // A 401/403 to the lookup is no evidence (the row stays uncertain below), but the other rows should wait.
        if (isCredentialsRefusal(lookupError)) this.gate.refused();
        evidence = {
          kind: 'unclear',
          evidence: msg('EVIDENCE.lookupFailed', { reason: errorMessage(lookupError, this.locale) }),
        };
      }
    }
    this.log.info(
      { line, step: step.name, code: refusal.code, evidence: evidence?.kind ?? 'none' },
      'refusal after an attempt of unknown outcome',
    );
    if (evidence?.kind === 'done') return done(evidence.output);
    if (evidence?.kind === 'not-done') {
      return end('failed', {
        code: refusal.code,
        message: t(this.locale, 'REFUSED.evidence', { message: refusal.message, evidence: evidence.evidence }),
      });
    }
    // The step stays unknown, marked as refused once after it (for the replay rule above), with the first cause.
    const cause = lastUnknown?.message ?? t(this.locale, 'UNKNOWN_OUTCOME.itsOutcome');
    await this.writeRow(line, (s) =>
      s.recordStepUnknown(batchId, line, step.name, { code: ENGINE_CODES.refusedAfterUnknown, message: cause }),
    );
    return end('uncertain', {
      code: ENGINE_CODES.refusedAfterUnknown,
      message: t(this.locale, 'REFUSED_AFTER_UNKNOWN', {
        step: step.name,
        code: refusal.code,
        message: refusal.message,
        cause,
        evidence: evidence?.evidence,
        key: ctx.idempotencyKey,
      }),
    });
  }

  /** `decideRetry` after a failed attempt: judged by the service's status when it answered, else by the error. */
  private retryDecision(
    attempt: number,
    method: 'GET' | 'POST',
    hasIdempotencyKey: boolean,
    error: unknown,
  ): RetryDecision {
    return decideRetry({
      attempt,
      method,
      hasIdempotencyKey,
      ...(error instanceof ServiceError && error.status !== undefined
        ? { response: { status: error.status, headers: {} }, keyInUse: error instanceof IdempotencyError }
        : { error }),
      now: Date.now(),
      random: this.random,
      settings: this.retry,
    });
  }

  /** Looks a step's effect up (recover), with retries for transient failures of the lookup itself. */
  private async recover(
    step: StepSpec<unknown>,
    ctx: RowStepContext,
    line: number,
  ): Promise<
    | { kind: 'found'; output: StepOutput }
    | { kind: 'absent' }
    | { kind: 'stopped' }
    | { kind: 'failed'; error: RowError }
    | { kind: 'decided'; outcome: 'failed' | 'uncertain'; error: RowError }
  > {
    for (let attempt = 1; ; attempt++) {
      if (this.signal?.aborted) return { kind: 'stopped' };
      try {
        this.attempts++;
        const output = await this.o.queue.run(this.kind.group, (task) => step.recover!(inTask(ctx, task)), {
          signal: this.signal,
        });
        this.gate.reached();
        this.log.info({ line, step: step.name, found: output !== undefined }, 'looked up a step of unknown outcome');
        return output === undefined ? { kind: 'absent' } : { kind: 'found', output };
      } catch (error) {
        if (error instanceof StepOutcomeError) {
          return {
            kind: 'decided',
            outcome: error.outcome,
            error: { code: error.code, message: error.describe(this.locale) },
          };
        }
        if (this.signal?.aborted) return { kind: 'stopped' };
        if (error instanceof RateLimitedError) {
          attempt--;
          continue;
        }
        if (isCertainlyNotSent(error)) {
          // The bank is unreachable: the lookup waits for it like any attempt (the row keeps its unknown outcome).
          this.gate.failed();
          const waited = await this.gate.wait(this.signal, this.o.unreachable?.maxWaitMs);
          if (waited === 'stopped') return { kind: 'stopped' };
          if (waited === 'timeout') {
            return { kind: 'failed', error: { code: errorCode(error), message: errorMessage(error, this.locale) } };
          }
          attempt--;
          continue;
        }
        if (isCredentialsRefusal(error)) {
          // 401/403 to the lookup: it says nothing of the step's outcome, which stays unknown (the row never `failed`).
          this.gate.refused();
          const waited = await this.gate.wait(this.signal, this.o.unreachable?.maxWaitMs);
          if (waited === 'stopped') return { kind: 'stopped' };
          if (waited !== 'go') {
            return { kind: 'failed', error: { code: errorCode(error), message: errorMessage(error, this.locale) } };
          }
          attempt--;
          continue;
        }
        if (error instanceof ServiceError && error.mayHaveReachedServer) this.gate.reached();
        const decision = this.retryDecision(attempt, 'GET', false, error);
        if (!decision.retry)
          return { kind: 'failed', error: { code: errorCode(error), message: errorMessage(error, this.locale) } };
        try {
          await this.sleep(decision.delayMs, this.signal);
        } catch {
          return { kind: 'stopped' };
        }
      }
    }
  }
}

/** A row's request not sent because the bank gate closed for credentials while it waited for a connection. */
class GateClosedError extends RemessaError {
  constructor() {
    super(ENGINE_CODES.bankCredentialsRefused, 'another request was refused so just before', {
      detail: msg('BANK_CREDENTIALS_REFUSED.otherRequest'),
    });
  }
}

function stepRec(step: string, state: StepRecord['state']): StepRecord {
  return { step, state, attempts: 0, output: null, errorCode: null, errorMessage: null };
}

/**
 * What an error of an attempt means for the row:
 * - rate-limited: 429, not processed;
 * - failed: a definitive no (4xx, the client refused to send, a kind's own check said no);
 * - not-sent: nothing reached the bank;
 * - unknown: may have reached the bank (timeout, dropped connection, 5xx, 409 "same key in progress");
 * - bug: not the bank's error and not ours on purpose.
 */
export function classify(
  error: unknown,
  step: Pick<StepSpec<unknown>, 'usesIdempotencyKey'>,
): 'rate-limited' | 'failed' | 'not-sent' | 'unknown' | 'bug' {
  if (error instanceof RateLimitedError) return 'rate-limited';
  if (error instanceof ServiceConnectionError || error instanceof ServiceTimeoutError) {
    return error.mayHaveReachedServer ? 'unknown' : 'not-sent';
  }
  if (error instanceof ServerError) return 'unknown';
  if (error instanceof IdempotencyError && error.status === 409 && step.usesIdempotencyKey) {
    // The bank still works on the first request with this key: its outcome is not known yet.
    return 'unknown';
  }
  if (error instanceof ServiceError) {
    const s = error.status;
    if (s === 408) return 'unknown';
    if (s !== undefined && s >= 400 && s < 500) return 'failed';
    // A 2xx whose body is not what we expect (UnexpectedResponseError): the bank acted, we cannot read how.
    return 'unknown';
  }
  if (error instanceof RemessaError) return 'failed';
  return 'bug';
}

function errorCode(error: unknown): string {
  if (error instanceof RemessaError) return error.code;
  return ENGINE_CODES.stepError;
}

/**
 * What the bank said in an error answer, in its own words: its messages (after its code), else, for an error answer
 * (HTTP 4xx/5xx), its problem's title and traceId (a 404 problem has nothing else; the traceId is what the bank's
 * support asks for), never remessa's request line (`POST /v1/charges/X/void failed with HTTP 404`: English for the
 * log, not for the person reading the row). A 2xx remessa could not read keeps remessa's description of what was wrong.
 */
function bankSaid(error: ServiceError, locale: Locale): string {
  if (error.messages.length > 0) {
    const detail = error.messages.join('; ');
    return error.serviceCode && !detail.includes(error.serviceCode) ? `${error.serviceCode}: ${detail}` : detail;
  }
  if (error.status === undefined || error.status < 400) return error.message;
  const words = [error.serviceCode, error.title].filter((w): w is string => w !== undefined && w !== '');
  const text = words.length > 0 ? words.join(': ') : t(locale, 'BANK_ANSWER.noText');
  return error.traceId ? `${text} (traceId ${error.traceId})` : text;
}

/**
 * The message stored on the row and written to the result file, for a person reading `locale`: never a secret
 * (scrubbed like a log line). The bank's answers keep the bank's own words, after a lead-in in the reader's words
 * that says who said them (a refusal, HTTP 4xx, or an error of the bank); remessa's own errors say their catalogue
 * sentence in the reader's words when they have one (`RemessaError.describe`).
 */
function errorMessage(error: unknown, locale: Locale): string {
  if (error instanceof ServiceError) {
    const status = error.status;
    // No answer came (a network failure): remessa's own words, in the reader's language.
    if (status === undefined) return scrubSecrets(error.describe(locale));
    const said = scrubSecrets(bankSaid(error, locale));
    // Not a refusal: a timeout, a rate limit, or a key whose first request the bank is still working on (classify).
    const refused =
      status >= 400 &&
      status < 500 &&
      status !== 408 &&
      status !== 429 &&
      !(error instanceof IdempotencyError && status === 409);
    return t(locale, refused ? 'BANK_ANSWER.refused' : 'BANK_ANSWER.error', { status, said });
  }
  if (error instanceof RemessaError) return scrubSecrets(error.describe(locale));
  return scrubSecrets(error instanceof Error ? error.message : String(error));
}
