/**
 * `remessa validate`: reads and checks every row of a file, sends nothing, stores nothing. Loads only the reader,
 * the batch kinds and the progress display (not the bank client, store or queue of ./commands.ts): a validation
 * starts in a fraction of the time a run needs.
 * Each row is checked on its own: rows sharing a natural key are not looked for, neither duplicates nor a key reused
 * with other content (NATURAL_KEY_REUSED, src/batches/same-operation.ts). The run finds those against every file the
 * store holds, this file's earlier rows included; validate keeps nothing per row in memory (a file of a million rows
 * within its memory target, docs/performance.md (a)).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { columnLabeller, readableAmount } from '../batches/fields.js';
import type { CellError } from '../batches/kind.js';
import { KINDS } from '../batches/registry.js';
import { readBatch } from '../csv/reader.js';
import { clip, RemessaError } from '../errors.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK } from '../exit-codes.js';
import { formatMoney } from '../formats/money.js';
import { DEFAULT_LOCALE, type Locale, render, t } from '../i18n/index.js';
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
  /** One line per error: `file linha L, coluna C (Vencimento -> dueDate): message [CODE]` (in the locale). */
  errors: string[];
  /** Sum of the amounts of the valid rows and of the invalid ones (those whose amount cell can be read), in cents. */
  amounts: { valid: number; invalid: number };
  /** Said when the policy would send nothing. */
  policyNote?: string;
}

/** Reads and validates every row of `file` as `kind`; sends nothing, stores nothing. Throws InputError for the file. */
export async function validateBatchFile(
  file: string,
  kindName: KindName,
  options: Pick<RunnerOptions, 'csv' | 'mappings' | 'policy'> &
    Partial<Pick<RunnerOptions, 'controls'>> & { locale?: Locale },
  hooks: { onRow?: (valid: boolean) => void; maxErrors?: number } = {},
): Promise<ValidationReport> {
  const kind = withRowLimit(KINDS[kindName], options.controls);
  const name = path.basename(file);
  const reader = await readBatch(file, readOptions(options as RunnerOptions, kindName, name));
  const report: ValidationReport = { rows: 0, valid: 0, invalid: 0, errors: [], amounts: { valid: 0, invalid: 0 } };
  const maxErrors = hooks.maxErrors ?? 10_000;
  const locale = options.locale ?? DEFAULT_LOCALE;
  const label = columnLabeller(reader.header);
  const add = (line: number, e: CellError) => {
    if (report.errors.length >= maxErrors) return;
    const where = t(locale, 'WHERE.line', { file: clip(name), line });
    const column = e.column === undefined ? '' : `, ${render(locale, label(e.column))}`;
    report.errors.push(`${where}${column}: ${render(locale, e.message)} [${e.code}]`);
  };
  try {
    const dialect = reader.dialect;
    const onRow = hooks.onRow;
    // In arrays: an await per row would cost about as much as checking the row.
    for await (const batch of reader.batches) {
      for (const rec of batch) {
        report.rows++;
        let ok: boolean;
        if (rec.problems) {
          for (const p of rec.problems) add(rec.line, p);
          ok = false;
        } else {
          const parsed = kind.parse(rec.record, dialect);
          ok = parsed.ok;
          if (!parsed.ok) for (const e of parsed.errors) add(rec.line, e);
          else {
            const cents = kind.amountCents?.(parsed.row);
            if (cents !== undefined) report.amounts.valid += cents;
          }
        }
        if (!ok) report.amounts.invalid += readableAmount(rec.record.amount, dialect) ?? 0;
        if (ok) report.valid++;
        else report.invalid++;
        onRow?.(ok);
      }
    }
  } finally {
    reader.close();
  }
  if (report.errors.length >= maxErrors) report.errors.push(t(locale, 'VALIDATE.moreErrors', { max: maxErrors }));
  const policy = options.policy[kindName] ?? (kind.movesMoneyOut ? 'all-or-nothing' : 'send-valid');
  if (report.invalid > 0) {
    report.policyNote =
      policy === 'all-or-nothing'
        ? t(locale, 'VALIDATE.allOrNothing')
        : t(locale, 'VALIDATE.sendValid', { valid: report.valid });
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
  const locale = options.locale ?? DEFAULT_LOCALE;
  if (!k) {
    o.write(`${t(locale, 'VALIDATE.noKind', { file, name: JSON.stringify(path.basename(file)) })}\n`);
    return EXIT_NOT_ALL_SUCCEEDED;
  }
  if (!(await fs.stat(abs).catch(() => undefined))?.isFile()) {
    o.write(`${t(locale, 'VALIDATE.notFound', { file })}\n`);
    return EXIT_CANNOT_RUN;
  }
  const progress = createProgress({ stream, locale });
  progress.start(`validate ${k} ${path.basename(abs)}`, isInteractive(stream) ? await estimateRows(abs) : undefined);
  let result: ValidationReport;
  try {
    result = await validateBatchFile(abs, k, options, { onRow: (valid) => progress.tick(valid ? 'valid' : 'invalid') });
  } catch (err) {
    progress.stop();
    if (err instanceof RemessaError) {
      o.write(`${err.describe(locale)} [${err.code}]\n`);
      o.write(`${t(locale, 'VALIDATE.cannotProcess', { file: path.basename(abs) })}\n`);
      return EXIT_NOT_ALL_SUCCEEDED;
    }
    throw err;
  }
  progress.stop();
  for (const line of result.errors) o.write(`${line}\n`);
  const amounts = t(locale, 'VALIDATE.amounts', {
    valid: formatMoney(locale, result.amounts.valid),
    invalid: formatMoney(locale, result.amounts.invalid),
  });
  o.write(
    `${t(locale, 'VALIDATE.summary', {
      file: path.basename(abs),
      rows: result.rows,
      valid: result.valid,
      invalid: result.invalid,
      errors: result.errors.length,
      policy: result.policyNote,
    })}; ${amounts}\n`,
  );
  return result.invalid === 0 && result.rows > 0 ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
}
