/**
 * The answers: result CSVs with their summaries, and rejection notes. Names are formed in ./names.ts.
 *
 * Versions of a result (the rule, with the store's side in src/store/intakes.ts):
 * - the first answer of a taking is `<base>.result.csv` + `<base>.summary.json`;
 * - when a row's outcome changes after that (an `uncertain` row settled by a later run, or the original of a
 *   duplicate), the answer is written again as the next version, `<base>.result.vN.csv` + `<base>.summary.vN.json`,
 *   whose summary names the version it supersedes. The highest version is the current answer.
 * - Nothing is ever overwritten or removed: every file is written under a temporary name, flushed, then linked to a
 *   name that must not exist yet (src/atomic-file.ts `noClobber`). A version whose name is taken is skipped.
 * - Crash at any instant: the store's mark that the answer is stale is cleared only after both files of the new
 *   version are in place (`answerIntake`); a crash before that leaves it stale, and the next pass writes it (or adopts
 *   the files a crash left complete, when nothing changed since they were read).
 *
 * A `duplicate` line (src/store/rows.ts rule 4: the same operation as an earlier row, its original; nothing sent)
 * moved no money, and its line must never say it did: a clerk sums `paidAmount` in a spreadsheet, and a bill paid
 * once must count once. So, for every kind:
 * - its money columns (the kind's `resultMoneyColumns`: `paidAmount`) stay EMPTY, whatever the original's state;
 * - what lets a person find the original stays: its ids and the bank's statuses beside them (`paymentId`,
 *   `paymentStatus`, `endToEndId`, a charge's bar code), its file columns (named from this answer's folder:
 *   `../<original's answer>/X.pdf`), and `errorMessage` naming the original's line, file and state, and, for a kind
 *   with money columns, that nothing was paid by this line (`DUPLICATE.originalPaidNothing`).
 * The summary counts a duplicate under `duplicate`, with the amount its own cell asked (like `failed` and `rejected`
 * rows: money that did not move), never under `succeeded`: `amounts.succeeded` counts each payment once. The retorno
 * is made of succeeded rows only (src/store/things.ts), and an approval preview puts a duplicate in its own
 * `TOTAL duplicate (not paid)`, never in `amountToPay` (src/runner/approval.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import fs, { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { renameNoClobber, writeFileAtomic } from '../atomic-file.js';
import type { BatchKind, Dialect, ResultValueForm } from '../batches/kind.js';
import { crashPoint } from '../crash-point.js';
import { createResultWriter, type ResultCell } from '../csv/writer.js';
import { RemessaError } from '../errors.js';
import { formatMoney } from '../formats/money.js';
import { DEFAULT_LOCALE, type Locale, t } from '../i18n/index.js';
import {
  batchChanges,
  beginAnswer,
  earlierSameContent,
  getIntake,
  type IntakeRecord,
  markAnswered,
} from '../store/intakes.js';
import { claimAnswer, releaseAnswer } from '../store/leases.js';
import { type RowState, rowOutcome } from '../store/rows.js';
import type { ResultRowRecord, Store } from '../store/store.js';
import { ROW_OUTCOMES, type RowOutcome } from '../types.js';
import { inputCell, outputCell, type ResultFormSettings, type ResultForms, resultForms } from './cell-forms.js';
import { answerFileNames } from './names.js';

/** What an answer needs of a kind: its name and its result columns (none of them depends on its row type). */
export type AnswerKind = Pick<
  BatchKind<unknown>,
  'name' | 'resultColumns' | 'resultMoneyColumns' | 'resultFileColumns' | 'resultColumnForms'
>;

/** The columns every result file has after the input's own. */
export const RESULT_STATUS_COLUMNS = ['status', 'errorCode', 'errorMessage'] as const;

const PAGE_ROWS = 500;

export interface WriteResultOptions {
  /** The outbox root; the result goes to `<outboxDir>/<kind>/`. */
  outboxDir: string;
  kind: AnswerKind;
  /** Base name of the answer files (`<name>.result.csv`): the intake's answer name (./names.ts). */
  name: string;
  /** Version of the answer: 1 `<name>.result.csv`, N > 1 `<name>.result.vN.csv`. @defaultValue 1 */
  version?: number;
  /** The taking answered, for the summary. */
  intake?: IntakeRecord;
  /** An earlier taking with the same bytes, for the summary. */
  copyOf?: IntakeRecord;
  /** @defaultValue the batch's input dialect, as stored */
  dialect?: Dialect;
  /** Write nothing when the result file would hold exactly these bytes (SHA-256, hex): the current version's. */
  unlessSha256?: string | null;
  /** The result file of this version is in place (read from the same store state): write only its summary. */
  summaryOnly?: boolean;
  /** Language of what the answer says to a person (duplicate notes, amounts in the summary). @defaultValue 'pt-BR' */
  locale?: Locale;
  /** The form of identifiers and dates (./cell-forms.ts; config `results`). @defaultValue both `auto` */
  results?: Partial<ResultFormSettings> | undefined;
}

export interface ResultSummary {
  batchId: string;
  kind: string;
  /** The input file's name, as dropped. */
  file: string;
  /** Where it was dropped (relative to the inbox) or given, when known. */
  source?: string;
  /** When it was taken, when known. */
  takenAt?: string;
  resultFile: string;
  /** 1 for `<name>.result.csv`; N for `<name>.result.vN.csv`, written when a row's outcome changed after version N-1. */
  version: number;
  /** The result file this version replaces as the current answer (null for the first). */
  supersedes: string | null;
  /** The file is a byte-identical copy of an earlier one: that one's name, take and result. */
  copyOf?: { file: string; takenAt: string; resultFile: string };
  rows: number;
  counts: Record<RowOutcome, number>;
  /**
   * Sum of the rows' amounts by status, as a person reads them (`R$ 14.325,21`); rejected rows count with the amount
   * their cell holds when it can be read. Rows without an amount are left out. Only `succeeded` is money that moved:
   * a `duplicate` counts here with the amount its own line asked, never under `succeeded` (its original's line has it).
   */
  amounts: Record<RowOutcome, { cents: number; formatted: string }>;
  startedAt: string | null;
  finishedAt: string | null;
  writtenAt: string;
}

export interface WriteResultOutput {
  resultPath: string;
  summaryPath: string;
  summary: ResultSummary;
  /** SHA-256 (hex) of the result file's bytes. */
  sha256: string;
  /** The result would have held the bytes of `unlessSha256`: nothing was written. */
  unchanged: boolean;
}

/** `outbox/<kind>/<name>/`: where a batch's steps write their files. */
export function filesDirFor(outboxDir: string, kind: string, name: string): string {
  return path.join(outboxDir, safeName(kind, 'kind'), safeName(name, 'name'));
}

/** Paths of the answer files of `name` (version `version`) in `<outboxDir>/<folder>/`. */
export function answerPaths(
  outboxDir: string,
  folder: string,
  name: string,
  version = 1,
): { resultPath: string; summaryPath: string; rejectedPath: string; approvalRefusedPath: string; filesDir: string } {
  const dir = path.join(outboxDir, safeName(folder, 'kind'));
  const names = answerFileNames(safeName(name, 'name'), version);
  return {
    resultPath: path.join(dir, names.result),
    summaryPath: path.join(dir, names.summary),
    rejectedPath: path.join(dir, names.rejected),
    approvalRefusedPath: path.join(dir, names.approvalRefused),
    filesDir: path.join(dir, names.files),
  };
}

/**
 * Writes `<name>.result.csv` and `<name>.summary.json` (or version N's `.vN` names) for the batch, from the store.
 * Never replaces a file: throws (code EEXIST) when a name is taken.
 */
export async function writeResult(
  store: Store,
  batchId: string,
  options: WriteResultOptions,
): Promise<WriteResultOutput> {
  const batch = await store.getBatch(batchId);
  if (!batch) throw new RemessaError('OUTBOX_NO_BATCH', `No batch ${batchId} in the store`);
  const version = options.version ?? 1;
  const { resultPath, summaryPath } = answerPaths(options.outboxDir, options.kind.name, options.name, version);
  const dir = path.dirname(resultPath);
  await mkdir(dir, { recursive: true });
  const dialect = options.dialect ?? batch.dialect;
  const locale = options.locale ?? DEFAULT_LOCALE;
  const resultColumns = options.kind.resultColumns;
  const moneyColumns = new Set(options.kind.resultMoneyColumns ?? []);
  const fileColumns = new Set(options.kind.resultFileColumns ?? []);
  const columnForms = options.kind.resultColumnForms ?? {};
  const forms = resultForms(dialect, options.results);
  const width = batch.header.length;
  // The writer renames its own temp file to this staging name; the staging file then takes the final name only if
  // that name is free. Leftovers of a crash are dot files ending in .tmp, like the writers' own.
  const staging = path.join(dir, `.${randomBytes(6).toString('hex')}.answer.tmp`);

  // Only the summary is missing (a crash between the two renames): the result stays as it is.
  const writer = options.summaryOnly
    ? undefined
    : await createResultWriter(staging, {
        dialect,
        header: [...batch.header, ...RESULT_STATUS_COLUMNS, ...resultColumns],
      });
  const counts = Object.fromEntries(ROW_OUTCOMES.map((s) => [s, 0])) as Record<RowOutcome, number>;
  const cents = Object.fromEntries(ROW_OUTCOMES.map((s) => [s, 0])) as Record<RowOutcome, number>;
  let rows = 0;
  let sha256 = '';
  try {
    let after = 0;
    for (;;) {
      const page = await store.resultRowsAfter(batchId, after, PAGE_ROWS);
      if (page.length === 0) break;
      for (const row of page) {
        after = row.line;
        rows++;
        const status = rowOutcome(row.state);
        counts[status]++;
        if (row.amountCents !== null) cents[status] += row.amountCents;
        await writer?.write(
          resultLine(
            row,
            status,
            width,
            { resultColumns, moneyColumns, fileColumns, columnForms, forms },
            batch.header,
            locale,
          ),
        );
      }
    }
    if (!writer) {
      sha256 = await sha256Of(resultPath);
    } else {
      await writer.close();
      sha256 = await sha256Of(staging);
      if (sha256 === options.unlessSha256) await fs.rm(staging, { force: true });
      else await renameNoClobber(staging, resultPath);
    }
  } catch (error) {
    await writer?.abort();
    await fs.rm(staging, { force: true });
    throw error;
  }

  const intake = options.intake;
  const summary: ResultSummary = {
    batchId,
    kind: options.kind.name,
    file: batch.fileName,
    ...(intake ? { source: intake.source, takenAt: intake.takenAt } : {}),
    resultFile: path.basename(resultPath),
    version,
    supersedes:
      version > 1
        ? path.basename(answerPaths(options.outboxDir, options.kind.name, options.name, version - 1).resultPath)
        : null,
    ...(options.copyOf
      ? {
          copyOf: {
            file: options.copyOf.fileName,
            takenAt: options.copyOf.takenAt,
            resultFile: answerFileNames(options.copyOf.answerName).result,
          },
        }
      : {}),
    rows,
    counts,
    amounts: Object.fromEntries(
      ROW_OUTCOMES.map((s) => [s, { cents: cents[s], formatted: formatMoney(locale, cents[s]) }]),
    ) as ResultSummary['amounts'],
    startedAt: batch.startedAt,
    finishedAt: batch.finishedAt,
    writtenAt: new Date().toISOString(),
  };
  if (sha256 === options.unlessSha256) return { resultPath, summaryPath, summary, sha256, unchanged: true };
  await writeFileAtomic(summaryPath, `${JSON.stringify(summary, null, 2)}\n`, { noClobber: true });
  return { resultPath, summaryPath, summary, sha256, unchanged: false };
}

async function sha256Of(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

export interface AnswerIntakeOptions {
  outboxDir: string;
  kind: AnswerKind;
  /** Language of what the answer says to a person. @defaultValue 'pt-BR' */
  locale?: Locale | undefined;
  /** The form of identifiers and dates (config `results`). @defaultValue both `auto` */
  results?: Partial<ResultFormSettings> | undefined;
}

export interface AnswerIntakeOutput {
  resultPath: string;
  summaryPath: string;
  version: number;
  /** false: the current version was already written (and is current); nothing new was written. */
  written: boolean;
}

/** Per store: answers being written now, so one taking's versions are written one at a time. */
const answering = new WeakMap<Store, Map<string, Promise<unknown>>>();

/**
 * Brings the result of the taking `intakeId` up to date: writes its first version, or the next one when a row's
 * outcome changed since the current one was read (see the top of this file); otherwise writes nothing and returns
 * the current version's paths. The batch should be finished (no row pending or in flight).
 */
export async function answerIntake(
  store: Store,
  intakeId: string,
  options: AnswerIntakeOptions,
): Promise<AnswerIntakeOutput> {
  let perStore = answering.get(store);
  if (!perStore) {
    perStore = new Map();
    answering.set(store, perStore);
  }
  const before = perStore.get(intakeId);
  const mine = (async () => {
    if (before) await before.catch(() => undefined);
    return answerIntakeNow(store, intakeId, options);
  })();
  perStore.set(intakeId, mine);
  try {
    return await mine;
  } finally {
    if (perStore.get(intakeId) === mine) perStore.delete(intakeId);
  }
}

async function answerIntakeNow(
  store: Store,
  intakeId: string,
  options: AnswerIntakeOptions,
): Promise<AnswerIntakeOutput> {
  let intake = await getIntake(store, intakeId);
  if (!intake?.batchId) throw new RemessaError('OUTBOX_NO_BATCH', `No batch read for intake ${intakeId}`);
  const paths = (version: number) => answerPaths(options.outboxDir, intake!.folder, intake!.answerName, version);
  const current = (i: IntakeRecord, changes: number) =>
    i.answerType === 'result' && i.answerVersion > 0 && i.answeredChanges === changes;
  let changes = await batchChanges(store, intake.batchId);
  if (current(intake, changes)) {
    return { ...paths(intake.answerVersion), version: intake.answerVersion, written: false };
  }
  // Several daemons on one store (src/store/leases.ts): one writes the answer, the others leave it; read again under
  // the claim (another may have written it meanwhile). Without a daemon (SQLite, the commands): always claimed.
  if (!(await claimAnswer(store, intakeId))) {
    return { ...paths(intake.answerVersion), version: intake.answerVersion, written: false };
  }
  intake = (await getIntake(store, intakeId))!;
  changes = await batchChanges(store, intake.batchId!);
  if (current(intake, changes)) {
    await releaseAnswer(store, intakeId);
    return { ...paths(intake.answerVersion), version: intake.answerVersion, written: false };
  }
  if (!intake.batchId) throw new RemessaError('OUTBOX_NO_BATCH', `No batch read for intake ${intakeId}`);
  // A crash after the files of the version being written were renamed, before the store knew: adopt them when
  // nothing changed since they were read (they are then exactly what would be written again); a crash between the
  // two renames left the result alone: its summary is written now.
  if (intake.writingVersion !== null && intake.writingChanges === changes) {
    const p = paths(intake.writingVersion);
    if ((await exists(p.resultPath)) && !(await exists(p.summaryPath))) {
      await writeResult(store, intake.batchId, {
        outboxDir: options.outboxDir,
        kind: options.kind,
        ...(options.locale ? { locale: options.locale } : {}),
        results: options.results,
        name: intake.answerName,
        version: intake.writingVersion,
        intake,
        ...(await withCopyOf(store, intake)),
        summaryOnly: true,
      });
    }
    if ((await exists(p.resultPath)) && (await exists(p.summaryPath))) {
      await markAnswered(store, intakeId, {
        type: 'result',
        version: intake.writingVersion,
        changes,
        at: new Date().toISOString(),
        sha256: await sha256Of(p.resultPath),
      });
      return { ...p, version: intake.writingVersion, written: false };
    }
  }
  let version = intake.answerVersion + 1;
  while ((await exists(paths(version).resultPath)) || (await exists(paths(version).summaryPath))) version++;
  await beginAnswer(store, intakeId, version, changes);
  const out = await writeResult(store, intake.batchId, {
    outboxDir: options.outboxDir,
    kind: options.kind,
    ...(options.locale ? { locale: options.locale } : {}),
    results: options.results,
    name: intake.answerName,
    version,
    intake,
    ...(await withCopyOf(store, intake)),
    // A retried row that stays as it was: the current version still says it all; no new version.
    unlessSha256: intake.answerVersion > 0 ? intake.answerSha256 : null,
  });
  if (out.unchanged) {
    await markAnswered(store, intakeId, {
      type: 'result',
      version: intake.answerVersion,
      changes,
      at: out.summary.writtenAt,
    });
    return { ...paths(intake.answerVersion), version: intake.answerVersion, written: false };
  }
  crashPoint('answer-renamed');
  await markAnswered(store, intakeId, {
    type: 'result',
    version,
    changes,
    at: out.summary.writtenAt,
    sha256: out.sha256,
  });
  return { resultPath: out.resultPath, summaryPath: out.summaryPath, version, written: true };
}

async function withCopyOf(store: Store, intake: IntakeRecord): Promise<{ copyOf?: IntakeRecord }> {
  const copyOf = await earlierSameContent(store, intake);
  return copyOf ? { copyOf } : {};
}

async function exists(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    () => true,
    () => false,
  );
}

/** How the kind's result columns are written. */
interface ResultColumnsShape {
  resultColumns: readonly string[];
  moneyColumns: ReadonlySet<string>;
  fileColumns: ReadonlySet<string>;
  columnForms: Readonly<Record<string, ResultValueForm>>;
  forms: ResultForms;
}

function resultLine(
  row: ResultRowRecord,
  status: RowOutcome,
  width: number,
  shape: ResultColumnsShape,
  header: readonly string[],
  locale: Locale,
): ResultCell[] {
  const { resultColumns, moneyColumns, fileColumns, columnForms, forms } = shape;
  // The input's cells as they were; a row with a wrong number of cells is cut or padded to keep the file rectangular.
  // In the spreadsheet form, digits Excel would change are made text, their characters kept (./cell-forms.ts).
  const input = row.cells ?? header.map((h) => row.record[h] ?? '');
  const cells: ResultCell[] = Array.from({ length: width }, (_, i) => inputCell(input[i] ?? '', forms));
  let outputs = row.outputs;
  let message = row.errorMessage;
  if (row.state === 'duplicate' && row.owner) {
    // The original's references (ids, statuses, files), never its money: this line moved none (top of this file).
    outputs = { ...row.owner.outputs };
    for (const col of moneyColumns) delete outputs[col];
    const moves = resultColumns.some((col) => moneyColumns.has(col));
    message = t(locale, moves ? 'DUPLICATE.originalPaidNothing' : 'DUPLICATE.original', {
      message: message ?? 'DUPLICATE_NATURAL_KEY',
      state: describeOwner(row.owner.state, locale),
    });
    const ownerFolder = row.owner.answerName;
    if (ownerFolder && row.duplicateOf && row.duplicateOf.batchId !== row.batchId) {
      // The original's files are in the original's folder: named from this batch's folder, where file columns point.
      for (const col of fileColumns) {
        const value = outputs[col];
        if (typeof value === 'string' && value !== '') outputs[col] = `../${ownerFolder}/${value}`;
      }
    }
  }
  const code = status === 'succeeded' ? null : row.errorCode;
  cells.push(status, code, status === 'succeeded' ? null : message);
  for (const col of resultColumns) {
    const value = outputs[col] ?? null;
    // Amounts are cents inside; the file gets them with its own decimal mark.
    cells.push(
      moneyColumns.has(col) && typeof value === 'number' && Number.isInteger(value)
        ? { cents: value }
        : outputCell(value, columnForms[col], forms),
    );
  }
  return cells;
}

/** The original's state: a status (stable, as ERPs read it) or, while it runs, words. */
function describeOwner(state: RowState, locale: Locale): string {
  return state === 'pending' || state === 'in_flight' ? t(locale, 'DUPLICATE.notFinished') : rowOutcome(state);
}

export interface WriteRejectedOptions {
  outboxDir: string;
  /** Folder under the outbox: the kind, or what the caller uses for files of no known kind. */
  kind: string;
  /** Base name: the answer is `<name>.rejected.txt`. */
  name: string;
  /** The input file's name, as dropped. */
  fileName: string;
  /** Why: a stable code and a message that says where (line, column), what was expected and what was found. */
  error: { code: string; message: string };
  /** More lines (e.g. one per problem), each written on its own line. */
  details?: readonly string[];
  /** Language of the note's own words. @defaultValue 'pt-BR' */
  locale?: Locale;
}

/**
 * Writes `<outboxDir>/<kind>/<name>.rejected.txt` saying why the file as a whole was not processed. The name is the
 * taking's own: when it exists already (written before a crash), it is kept as it is and its path returned.
 */
export async function writeRejected(options: WriteRejectedOptions): Promise<string> {
  const file = answerPaths(options.outboxDir, options.kind, options.name).rejectedPath;
  await mkdir(path.dirname(file), { recursive: true });
  const lines = [
    t(options.locale ?? DEFAULT_LOCALE, 'REJECTED.header', { file: options.fileName }),
    '',
    `${options.error.code}: ${options.error.message}`,
    ...(options.details ?? []),
    '',
  ];
  try {
    await writeFileAtomic(file, lines.join('\n'), { noClobber: true });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return file;
}

export { writeFileAtomic };

/** A name used as one path segment: never a path (no separators, no `..`). */
function safeName(name: string, what: string): string {
  if (name === '' || name === '.' || name === '..' || /[/\\\0]/.test(name)) {
    throw new RemessaError(
      'OUTBOX_UNSAFE_NAME',
      `Expected a plain ${what} for an outbox file, got ${JSON.stringify(name)}`,
    );
  }
  return name;
}
