/**
 * The commands: `daemon` (in ./daemon.ts), `run`, `validate` and `status`. src/cli.ts parses the arguments and the
 * configuration and calls these; each returns the process exit code.
 *
 * Exit codes:
 * - 0: everything succeeded (every row `succeeded`, or `duplicate` of a row that did; `validate`: no error).
 * - 1: the command ran, but some row did not succeed, a file was rejected (`run`), or the file is invalid
 *   (`validate`).
 * - 2: the command could not run (bank unreachable at start, store unusable, file missing).
 *
 * The pipeline glue: a taken file goes to the engine (src/runner/engine.ts), which reads it (src/csv), validates
 * and stores its rows (src/batches, src/store), sends them through the queue (src/queue, src/bank) and writes the
 * one answer (src/outbox). A file that cannot be processed as a whole (unknown kind, empty, not text, missing
 * columns; or answered by the intake itself: a link, a special or unreadable file, a cut-off upload) gets a
 * `<name>.rejected.txt` instead.
 *
 * A file taken by the intake is checked against what was taken (src/intake/intake.ts) before it is read, after its
 * last byte is read (before any row is sent) and before its answer is written. A change before sending gives the
 * partial batch up in the store (nothing sent, its natural keys released); a change after sending leaves the rows
 * sent as they are (the re-read answers them as duplicates of themselves, never sends them again). Either way no
 * answer is written and FileChangedError makes the intake read the file again once it settles.
 */
import { setMaxListeners } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BankClient, type BankClientOptions } from '../bank/client.js';
import { NotFoundError, ServiceError } from '../bank/errors.js';
import type { RetrySettings } from '../bank/retry-policy.js';
import type { BatchKind } from '../batches/kind.js';
import { kindFor, KINDS as REGISTERED_KINDS } from '../batches/registry.js';
import { type BatchReader, readBatch } from '../csv/reader.js';
import { InputError } from '../errors.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK, EXIT_UNSETTLED } from '../exit-codes.js';
import { DEFAULT_LOCALE, type Locale, type Message, render, t } from '../i18n/index.js';
import {
  archiveWorkItem,
  FileChangedError,
  Intake,
  sha256File,
  stemOf,
  type TakenBatch,
  takeIntoWorkArea,
  type WorkItem,
  type WorkMeta,
} from '../intake/index.js';
import { filesDirFor, writeRejected, writeResult } from '../outbox/result.js';
import { queueOptionsFromConfig, RequestQueue } from '../queue/request-queue.js';
import type { RunningSandbox } from '../sandbox/server.js';
import { openStore, type RowCounts, type RowState, rowOutcome, type Store } from '../store/index.js';
import type { EndpointGroup, KindName, RowOutcome } from '../types.js';
import {
  type BatchInput,
  BatchRejectedError,
  DEFAULT_ENGINE_RETRY,
  type ProcessBatchResult,
  processBatch,
  resumeUnfinishedBatches,
} from './engine.js';
import { acquireDataFolderLock, describeHolder } from './lock.js';
import { out, type RunnerOptions, readOptions } from './options.js';
import { createProgress, estimateRows, isInteractive, type Progress } from './progress.js';
import { kindOfGivenFile } from './validate.js';

export { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK, EXIT_UNSETTLED } from '../exit-codes.js';
export { type BankClientOptionsLike, type RunnerOptions, runnerOptionsFromConfig } from './options.js';
export { kindOfGivenFile, type ValidationReport, validateBatchFile, validateFile } from './validate.js';

/** Counts of row outcomes of one batch, as the engine reports them. */
export type OutcomeCounts = Partial<Record<RowOutcome, number>>;

/** The answer given to one batch. */
export interface BatchAnswer {
  /** 'done': answered; 'parked': stopped before every row was answered (resumed later). */
  state: 'done' | 'parked';
  /** 'result' or 'rejected' (whole file). */
  answer: 'result' | 'rejected';
  counts: OutcomeCounts;
  /** Path of the answer file. */
  file: string;
}

/** The open pipeline: store, bank client (and embedded sandbox), queue. */
export interface Pipeline {
  /** The bank's base URL (the embedded sandbox's when embedded). */
  bankUrl: string;
  /** `<data>/work`. */
  workDir: string;
  /** Processes one taken batch and writes its one answer. */
  handleBatch(batch: TakenBatch, options: { signal: AbortSignal; progress?: Progress }): Promise<'done' | 'parked'>;
  /** Like handleBatch, but returns the counts (for `run`). */
  processBatch(batch: TakenBatch, options: { signal: AbortSignal; progress?: Progress }): Promise<BatchAnswer>;
  /** Retries rows left uncertain (or in flight by a crash) in earlier batches. */
  resumeUncertain(signal: AbortSignal): Promise<void>;
  /** The store, queue and client, for the operator's endpoint (metrics, readiness). */
  readonly store: Store;
  readonly queue: RequestQueue;
  readonly client: BankClient;
  /**
   * One read the bank must answer (a charge that does not exist): resolves when it answers in any way that shows it is
   * there and knows our key (404 included), rejects with a reason a person reads otherwise.
   */
  probeBank(signal: AbortSignal): Promise<void>;
  close(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
const KINDS = REGISTERED_KINDS as Readonly<Record<KindName, BatchKind<any>>>;

/** The registered kind called `name`, or undefined. */
// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
export function kindByName(name: string): BatchKind<any> | undefined {
  return kindFor(name);
}

/** Where answers to files of no known kind go: the folder they were dropped in, or `_unknown` for the inbox root. */
export const UNKNOWN_KIND_FOLDER = '_unknown';

function describeOutcomeCounts(counts: RowCounts): OutcomeCounts {
  const o: OutcomeCounts = {};
  for (const [state, n] of Object.entries(counts) as Array<[RowState, number]>) {
    if (n === 0) continue;
    const outcome = rowOutcome(state);
    o[outcome] = (o[outcome] ?? 0) + n;
  }
  return o;
}

/** Opens the store, the bank client (starting the embedded sandbox when configured) and the request queue. */
export async function openPipeline(options: RunnerOptions): Promise<Pipeline> {
  const log = options.logger;
  const { folders } = options;
  await fs.mkdir(folders.data, { recursive: true });
  await fs.mkdir(folders.outbox, { recursive: true });
  let sandbox: RunningSandbox | undefined;
  let baseUrl: string;
  let apiKey: string;
  let clientOptions: Omit<BankClientOptions, 'baseUrl' | 'apiKey'>;
  let accountId: string;
  if (options.bank.embedded) {
    // Loaded only when embedded: the sandbox (fastify, PDF and barcode libraries) is ~40 MB and ~1 s of start-up
    // that `validate` and runs against a real bank do not need (docs/performance.md).
    const { startSandbox, SANDBOX_PUBLIC_API_KEY } = await import('../sandbox/server.js');
    sandbox = await startSandbox({
      dataFile: options.bank.sandboxDataFile ?? path.join(folders.data, 'sandbox.sqlite'),
      host: options.bank.sandboxHost ?? '127.0.0.1',
      port: options.bank.sandboxPort ?? 0,
      // The embedded sandbox logs only its warnings: one line per request would drown the daemon's own log.
      logger: log.child({ component: 'sandbox' }, { level: 'warn' }),
    });
    log.info({ url: sandbox.url }, 'embedded sandbox started');
    baseUrl = sandbox.url;
    apiKey = SANDBOX_PUBLIC_API_KEY;
    clientOptions = options.bank.client ?? {};
    accountId = options.bank.accountId ?? 'sandbox';
  } else {
    ({ baseUrl, apiKey, ...clientOptions } = options.bank.client);
    accountId = options.bank.accountId;
  }
  // Retries live in the engine (one pure policy, 429s pause the whole group): the client makes one attempt.
  const retry: RetrySettings = {
    maxAttempts: clientOptions.maxAttempts ?? DEFAULT_ENGINE_RETRY.maxAttempts,
    baseDelayMs: clientOptions.baseDelayMs ?? DEFAULT_ENGINE_RETRY.baseDelayMs,
    maxDelayMs: clientOptions.maxDelayMs ?? DEFAULT_ENGINE_RETRY.maxDelayMs,
    maxRetryAfterMs: clientOptions.maxRetryAfterMs ?? DEFAULT_ENGINE_RETRY.maxRetryAfterMs,
  };
  const client = new BankClient({
    ...clientOptions,
    baseUrl,
    apiKey,
    accountId,
    maxAttempts: 1,
    connections: Math.max(clientOptions.connections ?? 8, options.queue.concurrency),
    logger: log.child({ component: 'bank' }),
    ...(options.metrics ? { onAttempt: (a) => options.metrics?.observeRequest(a) } : {}),
  });
  let store: Store;
  try {
    store = openStore(path.join(folders.data, STORE_FILE_NAME));
  } catch (err) {
    await client.close();
    await sandbox?.close();
    throw err;
  }
  const queue = new RequestQueue(
    queueOptionsFromConfig({
      concurrency: options.queue.concurrency,
      maxRowsInFlight: options.queue.maxRowsInFlight,
      rateLimits: options.queue.rateLimits as Record<EndpointGroup, { requests: number; intervalMs: number }>,
    }),
  );
  const common = { store, client, queue, accountId, retry, logger: log, locale: options.locale };

  async function reject(
    batch: TakenBatch,
    folder: string,
    error: { code: string; message: string; detail?: Message | undefined },
  ): Promise<BatchAnswer> {
    await checkUnchanged(batch);
    const file = await writeRejected({
      outboxDir: folders.outbox,
      kind: folder,
      name: batch.stem,
      fileName: batch.item.meta.name,
      // An answer worded by catalogue key (the intake's) is said in the locale; others as they were raised.
      error: { code: error.code, message: error.detail ? render(options.locale, error.detail) : error.message },
      locale: options.locale,
    });
    log.warn({ file: batch.item.meta.relativePath, code: error.code, answer: file }, 'file rejected as a whole');
    return { state: 'done', answer: 'rejected', counts: {}, file };
  }

  async function processTaken(
    batch: TakenBatch,
    opts: { signal: AbortSignal; progress?: Progress | undefined },
  ): Promise<BatchAnswer> {
    const { meta } = batch.item;
    // The intake answered the file as a whole (a link, a special or unreadable file, a cut-off upload): never read.
    if (meta.rejection) return reject(batch, meta.kind ?? meta.folder ?? UNKNOWN_KIND_FOLDER, meta.rejection);
    if (meta.kind === null) {
      return reject(batch, meta.folder ?? UNKNOWN_KIND_FOLDER, {
        code: 'UNKNOWN_KIND',
        message: meta.unknownKindReason ?? `Expected a known batch kind, got "${meta.name}"`,
      });
    }
    const kindName = meta.kind;
    const kind = KINDS[kindName];
    let reader: BatchReader | undefined;
    const known = store.getBatch(batch.sha256);
    // A batch whose rows are all stored needs no reading (same content dropped again, or resumed after a crash).
    if (!known || known.status === 'ingesting') {
      try {
        reader = await readBatch(batch.item.file, readOptions(options, kindName, meta.name));
      } catch (err) {
        if (err instanceof InputError) {
          return reject(batch, kindName, { code: err.code, message: err.describe(options.locale) });
        }
        throw err;
      }
    }
    let result: ProcessBatchResult;
    try {
      // What was hashed and opened must still be what was taken before a row is stored or sent.
      await checkUnchanged(batch);
      result = await processBatch({
        ...common,
        kind,
        batchId: batch.sha256,
        fileName: meta.name,
        input: reader && batch.unchanged ? checkedAtEnd(reader, batch) : reader,
        filesDir: filesDirFor(folders.outbox, kindName, batch.stem),
        policy: options.policy[kindName],
        signal: opts.signal,
        onProgress: opts.progress
          ? (p) =>
              opts.progress?.update(
                p.phase === 'run' ? p.finished : 0,
                p.phase === 'run' ? p.toRun : undefined,
                p.batchId,
              )
          : undefined,
      });
    } catch (err) {
      if (err instanceof BatchRejectedError || err instanceof InputError) {
        const message = err instanceof InputError ? err.describe(options.locale) : err.message;
        return reject(batch, kindName, { code: err.code, message });
      }
      throw err;
    } finally {
      reader?.close();
    }
    const counts = describeOutcomeCounts(result.counts);
    if (!result.complete) {
      return { state: 'parked', answer: 'result', counts, file: '' };
    }
    // An answer never covers part of a file: one that grew meanwhile is read again (its rows already sent are known
    // by their natural keys, so they are answered as duplicates of themselves and never sent twice).
    await checkUnchanged(batch);
    const written = await writeResult(store, batch.sha256, {
      outboxDir: folders.outbox,
      kind,
      name: batch.stem,
      locale: options.locale,
    });
    log.info({ file: meta.relativePath, counts, answer: written.resultPath }, 'batch answered');
    return { state: 'done', answer: 'result', counts, file: written.resultPath };
  }

  return {
    bankUrl: baseUrl,
    workDir: path.join(folders.data, 'work'),
    store,
    queue,
    client,
    async probeBank(signal) {
      try {
        await client.charges.get('remessa-readiness-probe', { signal });
      } catch (err) {
        if (err instanceof NotFoundError) return;
        if (err instanceof ServiceError) {
          throw new Error(`${err.code}${err.status !== undefined ? ` (HTTP ${err.status})` : ''}: ${err.message}`);
        }
        throw err;
      }
    },
    processBatch: processTaken,
    handleBatch: async (batch, opts) => (await processTaken(batch, opts)).state,
    async resumeUncertain(signal) {
      const { results, errors } = await resumeUnfinishedBatches({
        ...common,
        signal,
        kindFor: (name) => kindByName(name),
        filesDirFor: (b) => filesDirFor(folders.outbox, b.kind, stemOf(b.fileName)),
        policyFor: (b) => options.policy[b.kind],
      });
      for (const r of results) {
        if (!r.complete) continue;
        const kind = KINDS[r.batch.kind];
        const name = stemOf(r.batch.fileName);
        const written = await writeResult(store, r.batch.id, {
          outboxDir: folders.outbox,
          kind,
          name,
          locale: options.locale,
        });
        log.info(
          { batch: r.batch.fileName, counts: describeOutcomeCounts(r.counts), answer: written.resultPath },
          'resumed batch answered again',
        );
      }
      for (const e of errors) log.error({ err: e.error, batch: e.batch.fileName }, 'could not resume batch');
    },
    async close() {
      await client.close().catch((err) => log.warn({ err }, 'closing the bank client failed'));
      store.close();
      await sandbox?.close();
    },
  };
}

/** Outcomes that end a row for good; anything else (uncertain, waiting, ...) is left for a later run or a person. */
const SETTLED_OUTCOMES: ReadonlySet<string> = new Set(['succeeded', 'duplicate', 'rejected', 'failed']);

/** Whether some row of the counts is not settled yet. */
export function hasUnsettled(counts: OutcomeCounts): boolean {
  return Object.entries(counts).some(([outcome, n]) => (n ?? 0) > 0 && !SETTLED_OUTCOMES.has(outcome));
}

/**
 * The reader's rows, then a last check that the file is still what was taken, after its last byte was read and
 * before any row is sent (the engine sends only once every row is stored). A file that changed while it was read
 * ends its rows with an InputError: the engine then gives up the batch with nothing sent (store.rejectBatch), and
 * the rejection's own check raises FileChangedError, so the file is read again rather than answered.
 */
function checkedAtEnd(reader: BatchReader, batch: TakenBatch): BatchInput {
  const rows = reader.rows;
  return {
    dialect: reader.dialect,
    header: reader.header,
    rows: (async function* () {
      yield* rows;
      if (batch.unchanged && !(await batch.unchanged())) {
        throw new InputError(
          'FILE_CHANGED_WHILE_READ',
          'the file changed while it was being read (its writer was still at work); nothing was sent. Drop it again once it is complete',
          { file: batch.item.meta.name },
        );
      }
    })(),
  };
}

/** Throws FileChangedError when the taken file is no longer what was taken (its writer was still at work). */
async function checkUnchanged(batch: TakenBatch): Promise<void> {
  if (batch.unchanged && !(await batch.unchanged())) throw new FileChangedError(batch.item.meta.relativePath);
}

/** Whether the counts mean every row succeeded (a duplicate repeats an owner that succeeded or is still open). */
export function allSucceeded(counts: OutcomeCounts): boolean {
  return (counts.rejected ?? 0) === 0 && (counts.failed ?? 0) === 0 && (counts.uncertain ?? 0) === 0;
}

function formatCounts(counts: OutcomeCounts, locale: Locale): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length > 0 ? parts.join(', ') : t(locale, 'STATUS.noRows');
}

export interface RunOnceOptions {
  /**
   * How long to wait for the data folder when another process (a daemon, another run) drives it, in milliseconds;
   * `Infinity` waits until it is free. @defaultValue 0 (refused at once, exit 2)
   */
  waitLockMs?: number;
}

/**
 * `remessa run [FILE...]`: with files, processes each (a file inside the inbox is taken and archived as the daemon
 * does; one elsewhere is read where it is) and writes its answer to the outbox; without, resumes the work area,
 * takes everything waiting in the inbox (files
 * still being written are awaited) and processes it like the daemon does. Uncertain rows of earlier batches are
 * retried first. Exit 0 only when every row succeeded.
 */
export async function runOnce(
  options: RunnerOptions,
  files: readonly string[] = [],
  kind?: KindName,
  run: RunOnceOptions = {},
): Promise<number> {
  const log = options.logger;
  // One writer per data folder (./lock.ts): refused at once (DataFolderLockedError, exit 2), or waited for.
  const lock = await acquireDataFolderLock(options.folders.data, {
    waitMs: run.waitLockMs ?? 0,
    onWait: (holder) =>
      log.info({ holder: describeHolder(holder) }, 'waiting for the data folder: another process drives it'),
  });
  let pipeline: Pipeline;
  try {
    pipeline = await openPipeline(options);
  } catch (err) {
    log.error({ err }, 'cannot start');
    await lock.release();
    return EXIT_CANNOT_RUN;
  }
  const abort = new AbortController();
  // Every row waiting for a queue slot listens to the stop signal: far more than Node's default warning threshold.
  setMaxListeners(0, abort.signal);
  const onSignal = () => abort.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const stream = options.progressStream ?? process.stderr;
  const interactive = isInteractive(stream);
  let ok = true;
  let unsettled = false;
  // A file given that is not there is a bad argument: the run could not do what it was asked (exit 2).
  let missing = false;
  const report = (name: string, answer: BatchAnswer) => {
    if (answer.answer === 'rejected') ok = false;
    if (!allSucceeded(answer.counts)) ok = false;
    if (answer.state === 'parked' || hasUnsettled(answer.counts)) unsettled = true;
    out(options).write(
      `${name}: ${answer.answer === 'rejected' ? 'rejected' : formatCounts(answer.counts, options.locale)}` +
        `${answer.state === 'parked' ? ` (${t(options.locale, 'RUN.parked')})` : ` -> ${answer.file}`}\n`,
    );
  };
  try {
    await pipeline.resumeUncertain(abort.signal);
    if (files.length > 0) {
      for (const file of files) {
        if (abort.signal.aborted) break;
        const abs = path.resolve(file);
        const inInbox = !path.relative(options.folders.inbox, abs).startsWith('..');
        // In the inbox, a link is never followed (as the daemon does: it answers it without reading its target).
        const stat = await (inInbox ? fs.lstat(abs) : fs.stat(abs)).catch(() => undefined);
        if (!stat?.isFile()) {
          out(options).write(`${file}: ${t(options.locale, !stat ? 'RUN.notFound' : 'RUN.notRegular')}\n`);
          missing = true;
          continue;
        }
        const k = kind ?? kindOfGivenFile(abs);
        const name = path.basename(abs);
        const meta: WorkMeta = {
          kind: k ?? null,
          name,
          folder: k ?? null,
          relativePath: file,
          takenAt: new Date().toISOString(),
        };
        if (!k) {
          meta.unknownKindReason = `Expected the file to be in a kind folder or named <kind>-*.csv (or --kind given), got "${name}"`;
        }
        // A file given from the inbox is taken like the daemon takes it (moved to the work area, archived once
        // answered), so it is not found and answered again later; a file elsewhere is read where it is.
        let item: WorkItem | undefined = { id: 'given', dir: path.dirname(abs), file: abs, meta };
        if (inInbox) {
          const { takenAt: _, ...rest } = meta;
          item = await takeIntoWorkArea(pipeline.workDir, abs, rest);
          if (!item) {
            out(options).write(`${file}: ${t(options.locale, 'RUN.takenMeanwhile')}\n`);
            continue;
          }
        }
        const batch: TakenBatch = { item, sha256: await sha256File(item.file), stem: stemOf(name) };
        const progress = createProgress({ stream, locale: options.locale });
        progress.start(`${k ?? '?'} ${name}`, interactive ? await estimateRows(item.file) : undefined);
        try {
          const answer = await pipeline.processBatch(batch, { signal: abort.signal, progress });
          report(file, answer);
          if (inInbox && answer.state === 'done') await archiveWorkItem(options.folders.archive, item, batch.sha256);
        } finally {
          progress.stop();
        }
      }
    } else {
      const intake = new Intake(
        {
          inboxDir: options.folders.inbox,
          workDir: pipeline.workDir,
          archiveDir: options.folders.archive,
          stableMs: options.intake.stableMs,
          cutOffMs: options.intake.cutOffMs,
          requireDoneMarker: options.intake.requireDoneMarker,
          maxConcurrentFiles: 1,
          logger: log,
        },
        async (batch, signal) => {
          const progress = createProgress({ stream, locale: options.locale });
          progress.start(
            `${batch.item.meta.kind ?? '?'} ${batch.item.meta.name}`,
            interactive ? await estimateRows(batch.item.file) : undefined,
          );
          try {
            const answer = await pipeline.processBatch(batch, { signal, progress });
            report(batch.item.meta.relativePath, answer);
            return answer.state;
          } finally {
            progress.stop();
          }
        },
      );
      abort.signal.addEventListener('abort', () => void intake.stop(), { once: true });
      await intake.drain();
      // A file that could not be handled stays in the work area, unanswered: the next run takes it again.
      if (intake.counts.failed > 0) unsettled = true;
      if (intake.counts.done + intake.counts.parked + intake.counts.failed === 0) {
        out(options).write(`${t(options.locale, 'RUN.nothingWaiting')}\n`);
      }
    }
    if (missing) return EXIT_CANNOT_RUN;
    if (unsettled) return EXIT_UNSETTLED;
    return ok ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
  } catch (err) {
    log.error({ err }, 'run failed');
    return EXIT_CANNOT_RUN;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await pipeline.close();
    await lock.release();
  }
}

/** `remessa status`: batches, rows by status, uncertain rows with their reasons, from the store. */
export async function showStatus(options: RunnerOptions): Promise<number> {
  const file = path.join(options.folders.data, STORE_FILE_NAME);
  if (!(await fs.stat(file).catch(() => undefined))) {
    out(options).write(`${t(options.locale, 'STATUS.noStore', { file })}\n`);
    return EXIT_OK;
  }
  let store: Store | undefined;
  try {
    store = openStore(file);
    out(options).write(renderStatus(store, {}, options.locale));
    return EXIT_OK;
  } catch (err) {
    options.logger.error({ err }, 'cannot read the store');
    return EXIT_CANNOT_RUN;
  } finally {
    store?.close();
  }
}

/** The text of `remessa status`. */
export function renderStatus(
  store: Store,
  limits: { batches?: number; uncertain?: number } = {},
  locale: Locale = DEFAULT_LOCALE,
): string {
  const lines: string[] = [];
  const batches = store.listBatches();
  const total: Record<string, number> = {};
  lines.push(t(locale, 'STATUS.batches', { count: batches.length }));
  for (const b of batches.slice(0, limits.batches ?? 50)) {
    const counts = store.countRows(b.id);
    for (const [k, n] of Object.entries(counts)) total[k] = (total[k] ?? 0) + n;
    const shown = Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    lines.push(
      `  ${b.createdAt}  ${b.kind.padEnd(19)} ${b.fileName}  [${b.status}]  ${shown || t(locale, 'STATUS.noRows')}  (${b.id.slice(0, 12)})`,
    );
  }
  if (batches.length > (limits.batches ?? 50)) {
    lines.push(`  ${t(locale, 'STATUS.older', { count: batches.length - (limits.batches ?? 50) })}`);
  }
  for (const b of batches.slice(limits.batches ?? 50)) {
    for (const [k, n] of Object.entries(store.countRows(b.id))) total[k] = (total[k] ?? 0) + n;
  }
  const totals = Object.entries(total)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  lines.push(t(locale, 'STATUS.rows', { counts: totals || t(locale, 'STATUS.none') }));
  const uncertain = store.uncertainRows(limits.uncertain ?? 100);
  lines.push(
    t(locale, 'STATUS.uncertain', {
      count: `${uncertain.length}${uncertain.length === (limits.uncertain ?? 100) ? '+' : ''}`,
    }),
  );
  for (const r of uncertain) {
    lines.push(
      `  ${t(locale, 'STATUS.uncertainRow', {
        kind: r.kind,
        file: r.fileName,
        line: r.line,
        step: r.currentStep ?? undefined,
        code: r.errorCode ?? 'UNKNOWN',
        message: r.errorMessage ?? '',
        key: r.idempotencyKey ?? '-',
      })}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The store's file name inside the data folder. */
export const STORE_FILE_NAME = 'remessa.sqlite';
