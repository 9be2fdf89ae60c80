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
 * columns) gets a `<name>.rejected.txt` instead.
 */
import { setMaxListeners } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BankClient, type BankClientOptions } from '../bank/client.js';
import type { RetrySettings } from '../bank/retry-policy.js';
import type { BatchKind } from '../batches/kind.js';
import { kindFor, KINDS as REGISTERED_KINDS } from '../batches/registry.js';
import { type BatchReader, readBatch } from '../csv/reader.js';
import { InputError } from '../errors.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK } from '../exit-codes.js';
import {
  archiveWorkItem,
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
import { DEFAULT_UNREACHABLE_DELAYS_MS } from './bank-gate.js';
import {
  BatchRejectedError,
  DEFAULT_ENGINE_RETRY,
  type ProcessBatchResult,
  processBatch,
  resumeUnfinishedBatches,
} from './engine.js';
import { out, type RunnerOptions, readOptions } from './options.js';
import { createProgress, estimateRows, isInteractive, type Progress } from './progress.js';
import { kindOfGivenFile } from './validate.js';

export { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK } from '../exit-codes.js';
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

/**
 * Opens the store, the bank client (starting the embedded sandbox when configured) and the request queue.
 * `waitForBank.maxWaitMs`: how long rows wait for an unreachable bank before they are left `waiting` (`run`); absent,
 * they wait until it is back or the process stops (the daemon).
 */
export async function openPipeline(
  options: RunnerOptions,
  waitForBank: { maxWaitMs?: number } = {},
): Promise<Pipeline> {
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
  const unreachable = {
    retryDelaysMs: options.unreachable?.retryDelaysMs ?? [...DEFAULT_UNREACHABLE_DELAYS_MS],
    maxWaitMs: waitForBank.maxWaitMs,
  };
  const common = { store, client, queue, accountId, retry, unreachable, logger: log };

  async function reject(
    batch: TakenBatch,
    folder: string,
    error: { code: string; message: string },
  ): Promise<BatchAnswer> {
    const file = await writeRejected({
      outboxDir: folders.outbox,
      kind: folder,
      name: batch.stem,
      fileName: batch.item.meta.name,
      error,
    });
    log.warn({ file: batch.item.meta.relativePath, code: error.code, answer: file }, 'file rejected as a whole');
    return { state: 'done', answer: 'rejected', counts: {}, file };
  }

  async function processTaken(
    batch: TakenBatch,
    opts: { signal: AbortSignal; progress?: Progress | undefined },
  ): Promise<BatchAnswer> {
    const { meta } = batch.item;
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
        if (err instanceof InputError) return reject(batch, kindName, { code: err.code, message: err.message });
        throw err;
      }
    }
    let result: ProcessBatchResult;
    try {
      result = await processBatch({
        ...common,
        kind,
        batchId: batch.sha256,
        fileName: meta.name,
        input: reader,
        filesDir: filesDirFor(folders.outbox, kindName, batch.stem),
        policy: options.policy[kindName],
        signal: opts.signal,
        onProgress: opts.progress
          ? (p) => opts.progress?.update(p.phase === 'run' ? p.finished : 0, p.phase === 'run' ? p.toRun : undefined)
          : undefined,
      });
    } catch (err) {
      if (err instanceof BatchRejectedError || err instanceof InputError) {
        return reject(batch, kindName, { code: err.code, message: err.message });
      }
      throw err;
    } finally {
      reader?.close();
    }
    const counts = describeOutcomeCounts(result.counts);
    if (!result.complete) {
      return { state: 'parked', answer: 'result', counts, file: '' };
    }
    const written = await writeResult(store, batch.sha256, { outboxDir: folders.outbox, kind, name: batch.stem });
    log.info({ file: meta.relativePath, counts, answer: written.resultPath }, 'batch answered');
    return { state: 'done', answer: 'result', counts, file: written.resultPath };
  }

  return {
    bankUrl: baseUrl,
    workDir: path.join(folders.data, 'work'),
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
        const written = await writeResult(store, r.batch.id, { outboxDir: folders.outbox, kind, name });
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

/** Whether the counts mean every row succeeded (a duplicate repeats an owner that succeeded or is still open). */
export function allSucceeded(counts: OutcomeCounts): boolean {
  return (
    (counts.rejected ?? 0) === 0 &&
    (counts.failed ?? 0) === 0 &&
    (counts.uncertain ?? 0) === 0 &&
    (counts.waiting ?? 0) === 0
  );
}

function formatCounts(counts: OutcomeCounts): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length > 0 ? parts.join(', ') : 'no rows';
}

/**
 * `remessa run [FILE...]`: with files, processes each (a file inside the inbox is taken and archived as the daemon
 * does; one elsewhere is read where it is) and writes its answer to the outbox; without, resumes the work area,
 * takes everything waiting in the inbox (files
 * still being written are awaited) and processes it like the daemon does. Uncertain rows of earlier batches are
 * retried first. Exit 0 only when every row succeeded.
 */
export async function runOnce(options: RunnerOptions, files: readonly string[] = [], kind?: KindName): Promise<number> {
  const log = options.logger;
  let pipeline: Pipeline;
  try {
    pipeline = await openPipeline(options, { maxWaitMs: options.unreachable?.runMaxWaitMs ?? 300_000 });
  } catch (err) {
    log.error({ err }, 'cannot start');
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
  const report = (name: string, answer: BatchAnswer) => {
    if (answer.answer === 'rejected') ok = false;
    if (!allSucceeded(answer.counts) || answer.state === 'parked') ok = false;
    const waiting = answer.counts.waiting ?? 0;
    const parked =
      waiting > 0
        ? ` (${waiting} row(s) waiting: the bank cannot be reached and nothing of them was sent; not answered yet: the next run or the daemon sends them)`
        : ' (stopped early: not answered yet, resumes on the next run)';
    out(options).write(
      `${name}: ${answer.answer === 'rejected' ? 'rejected' : formatCounts(answer.counts)}` +
        `${answer.state === 'parked' ? parked : ` -> ${answer.file}`}\n`,
    );
  };
  try {
    await pipeline.resumeUncertain(abort.signal);
    if (files.length > 0) {
      for (const file of files) {
        if (abort.signal.aborted) break;
        const abs = path.resolve(file);
        const stat = await fs.stat(abs).catch(() => undefined);
        if (!stat?.isFile()) {
          out(options).write(`${file}: not found\n`);
          ok = false;
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
        const inInbox = !path.relative(options.folders.inbox, abs).startsWith('..');
        let item: WorkItem | undefined = { id: 'given', dir: path.dirname(abs), file: abs, meta };
        if (inInbox) {
          const { takenAt: _, ...rest } = meta;
          item = await takeIntoWorkArea(pipeline.workDir, abs, rest);
          if (!item) {
            out(options).write(`${file}: taken by another process meanwhile\n`);
            continue;
          }
        }
        const batch: TakenBatch = { item, sha256: await sha256File(item.file), stem: stemOf(name) };
        const progress = createProgress({ stream });
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
          requireDoneMarker: options.intake.requireDoneMarker,
          maxConcurrentFiles: 1,
          logger: log,
        },
        async (batch, signal) => {
          const progress = createProgress({ stream });
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
      if (intake.counts.failed > 0) ok = false;
      if (intake.counts.done + intake.counts.parked + intake.counts.failed === 0) {
        out(options).write('nothing waiting in the inbox\n');
      }
    }
    return ok ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
  } catch (err) {
    log.error({ err }, 'run failed');
    return EXIT_CANNOT_RUN;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await pipeline.close();
  }
}

/** `remessa status`: batches, rows by status, uncertain rows with their reasons, from the store. */
export async function showStatus(options: RunnerOptions): Promise<number> {
  const file = path.join(options.folders.data, STORE_FILE_NAME);
  if (!(await fs.stat(file).catch(() => undefined))) {
    out(options).write(`No store yet at ${file}: nothing has been processed.\n`);
    return EXIT_OK;
  }
  let store: Store | undefined;
  try {
    store = openStore(file);
    out(options).write(renderStatus(store));
    return EXIT_OK;
  } catch (err) {
    options.logger.error({ err }, 'cannot read the store');
    return EXIT_CANNOT_RUN;
  } finally {
    store?.close();
  }
}

/** The text of `remessa status`. */
export function renderStatus(store: Store, limits: { batches?: number; uncertain?: number } = {}): string {
  const lines: string[] = [];
  const batches = store.listBatches();
  const total: Record<string, number> = {};
  lines.push(`Batches: ${batches.length}`);
  for (const b of batches.slice(0, limits.batches ?? 50)) {
    const counts = store.countRows(b.id);
    for (const [k, n] of Object.entries(counts)) total[k] = (total[k] ?? 0) + n;
    const shown = Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    lines.push(
      `  ${b.createdAt}  ${b.kind.padEnd(19)} ${b.fileName}  [${b.status}]  ${shown || 'no rows'}  (${b.id.slice(0, 12)})`,
    );
  }
  if (batches.length > (limits.batches ?? 50)) lines.push(`  ... ${batches.length - (limits.batches ?? 50)} older`);
  for (const b of batches.slice(limits.batches ?? 50)) {
    for (const [k, n] of Object.entries(store.countRows(b.id))) total[k] = (total[k] ?? 0) + n;
  }
  const totals = Object.entries(total)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  lines.push(`Rows: ${totals || 'none'}`);
  if ((total.waiting ?? 0) > 0) {
    lines.push(
      `Waiting rows: ${total.waiting} (the bank could not be reached; nothing of them was sent; sent when it is back)`,
    );
  }
  const uncertain = store.uncertainRows(limits.uncertain ?? 100);
  lines.push(`Uncertain rows: ${uncertain.length}${uncertain.length === (limits.uncertain ?? 100) ? '+' : ''}`);
  for (const r of uncertain) {
    lines.push(
      `  ${r.kind} ${r.fileName} line ${r.line}${r.currentStep ? ` step ${r.currentStep}` : ''}: ` +
        `${r.errorCode ?? 'UNKNOWN'} ${r.errorMessage ?? ''} (idempotency key ${r.idempotencyKey ?? '-'})`,
    );
  }
  return `${lines.join('\n')}\n`;
}

/** The store's file name inside the data folder. */
export const STORE_FILE_NAME = 'remessa.sqlite';
