/**
 * `remessa validate`: reads and checks every row of a file, sends nothing, stores nothing. Loads only the reader,
 * the batch kinds and the progress display (not the bank client, store or queue of ./commands.ts): a validation
 * starts in a fraction of the time a run needs.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { CellError } from '../batches/kind.js';
import { KINDS } from '../batches/registry.js';
import { readBatch } from '../csv/reader.js';
import { formatLocation, type InputLocation, RemessaError } from '../errors.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK } from '../exit-codes.js';
import { classifyInboxPath } from '../intake/classify.js';
import type { KindName } from '../types.js';
import { out, type RunnerOptions, readOptions } from './options.js';
import { createProgress, estimateRows, isInteractive } from './progress.js';
import { withRowLimit } from './row-limit.js';

/** The kind of a file given on the command line: its folder name or its name prefix (as in the inbox). */
export function kindOfGivenFile(file: string): KindName | undefined {
  const folder = path.basename(path.dirname(file));
  const entry = classifyInboxPath(`${folder}/${path.basename(file)}`);
  if (entry.type === 'batch') return entry.kind;
  const root = classifyInboxPath(path.basename(file));
  return root.type === 'batch' ? root.kind : undefined;
}

/** What `validate` found. */
export interface ValidationReport {
  rows: number;
  valid: number;
  invalid: number;
  /** One line per error: `file line L, column C (name): message [CODE]`. */
  errors: string[];
  /** Said when the policy would send nothing. */
  policyNote?: string;
}

/** Reads and validates every row of `file` as `kind`; sends nothing, stores nothing. Throws InputError for the file. */
export async function validateBatchFile(
  file: string,
  kindName: KindName,
  options: Pick<RunnerOptions, 'csv' | 'mappings' | 'policy'> & Partial<Pick<RunnerOptions, 'controls'>>,
  hooks: { onRow?: (valid: boolean) => void; maxErrors?: number } = {},
): Promise<ValidationReport> {
  const kind = withRowLimit(KINDS[kindName], options.controls);
  const name = path.basename(file);
  const reader = await readBatch(file, readOptions(options as RunnerOptions, kindName, name));
  const report: ValidationReport = { rows: 0, valid: 0, invalid: 0, errors: [] };
  const maxErrors = hooks.maxErrors ?? 10_000;
  const columnIndex = new Map<string, number>();
  reader.header.forEach((h, i) => {
    if (h.column !== null && !columnIndex.has(h.column)) columnIndex.set(h.column, i + 1);
  });
  const add = (line: number, e: CellError) => {
    if (report.errors.length >= maxErrors) return;
    const column = e.column === undefined ? undefined : columnIndex.get(e.column);
    const loc: InputLocation = { file: name, line };
    if (column !== undefined) loc.column = column;
    if (e.column !== undefined) loc.columnName = e.column;
    report.errors.push(`${formatLocation(loc)}: ${e.message} [${e.code}]`);
  };
  try {
    const dialect = reader.dialect;
    const onRow = hooks.onRow;
    // In arrays: an await per row would cost about as much as checking the row.
    for await (const batch of reader.batches) {
      for (const rec of batch) {
        report.rows++;
        let ok: boolean;
        if (rec.problem) {
          add(rec.line, rec.problem);
          ok = false;
        } else {
          const parsed = kind.parse(rec.record, dialect);
          ok = parsed.ok;
          if (!parsed.ok) for (const e of parsed.errors) add(rec.line, e);
        }
        if (ok) report.valid++;
        else report.invalid++;
        onRow?.(ok);
      }
    }
  } finally {
    reader.close();
  }
  if (report.errors.length >= maxErrors) report.errors.push(`... more errors not shown (first ${maxErrors} listed)`);
  const policy = options.policy[kindName] ?? (kind.movesMoneyOut ? 'all-or-nothing' : 'send-valid');
  if (report.invalid > 0) {
    report.policyNote =
      policy === 'all-or-nothing'
        ? 'policy all-or-nothing: nothing would be sent'
        : `policy send-valid: ${report.valid} valid rows would be sent`;
  }
  return report;
}

/**
 * `remessa validate FILE`: reads and validates every row, sends nothing, stores nothing. Prints every error as
 * `file line L, column C (name): message` and the totals. Exit 1 when any row (or the file) is invalid.
 */
export async function validateFile(options: RunnerOptions, file: string, kind?: KindName): Promise<number> {
  const stream = options.progressStream ?? process.stderr;
  const abs = path.resolve(file);
  const k = kind ?? kindOfGivenFile(abs);
  const o = out(options);
  if (!k) {
    o.write(
      `${file}: Expected the file to be in a kind folder or named <kind>-*.csv (or --kind given), got "${path.basename(file)}"\n`,
    );
    return EXIT_NOT_ALL_SUCCEEDED;
  }
  if (!(await fs.stat(abs).catch(() => undefined))?.isFile()) {
    o.write(`${file}: not found\n`);
    return EXIT_CANNOT_RUN;
  }
  const progress = createProgress({ stream });
  progress.start(`validate ${k} ${path.basename(abs)}`, isInteractive(stream) ? await estimateRows(abs) : undefined);
  let result: ValidationReport;
  try {
    result = await validateBatchFile(abs, k, options, { onRow: (valid) => progress.tick(valid ? 'valid' : 'invalid') });
  } catch (err) {
    progress.stop();
    if (err instanceof RemessaError) {
      o.write(`${err.message} [${err.code}]\n`);
      o.write(`${path.basename(abs)}: the file cannot be processed\n`);
      return EXIT_NOT_ALL_SUCCEEDED;
    }
    throw err;
  }
  progress.stop();
  for (const line of result.errors) o.write(`${line}\n`);
  o.write(
    `${path.basename(abs)}: ${plural(result.rows, 'row')}, ${result.valid} valid, ${result.invalid} invalid, ` +
      `${plural(result.errors.length, 'error')}${result.policyNote ? `; ${result.policyNote}` : ''}\n`,
  );
  return result.invalid === 0 && result.rows > 0 ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
}

/** `1 error`, `2 errors`. */
function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
