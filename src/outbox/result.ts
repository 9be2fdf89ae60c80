import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../atomic-file.js';
import type { BatchKind, Dialect } from '../batches/kind.js';
import { createResultWriter, type ResultCell } from '../csv/writer.js';
import { RemessaError } from '../errors.js';
import { formatMoney } from '../formats/money.js';
import { DEFAULT_LOCALE, type Locale, t } from '../i18n/index.js';
import { type RowState, rowOutcome } from '../store/rows.js';
import type { ResultRowRecord, Store } from '../store/store.js';
import { ROW_OUTCOMES, type RowOutcome } from '../types.js';

/** The columns every result file has after the input's own. */
export const RESULT_STATUS_COLUMNS = ['status', 'errorCode', 'errorMessage'] as const;

const PAGE_ROWS = 500;

export interface WriteResultOptions {
  /** The outbox root; the result goes to `<outboxDir>/<kind>/`. */
  outboxDir: string;
  // biome-ignore lint/suspicious/noExplicitAny: any kind's result columns
  kind: Pick<BatchKind<any>, 'name' | 'resultColumns' | 'resultMoneyColumns'>;
  /** Base name of the answer files (`<name>.result.csv`), usually the input file's name without `.csv`. */
  name: string;
  /** @defaultValue the batch's input dialect, as stored */
  dialect?: Dialect;
  /** Language of what the answer says to a person (duplicate notes, amounts in the summary). @defaultValue 'pt-BR' */
  locale?: Locale;
}

export interface ResultSummary {
  batchId: string;
  kind: string;
  file: string;
  resultFile: string;
  rows: number;
  counts: Record<RowOutcome, number>;
  /**
   * Sum of the rows' amounts by status, as a person reads them (`R$ 14.325,21`); rejected rows count with the amount
   * their cell holds when it can be read. Rows without an amount are left out.
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
}

/** `outbox/<kind>/<name>/`: where a batch's steps write their files. */
export function filesDirFor(outboxDir: string, kind: string, name: string): string {
  return path.join(outboxDir, safeName(kind, 'kind'), safeName(name, 'name'));
}

/** Writes `<name>.result.csv` and `<name>.summary.json` for the batch, from the store. */
export async function writeResult(
  store: Store,
  batchId: string,
  options: WriteResultOptions,
): Promise<WriteResultOutput> {
  const batch = store.getBatch(batchId);
  if (!batch) throw new RemessaError('OUTBOX_NO_BATCH', `No batch ${batchId} in the store`);
  const dir = path.join(options.outboxDir, safeName(options.kind.name, 'kind'));
  await mkdir(dir, { recursive: true });
  const name = safeName(options.name, 'name');
  const resultPath = path.join(dir, `${name}.result.csv`);
  const summaryPath = path.join(dir, `${name}.summary.json`);
  const dialect = options.dialect ?? batch.dialect;
  const locale = options.locale ?? DEFAULT_LOCALE;
  const resultColumns = options.kind.resultColumns;
  const moneyColumns = new Set(options.kind.resultMoneyColumns ?? []);
  const width = batch.header.length;

  const writer = await createResultWriter(resultPath, {
    dialect,
    header: [...batch.header, ...RESULT_STATUS_COLUMNS, ...resultColumns],
  });
  const counts = Object.fromEntries(ROW_OUTCOMES.map((s) => [s, 0])) as Record<RowOutcome, number>;
  const cents = Object.fromEntries(ROW_OUTCOMES.map((s) => [s, 0])) as Record<RowOutcome, number>;
  let rows = 0;
  try {
    let after = 0;
    for (;;) {
      const page = store.resultRowsAfter(batchId, after, PAGE_ROWS);
      if (page.length === 0) break;
      for (const row of page) {
        after = row.line;
        rows++;
        const status = rowOutcome(row.state);
        counts[status]++;
        if (row.amountCents !== null) cents[status] += row.amountCents;
        await writer.write(resultLine(row, status, width, resultColumns, moneyColumns, batch.header, locale));
      }
    }
    await writer.close();
  } catch (error) {
    await writer.abort();
    throw error;
  }

  const summary: ResultSummary = {
    batchId,
    kind: options.kind.name,
    file: batch.fileName,
    resultFile: path.basename(resultPath),
    rows,
    counts,
    amounts: Object.fromEntries(
      ROW_OUTCOMES.map((s) => [s, { cents: cents[s], formatted: formatMoney(locale, cents[s]) }]),
    ) as ResultSummary['amounts'],
    startedAt: batch.startedAt,
    finishedAt: batch.finishedAt,
    writtenAt: new Date().toISOString(),
  };
  await writeFileAtomic(summaryPath, `${JSON.stringify(summary, null, 2)}\n`);
  return { resultPath, summaryPath, summary };
}

function resultLine(
  row: ResultRowRecord,
  status: RowOutcome,
  width: number,
  resultColumns: readonly string[],
  moneyColumns: ReadonlySet<string>,
  header: readonly string[],
  locale: Locale,
): ResultCell[] {
  // The input's cells as they were; a row with a wrong number of cells is cut or padded to keep the file rectangular.
  const input = row.cells ?? header.map((h) => row.record[h] ?? '');
  const cells: ResultCell[] = Array.from({ length: width }, (_, i) => input[i] ?? '');
  let outputs = row.outputs;
  let message = row.errorMessage;
  if (row.state === 'duplicate' && row.owner) {
    outputs = row.owner.outputs;
    message = t(locale, 'DUPLICATE.original', {
      message: message ?? 'DUPLICATE_NATURAL_KEY',
      state: describeOwner(row.owner.state, locale),
    });
  }
  const code = status === 'succeeded' ? null : row.errorCode;
  cells.push(status, code, status === 'succeeded' ? null : message);
  for (const col of resultColumns) {
    const value = outputs[col] ?? null;
    // Amounts are cents inside; the file gets them with its own decimal mark.
    cells.push(
      moneyColumns.has(col) && typeof value === 'number' && Number.isInteger(value) ? { cents: value } : value,
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

/** Writes `<outboxDir>/<kind>/<name>.rejected.txt` saying why the file as a whole was not processed. */
export async function writeRejected(options: WriteRejectedOptions): Promise<string> {
  const dir = path.join(options.outboxDir, safeName(options.kind, 'kind'));
  await mkdir(dir, { recursive: true });
  const file = path.join(dir, `${safeName(options.name, 'name')}.rejected.txt`);
  const lines = [
    t(options.locale ?? DEFAULT_LOCALE, 'REJECTED.header', { file: options.fileName }),
    '',
    `${options.error.code}: ${options.error.message}`,
    ...(options.details ?? []),
    '',
  ];
  await writeFileAtomic(file, lines.join('\n'));
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
