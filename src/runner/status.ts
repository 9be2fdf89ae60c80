/**
 * `remessa status`: what the store and the outbox say about every batch, for a person (text) or a program (`--json`).
 *
 * What a batch shows as its `state` (BATCH_STATES), from its status in the store and whether a process drives the
 * data folder now (the holder of its lock, src/runner/lock.ts):
 *
 *   store status          someone drives the folder    nobody does
 *   ingesting             ingesting                    parked   (stopped while its rows were stored; resumes)
 *   awaiting_approval     awaiting_approval            awaiting_approval (waits for a person's decision)
 *   ready, approved       approved                     approved (a person approved it, nothing is sent yet: the
 *                                                                daemon lets it go within approval.pollMs, or the
 *                                                                next `run`; src/store/approvals.ts)
 *   ready | running       running                      parked   (stopped, or the process died; the next run resumes)
 *   done                  done                         done     (uncertain rows may remain: see `counts`)
 *   rejected              rejected                     rejected (the file as a whole; nothing was sent)
 *   (not in the store)    rejected                     rejected (answered by a `<name>.rejected.txt` only: a file
 *                                                                of no known kind, empty, not text, a link, ...)
 *
 * A running batch has a rate (rows finished per second since the process driving it started on it) and an ETA (its
 * rows still pending or in flight at that rate). Whether the holder is alive is asked of the OS by pid when it runs on
 * this host; a holder on another host (a shared folder) is taken at its word.
 *
 * The JSON shape (`StatusReport`, `version` 1) is documented in docs/operations.md; a field is only ever added.
 */

import { readdirSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RemessaError } from '../errors.js';
import { EXIT_CANNOT_RUN, EXIT_OK } from '../exit-codes.js';
import { BRASILIA_TIME_ZONE } from '../formats/brasilia-time.js';
import { DEFAULT_LOCALE, instantIn, type Locale, render, t } from '../i18n/index.js';
import { stemOf } from '../intake/index.js';
import { answerPaths } from '../outbox/index.js';
import { isProcessRunning } from '../process-running.js';
import { getApproval, intakeForBatch, type RowCounts, type RowState, type Store } from '../store/index.js';
import { type DaemonView, isSharedStore, listDaemons } from '../store/leases.js';
import { describeStorePlace, runnerStorePlace, SQLITE_STORE_FILE } from '../store/place.js';
import type { BatchRecord } from '../store/store.js';
import { type LockHolder, readLockHolder } from './lock.js';

export { parseStatusDate } from './status-dates.js';

import { BATCH_STATES, type BatchState } from './batch-states.js';
import { out, type RunnerOptions } from './options.js';
import { describeUnsettled, type UnsettledLine } from './retorno.js';

/** The SQLite store's file name inside the data folder (one name, src/store/place.ts's). */
export const STORE_FILE_NAME = SQLITE_STORE_FILE;

export { BATCH_STATES, type BatchState };

/** Version of the `--json` shape; raised only if a field ever changes meaning or goes away. */
export const STATUS_JSON_VERSION = 1;

export interface StatusFilters {
  /** Batches taken at or after this instant. */
  since?: Date | undefined;
  /** Batches taken at or before this instant. */
  until?: Date | undefined;
  /** Only these kinds (or, for files of no known kind, answer folders). Empty: all. */
  kinds?: readonly string[] | undefined;
  /** Only batches in these states. Empty: all. */
  states?: readonly BatchState[] | undefined;
}

export interface BatchProgressStatus {
  /** Rows finished (succeeded, failed or uncertain) since `since`. */
  finished: number;
  /** Rows still pending or in flight. */
  remaining: number;
  /** When the process driving the batch started on it (ISO 8601 UTC). */
  since: string;
  /** Rows finished per second since `since`; null before the first row finished. */
  ratePerSecond: number | null;
  /** Seconds until `remaining` is done at that rate; null without a rate. */
  etaSeconds: number | null;
}

export interface BatchStatusEntry {
  /** The batch id (the taking); null for a file answered by a rejection without ever being stored. */
  id: string | null;
  /** The batch kind, or the answer's folder for a file of no known kind (`_unknown` at the inbox root). */
  kind: string;
  /** The file's name as dropped. */
  fileName: string;
  state: BatchState;
  /** The status in the store (`ingesting`, `ready`, `running`, `done`, `rejected`); null when not in the store. */
  storeStatus: string | null;
  /** When the file was taken (ISO 8601 UTC); for a rejection only, when it was written. */
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Rows stored. */
  rows: number;
  /** Rows by state (every state of the store's row machine, zeros included). */
  counts: Partial<Record<RowState, number>>;
  /** Why the file as a whole was rejected. */
  error: { code: string; message: string } | null;
  /** The latest answer as a file: the result CSV, or the `.rejected.txt` (a file known only by it too). */
  answerFile: string | null;
  /** Running batches only. */
  progress: BatchProgressStatus | null;
}

export interface UncertainRowStatus {
  batchId: string;
  kind: string;
  fileName: string;
  line: number;
  step: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  idempotencyKey: string | null;
  /** When the row became uncertain (ISO 8601 UTC). */
  since: string;
}

export interface StatusReport {
  version: typeof STATUS_JSON_VERSION;
  generatedAt: string;
  /** The store read: the SQLite file, or the PostgreSQL URL as configured (never a password: none is in it). */
  store: string;
  /** Its engine (`store.url` set: postgres). */
  storeEngine: 'sqlite' | 'postgres';
  /** The process that drives the data folder now (daemon or run), or null. */
  driver: LockHolder | null;
  /**
   * The daemons sharing the store (PostgreSQL, src/store/leases.ts), alive first, each with what it holds (unfinished
   * rows, files, answers being written); null on SQLite (one daemon: the data folder's driver).
   */
  daemons: DaemonView[] | null;
  filters: { since: string | null; until: string | null; kinds: string[]; states: string[] };
  /** Newest first. */
  batches: BatchStatusEntry[];
  totals: { batches: number; byState: Partial<Record<BatchState, number>>; rows: Partial<Record<RowState, number>> };
  /** Uncertain rows of the batches listed, oldest first, at most `uncertainLimit`. */
  uncertainRows: UncertainRowStatus[];
  /** True when there are more uncertain rows than listed. */
  uncertainTruncated: boolean;
  /**
   * Waiting rows of the batches listed, by why they wait (their error code: BANK_UNREACHABLE, BANK_CREDENTIALS_REFUSED,
   * SERVICE_RATE_LIMITED, ...), most first. Added after version 1's first fields; absent from older reports.
   */
  waitingReasons: Array<{ code: string; count: number }>;
  /**
   * What the retorno still waits for (payments without a final status, foreign events), as lines for a person in the
   * locale of the configuration (`locale`, `--locale`).
   */
  unsettled: string[];
}

export interface ShowStatusOptions {
  filters?: StatusFilters;
  json?: boolean;
  /**
   * The config file the user named (`--config`, REMESSA_CONFIG): then a missing store is an error (exit 2), since the
   * file most likely points at the wrong folders. Without one, a missing store means nothing ran yet (exit 0).
   */
  explicitConfig?: string | undefined;
  /** Most batches shown as text (JSON lists them all). @defaultValue 50 */
  textBatchLimit?: number;
  /** Most uncertain rows listed. @defaultValue 100 (text), 1000 (JSON) */
  uncertainLimit?: number;
  /** Clock, for tests. */
  now?: () => Date;
}

/** `remessa status`: batches, rows by status, uncertain rows with their reasons, from the store and the outbox. */
export async function showStatus(options: RunnerOptions, show: ShowStatusOptions = {}): Promise<number> {
  const place = runnerStorePlace(options);
  const file = place.where;
  const exists = place.exists();
  let store: Store | undefined;
  try {
    if (!exists) {
      if (show.explicitConfig) {
        throw new RemessaError(
          'STORE_NOT_FOUND',
          `No store at ${file}: the config ${show.explicitConfig} names the data folder ${options.folders.data}, ` +
            'where remessa has never run. Check folders.data (and folders.base) in that file',
        );
      }
      if (!show.json) {
        out(options).write(`${t(options.locale ?? DEFAULT_LOCALE, 'STATUS.noStore', { file })}\n`);
        return EXIT_OK;
      }
    } else {
      store = await place.open();
    }
    const report = await buildStatusReport(store, options, show);
    out(options).write(
      show.json
        ? `${JSON.stringify(report, null, 2)}\n`
        : renderStatusReport(report, { ...show, locale: options.locale ?? DEFAULT_LOCALE }),
    );
    return EXIT_OK;
  } catch (err) {
    if (err instanceof RemessaError) throw err;
    options.logger.error({ err }, 'cannot read the store');
    return EXIT_CANNOT_RUN;
  } finally {
    await store?.close();
  }
}

/** Whether the lock holder's process still runs (on this host; on another one, it is taken at its word). */
function holderAlive(holder: LockHolder): boolean {
  if (holder.host !== os.hostname()) return true;
  return isProcessRunning(holder.pid);
}

/** The process driving the data folder now, or null (none, or a holder file left by a killed process). */
export function currentDriver(dataDir: string): LockHolder | null {
  const holder = readLockHolder(dataDir);
  return holder && holderAlive(holder) ? holder : null;
}

/**
 * The state `status` shows for a stored batch (the table at the top of this file). `approved`: the batch's approval
 * record says approved (src/store/approvals.ts); only read while the batch is `ready`, since once let go it runs.
 */
export function batchState(batch: Pick<BatchRecord, 'status'>, driven: boolean, approved = false): BatchState {
  if (batch.status === 'ready' && approved) return 'approved';
  switch (batch.status) {
    case 'done':
    case 'rejected':
    // Waits for a person (src/store/approvals.ts), whoever drives the folder.
    case 'awaiting_approval':
      return batch.status;
    case 'ingesting':
      return driven ? 'ingesting' : 'parked';
    default:
      return driven ? 'running' : 'parked';
  }
}

interface OutboxRejection {
  kind: string;
  fileName: string;
  file: string;
  at: string;
  error: { code: string; message: string } | null;
}

/**
 * `<outbox>/<folder>/<name>.rejected.txt` files: the answers to files rejected as a whole. Their first line names the
 * file as dropped, their third `CODE: message` (src/outbox/result.ts writeRejected).
 */
/** The current answer of a stored batch (its name, and its version after the first), or null before its answer. */
/** The batch's latest answer as a file: its result CSV (version N's), or its `.rejected.txt`; null before any. */
async function answerFileOf(store: Store, outboxDir: string, batchId: string): Promise<string | null> {
  const intake = await intakeForBatch(store, batchId);
  if (!intake || intake.answerVersion === 0) return null;
  const paths = answerPaths(outboxDir, intake.folder, intake.answerName, intake.answerVersion);
  return intake.answerType === 'rejected' ? paths.rejectedPath : paths.resultPath;
}

function outboxRejections(outboxDir: string): OutboxRejection[] {
  const found: OutboxRejection[] = [];
  let folders: string[];
  try {
    folders = readdirSync(outboxDir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return found;
  }
  for (const folder of folders) {
    let names: string[];
    try {
      names = readdirSync(path.join(outboxDir, folder)).filter((n) => n.endsWith('.rejected.txt'));
    } catch {
      continue;
    }
    for (const name of names) {
      const file = path.join(outboxDir, folder, name);
      try {
        const stat = statSync(file);
        if (!stat.isFile()) continue;
        const lines = readFileSync(file, 'utf8').split('\n');
        const first = /^(.*) (?:was not processed|não foi processado):/.exec(lines[0] ?? '');
        const reason = /^([A-Z][A-Z0-9_]*): (.*)$/.exec(lines[2] ?? '');
        found.push({
          kind: folder,
          fileName: first?.[1] ?? `${name.slice(0, -'.rejected.txt'.length)}.csv`,
          file,
          at: stat.mtime.toISOString(),
          error: reason ? { code: reason[1]!, message: reason[2]! } : null,
        });
      } catch {
        // gone meanwhile, or unreadable: not ours to report here
      }
    }
  }
  return found;
}

function inRange(at: string, filters: StatusFilters): boolean {
  const t = Date.parse(at);
  if (filters.since && t < filters.since.getTime()) return false;
  if (filters.until && t > filters.until.getTime()) return false;
  return true;
}

function sumCounts(into: Partial<Record<RowState, number>>, counts: Partial<Record<RowState, number>>): void {
  for (const [k, n] of Object.entries(counts) as Array<[RowState, number]>) into[k] = (into[k] ?? 0) + n;
}

/** The whole report, from the store (undefined when there is none yet) and the outbox. */
export async function buildStatusReport(
  store: Store | undefined,
  options: Pick<RunnerOptions, 'folders'> & Partial<Pick<RunnerOptions, 'locale' | 'store'>>,
  show: ShowStatusOptions = {},
): Promise<StatusReport> {
  const now = (show.now ?? (() => new Date()))();
  const filters = show.filters ?? {};
  const place = runnerStorePlace(options);
  const driver = currentDriver(options.folders.data);
  const kinds = new Set(filters.kinds ?? []);
  const states = new Set(filters.states ?? []);
  const keep = (e: { kind: string; state: BatchState; createdAt: string }) =>
    (kinds.size === 0 || kinds.has(e.kind)) &&
    (states.size === 0 || states.has(e.state)) &&
    inRange(e.createdAt, filters);

  const entries: BatchStatusEntry[] = [];
  const storedRejections = new Set<string>();
  for (const b of (await store?.listBatches()) ?? []) {
    const approved = b.status === 'ready' && (await getApproval(store!, b.id))?.state === 'approved';
    const state = batchState(b, driver !== null, approved);
    if (b.status === 'rejected') storedRejections.add(`${b.kind}/${stemOf(b.fileName)}`);
    if (!keep({ kind: b.kind, state, createdAt: b.createdAt })) continue;
    const counts = await store!.countRows(b.id);
    let progress: BatchProgressStatus | null = null;
    if (state === 'running' && driver) {
      // Rows finished before this process took the folder were another run's: the rate counts this one's only.
      const since = [b.startedAt ?? driver.since, driver.since].sort().at(-1)!;
      const finished = await store!.countFinishedSince(b.id, since);
      const remaining = counts.pending + counts.in_flight;
      const seconds = (now.getTime() - Date.parse(since)) / 1000;
      const rate = finished > 0 && seconds > 0 ? finished / seconds : null;
      progress = {
        finished,
        remaining,
        since,
        ratePerSecond: rate === null ? null : Math.round(rate * 100) / 100,
        etaSeconds: rate === null ? null : Math.ceil(remaining / rate),
      };
    }
    entries.push({
      id: b.id,
      kind: b.kind,
      fileName: b.fileName,
      state,
      storeStatus: b.status,
      createdAt: b.createdAt,
      startedAt: b.startedAt,
      finishedAt: b.finishedAt,
      rows: b.rowCount,
      counts,
      error: b.error,
      answerFile: await answerFileOf(store!, options.folders.outbox, b.id),
      progress,
    });
  }
  for (const r of outboxRejections(options.folders.outbox)) {
    // Rejected after its rows were stored: the store already lists it (with its id and counts).
    if (storedRejections.has(`${r.kind}/${path.basename(r.file, '.rejected.txt')}`)) continue;
    if (!keep({ kind: r.kind, state: 'rejected', createdAt: r.at })) continue;
    entries.push({
      id: null,
      kind: r.kind,
      fileName: r.fileName,
      state: 'rejected',
      storeStatus: null,
      createdAt: r.at,
      startedAt: null,
      finishedAt: r.at,
      rows: 0,
      counts: {},
      error: r.error,
      answerFile: r.file,
      progress: null,
    });
  }
  entries.sort((a, b) => (a.createdAt < b.createdAt ? 1 : a.createdAt > b.createdAt ? -1 : 0));

  const rows: Partial<Record<RowState, number>> = {};
  const byState: Partial<Record<BatchState, number>> = {};
  for (const e of entries) {
    sumCounts(rows, e.counts);
    byState[e.state] = (byState[e.state] ?? 0) + 1;
  }

  // Why rows wait (the bank unreachable, or refusing remessa's credentials): by their code, over the batches listed.
  const waitingBy = new Map<string, number>();
  for (const e of entries) {
    if (e.id === null || (e.counts.waiting ?? 0) === 0) continue;
    const byCode = await store!.sql.all<{ code: string | null; n: number }>(
      `SELECT error_code AS code, COUNT(*) AS n FROM rows WHERE batch_no = ? AND state = 'waiting' GROUP BY error_code`,
      [await store!.batchNo(e.id)],
    );
    for (const r of byCode) {
      const code = r.code ?? 'UNKNOWN';
      waitingBy.set(code, (waitingBy.get(code) ?? 0) + Number(r.n));
    }
  }
  const waitingReasons = [...waitingBy].map(([code, count]) => ({ code, count })).sort((a, b) => b.count - a.count);

  const limit = show.uncertainLimit ?? (show.json ? 1000 : 100);
  const uncertainRows: UncertainRowStatus[] = [];
  let uncertainTotal = 0;
  for (const e of [...entries].reverse()) {
    const n = (e.counts as Partial<RowCounts>).uncertain ?? 0;
    if (e.id === null || n === 0) continue;
    uncertainTotal += n;
    if (uncertainRows.length >= limit) continue;
    for (const r of await store!.rowsAfter(e.id, 0, limit - uncertainRows.length, ['uncertain'])) {
      uncertainRows.push({
        batchId: e.id,
        kind: e.kind,
        fileName: e.fileName,
        line: r.line,
        step: r.currentStep,
        errorCode: r.errorCode,
        errorMessage: r.errorMessage,
        idempotencyKey: r.idempotencyKey,
        since: r.updatedAt,
      });
    }
  }

  return {
    version: STATUS_JSON_VERSION,
    generatedAt: now.toISOString(),
    store: place.where,
    storeEngine: place.engine,
    driver,
    // A store not yet migrated to 014 (read-only: status applies no migration) has no daemons to show.
    daemons: store && isSharedStore(store) ? await listDaemons(store).catch(() => null) : null,
    filters: {
      since: filters.since?.toISOString() ?? null,
      until: filters.until?.toISOString() ?? null,
      kinds: [...kinds],
      states: [...states],
    },
    batches: entries,
    totals: { batches: entries.length, byState, rows },
    waitingReasons,
    uncertainRows,
    uncertainTruncated: uncertainTotal > uncertainRows.length,
    unsettled: store ? renderUnsettled(await describeUnsettled(store), options.locale ?? DEFAULT_LOCALE) : [],
  };
}

/** The retorno's lines, said in `locale`; the items under a heading indented. */
export function renderUnsettled(lines: readonly UnsettledLine[], locale: Locale): string[] {
  return lines.map((l) => `${l.item ? '  ' : ''}${render(locale, l.message)}`);
}

/** Counts by state (`succeeded 3, failed 1`): the states are stable values (ERPs read them), not translated. */
function describeCounts(counts: Partial<Record<string, number>>, locale: Locale): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length > 0 ? parts.join(', ') : t(locale, 'STATUS.noRows');
}

function describeSeconds(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

/** The text of `remessa status`. */
export function renderStatusReport(
  report: StatusReport,
  show: Pick<ShowStatusOptions, 'textBatchLimit'> & { locale?: Locale } = {},
): string {
  const locale = show.locale ?? DEFAULT_LOCALE;
  const lines: string[] = [];
  const limit = show.textBatchLimit ?? 50;
  // Times as a person in Brazil reads them (the JSON keeps UTC instants).
  const when = (iso: string) => instantIn(locale, iso);
  lines.push(
    t(locale, 'STATUS.store', { store: describeStorePlace({ engine: report.storeEngine, where: report.store }) }),
  );
  lines.push(t(locale, 'STATUS.timeZone', { zone: BRASILIA_TIME_ZONE }));
  if (report.driver) {
    lines.push(
      t(locale, 'STATUS.driver', {
        pid: report.driver.pid,
        host: report.driver.host,
        since: when(report.driver.since),
      }),
    );
  } else {
    lines.push(t(locale, 'STATUS.driverNobody'));
  }
  if (report.daemons && report.daemons.length > 0) {
    // alive / dead are stable values (as the row states), not translated.
    lines.push(
      t(locale, 'STATUS.daemons', {
        count: report.daemons.length,
        alive: report.daemons.filter((d) => d.alive).length,
      }),
    );
    for (const d of report.daemons) {
      lines.push(
        `  ${d.name}  ${d.alive ? 'alive' : 'dead'}  ${t(locale, 'STATUS.daemon', {
          host: d.host ?? '?',
          pid: d.pid ?? '?',
          seen: when(d.lastSeen),
          rows: d.rows,
          files: d.files,
          answers: d.answers,
        })}`,
      );
    }
  }
  const f = report.filters;
  const shownFilters = [
    f.since && t(locale, 'STATUS.filterSince', { at: when(f.since) }),
    f.until && t(locale, 'STATUS.filterUntil', { at: when(f.until) }),
    f.kinds.length > 0 && t(locale, 'STATUS.filterKind', { kinds: f.kinds.join('|') }),
    f.states.length > 0 && t(locale, 'STATUS.filterState', { states: f.states.join('|') }),
  ].filter(Boolean);
  lines.push(
    `${t(locale, 'STATUS.batches', { count: report.totals.batches })}${shownFilters.length > 0 ? ` (${shownFilters.join(', ')})` : ''}` +
      (report.totals.batches > 0 ? `: ${describeCounts(report.totals.byState, locale)}` : ''),
  );
  for (const b of report.batches.slice(0, limit)) {
    let detail =
      b.id === null
        ? t(locale, 'STATUS.rejectedWhole', { code: b.error?.code ?? '?' })
        : describeCounts(b.counts, locale);
    if (b.id !== null && b.state === 'rejected' && b.error) detail = `${b.error.code}; ${detail}`;
    if (b.progress) {
      const p = b.progress;
      detail +=
        `; ${t(locale, 'STATUS.toGo', { count: p.remaining })}` +
        (p.ratePerSecond === null
          ? `, ${t(locale, 'STATUS.rateUnknown')}`
          : `, ${t(locale, 'STATUS.rate', { rate: p.ratePerSecond, eta: describeSeconds(p.etaSeconds ?? 0) })}`);
    }
    lines.push(
      `  ${when(b.createdAt)}  ${b.kind.padEnd(19)} ${b.fileName}  [${b.state}]  ${detail}  (${b.id ?? b.answerFile})` +
        (b.id && b.answerFile ? `  -> ${path.basename(b.answerFile)}` : ''),
    );
  }
  if (report.batches.length > limit) {
    lines.push(`  ${t(locale, 'STATUS.older', { count: report.batches.length - limit })}`);
  }
  const anyRow = Object.values(report.totals.rows).some((n) => (n ?? 0) > 0);
  lines.push(
    t(locale, 'STATUS.rows', {
      counts: anyRow ? describeCounts(report.totals.rows, locale) : t(locale, 'STATUS.none'),
    }),
  );
  const waiting = report.totals.rows.waiting ?? 0;
  // Rows waiting because the bank refuses remessa's credentials are said apart: a person must fix the key.
  const refused = (report.waitingReasons ?? []).find((r) => r.code === 'BANK_CREDENTIALS_REFUSED')?.count ?? 0;
  if (refused > 0) lines.push(t(locale, 'STATUS.waitingCredentials', { count: refused }));
  if (waiting - refused > 0) {
    lines.push(t(locale, 'STATUS.waitingRows', { count: waiting - refused }));
  }
  lines.push(
    t(locale, 'STATUS.uncertain', {
      count: `${report.uncertainRows.length}${report.uncertainTruncated ? '+' : ''}`,
    }),
  );
  for (const r of report.uncertainRows) {
    lines.push(
      `  ${t(locale, 'STATUS.uncertainRow', {
        kind: r.kind,
        file: r.fileName,
        line: r.line,
        step: r.step ?? undefined,
        code: r.errorCode ?? 'UNKNOWN',
        message: r.errorMessage ?? '',
        key: r.idempotencyKey ?? '-',
      })} (${r.batchId})`,
    );
  }
  if (report.uncertainRows.length > 0) {
    lines.push(`  ${t(locale, 'STATUS.settleHint')}`);
  }
  lines.push(...report.unsettled);
  return `${lines.join('\n')}\n`;
}
