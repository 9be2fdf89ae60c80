/**
 * Acting on what `status` shows: `remessa resolve` (a person settles an `uncertain` row they checked with the bank)
 * and `remessa retry` (ask the bank again now, for one batch or all).
 *
 * What must hold:
 * - Both hold the data folder's lock (./lock.ts) for as long as they touch the store: a daemon or a run driving the
 *   same rows refuses them (DATA_FOLDER_LOCKED, exit 2), so a person never settles a row the engine is resending.
 * - `resolve` moves a row only from `uncertain`, to `succeeded` or `failed`, recording who, when and why in the same
 *   transaction (src/store/rows.ts, rule 5); anything else is refused with nothing changed.
 * - `retry` sends nothing of a batch that waits for approval, nor of one approved and not let go yet (its file's
 *   handling lets it go through the approval gate: the daemon, or the next `run`); it says which, never "stopped".
 * - After either, the batch's answer is written again through `reanswerBatch` (./commands.ts), the one place that
 *   decides how a stale answer is replaced; a batch still unfinished (rows pending or in flight) gets no answer yet.
 */
import { setMaxListeners } from 'node:events';
import os from 'node:os';
import { RemessaError } from '../errors.js';
import {
  EXIT_CANNOT_RUN,
  EXIT_CREDENTIALS_REFUSED,
  EXIT_NOT_ALL_SUCCEEDED,
  EXIT_OK,
  EXIT_UNSETTLED,
} from '../exit-codes.js';
import { DEFAULT_LOCALE, instant, type Locale, t } from '../i18n/index.js';
import { getApproval, type Store } from '../store/index.js';
import { shortBatchId } from '../store/intakes.js';
import { runnerStorePlace } from '../store/place.js';
import type { BatchRecord } from '../store/store.js';
import {
  allSucceeded,
  commandWaitForBank,
  hasUnsettled,
  openPipeline,
  type Pipeline,
  reanswerBatch,
} from './commands.js';
import { acquireDataFolderLock } from './lock.js';
import { out, type RunnerOptions } from './options.js';

/** Longest note kept with a settlement, in characters. */
export const MAX_NOTE_CHARS = 2000;

/** The OS user running this process, the default `--by`. */
export function osUserName(): string {
  try {
    const name = os.userInfo().username;
    if (name) return name;
  } catch {
    // no passwd entry (a container): fall back to the environment
  }
  return process.env.USER ?? process.env.LOGNAME ?? 'unknown';
}

/** The one batch `ref` names (id, unique id prefix, file name); a clear error for none or several. */
export async function findOneBatch(store: Store, ref: string, locale: Locale = DEFAULT_LOCALE): Promise<BatchRecord> {
  const found = await store.findBatches(ref);
  if (found.length === 1) return found[0]!;
  if (found.length === 0) {
    throw new RemessaError('BATCH_NOT_FOUND', t(locale, 'BATCH.notFound', { ref: JSON.stringify(ref) }));
  }
  throw new RemessaError(
    'BATCH_AMBIGUOUS',
    t(locale, 'BATCH.ambiguous', {
      ref: JSON.stringify(ref),
      count: found.length,
      batches: found.map((b) => `${shortBatchId(b.id)} (${b.fileName}, ${b.createdAt})`).join(', '),
    }),
  );
}

async function openExistingStore(options: RunnerOptions): Promise<Store> {
  const place = runnerStorePlace(options);
  if (!place.exists()) {
    throw new RemessaError(
      'STORE_NOT_FOUND',
      `No store at ${place.where}: remessa has never run with this data folder`,
    );
  }
  return place.open();
}

/** `fatura.csv (lote 20261128T044444Z-3dc83e68)`. */
function batchName(locale: Locale, batch: BatchRecord): string {
  return t(locale, 'RETRY.batch', { file: batch.fileName, batch: shortBatchId(batch.id) });
}

/** Whether the batch has an answer to write: rows all stored, none pending or in flight. */
async function answerable(store: Store, batch: BatchRecord): Promise<boolean> {
  const counts = await store.countRows(batch.id);
  return batch.status === 'done' && counts.pending + counts.in_flight === 0;
}

export interface ResolveRequest {
  /** Batch id, unique prefix, or file name. */
  batch: string;
  line: number;
  as: 'succeeded' | 'failed';
  note: string;
  /** @defaultValue the OS user */
  by?: string | undefined;
}

/** `remessa resolve BATCH LINE --as succeeded|failed --note TEXT [--by NAME]`. */
export async function resolveRow(options: RunnerOptions, request: ResolveRequest): Promise<number> {
  const note = request.note.trim();
  if (note === '')
    throw new RemessaError('RESOLVE_NOTE_REQUIRED', 'Expected --note with what was checked, got nothing');
  if (note.length > MAX_NOTE_CHARS) {
    throw new RemessaError(
      'RESOLVE_NOTE_TOO_LONG',
      `Expected a --note of at most ${MAX_NOTE_CHARS} characters, got ${note.length}`,
    );
  }
  const by = (request.by ?? osUserName()).trim();
  if (by === '') throw new RemessaError('RESOLVE_BY_REQUIRED', 'Expected --by with a name, got nothing');
  const lock = await acquireDataFolderLock(options.folders.data, {
    taker: { command: 'resolve', locale: options.locale },
  });
  let store: Store | undefined;
  try {
    store = await openExistingStore(options);
    const batch = await findOneBatch(store, request.batch, options.locale);
    const resolution = await store.resolveRow(batch.id, request.line, {
      as: request.as,
      by,
      note,
      locale: options.locale,
    });
    options.logger.info(
      { batch: batch.fileName, line: request.line, to: resolution.to, by, step: resolution.step },
      'uncertain row settled by a person',
    );
    const then = (await answerable(store, batch))
      ? t(options.locale, 'RESOLVE.reanswered', {
          answer: await reanswerBatch(store, batch.id, options.folders.outbox, {
            locale: options.locale,
            results: options.results,
          }),
        })
      : t(options.locale, 'RESOLVE.notFinished');
    out(options).write(
      `${t(options.locale, 'RESOLVE.done', {
        file: batch.fileName,
        line: request.line,
        batch: shortBatchId(batch.id),
        from: resolution.from,
        to: resolution.to,
        by,
        at: instant(resolution.at),
        then,
      })}\n`,
    );
    return EXIT_OK;
  } finally {
    await store?.close();
    await lock.release();
  }
}

/**
 * What `retry` says of a batch it did not finish: one that waits for a decision, or approved and not let go yet (left
 * to its file's handling: the daemon, or the next `run`; src/store/approvals.ts "Who drives an approved batch"), says
 * so; any other was stopped before its end.
 */
async function parkedLine(store: Store, locale: Locale, batch: BatchRecord, name: string, counts: string) {
  const now = await store.getBatch(batch.id);
  if (now?.status === 'awaiting_approval') return t(locale, 'RETRY.awaitsApproval', { batch: name });
  if (now?.status === 'ready' && (await getApproval(store, batch.id))?.state === 'approved') {
    return t(locale, 'RETRY.approvedWaits', { batch: name });
  }
  return `${name}: ${counts} (${t(locale, 'RUN.parked')})`;
}

/** `remessa retry [BATCH]`: the uncertain (and parked) rows of one batch or all, now; then their answers again. */
export async function retryBatches(options: RunnerOptions, ref?: string): Promise<number> {
  const log = options.logger;
  const locale = options.locale;
  const lock = await acquireDataFolderLock(options.folders.data, { taker: { command: 'retry', locale } });
  let pipeline: Pipeline | undefined;
  const abort = new AbortController();
  setMaxListeners(0, abort.signal);
  const onSignal = () => abort.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    let only: string[] | undefined;
    if (ref !== undefined) {
      // The batch is named before the bank is reached: a wrong name fails fast.
      const store = await openExistingStore(options);
      try {
        const batch = await findOneBatch(store, ref, locale);
        if (batch.status === 'rejected') {
          throw new RemessaError('BATCH_REJECTED', t(locale, 'RETRY.batchRejected', { file: batch.fileName }));
        }
        if ((await store.countUnfinished(batch.id)) === 0 && batch.status === 'done') {
          out(options).write(`${t(locale, 'RETRY.settled', { batch: batchName(locale, batch) })}\n`);
          return EXIT_OK;
        }
        only = [batch.id];
      } finally {
        await store.close();
      }
    }
    try {
      pipeline = await openPipeline(options, commandWaitForBank(options), { command: 'retry' });
    } catch (err) {
      log.error({ err }, 'cannot start');
      return EXIT_CANNOT_RUN;
    }
    const resumed = await pipeline.resumeUncertain(abort.signal, only);
    if (resumed.length === 0) {
      out(options).write(`${t(locale, 'RETRY.nothing')}\n`);
      return EXIT_OK;
    }
    let unsettled = false;
    let ok = true;
    let error = false;
    for (const r of resumed) {
      const name = batchName(locale, r.batch);
      // Row states are stable values (ERPs read them): not translated.
      const counts = Object.entries(r.counts)
        .filter(([, n]) => (n ?? 0) > 0)
        .map(([k, n]) => `${k} ${n}`)
        .join(', ');
      switch (r.state) {
        case 'done':
          if (hasUnsettled(r.counts)) unsettled = true;
          if (!allSucceeded(r)) ok = false;
          out(options).write(`${name}: ${counts || t(locale, 'STATUS.noRows')} -> ${r.answer}\n`);
          break;
        case 'parked':
          unsettled = true;
          out(options).write(`${await parkedLine(pipeline.store, locale, r.batch, name, counts)}\n`);
          break;
        case 'needs-file':
          unsettled = true;
          out(options).write(`${t(locale, 'RETRY.needsFile', { batch: name })}\n`);
          break;
        case 'error':
          error = true;
          out(options).write(
            `${t(locale, 'RETRY.failed', { batch: name, reason: r.error instanceof Error ? r.error.message : String(r.error) })}\n`,
          );
          break;
      }
    }
    if (error) return EXIT_CANNOT_RUN;
    if (pipeline.gate.credentialsRefused) return EXIT_CREDENTIALS_REFUSED;
    if (unsettled) return EXIT_UNSETTLED;
    return ok ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await pipeline?.close();
    await lock.release();
  }
}
