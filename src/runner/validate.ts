/**
 * `remessa validate`: reads and checks every row of a file, sends nothing, stores nothing. Loads only the reader,
 * the batch kinds and the progress display (not the bank client, store or queue of ./commands.ts): a validation
 * starts in a fraction of the time a run needs.
 * Each row is checked on its own, then against the file's earlier rows as the run will (rule 4 of src/store/rows.ts):
 * a row bringing the natural key of an earlier valid row is its `duplicate` (a note: nothing would be sent for it)
 * or, with other content, refused (NATURAL_KEY_REUSED, src/batches/same-operation.ts); a row whose own
 * `idempotencyKey` an earlier row of another operation carries is refused too (IDEMPOTENCY_KEY_REUSED, as the run
 * refuses it at ingestion: rule 4 of src/store/rows.ts). Keys are held as digests (./file-keys.ts: a file of a million rows
 * within its memory target, docs/performance.md (a)); the few lines a digest matches are read again at the end and
 * their real keys compared. Keys owned by other files of the store are not looked at: validate opens no store.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { columnLabeller, readableAmount, shownColumn } from '../batches/fields.js';
import type { CellError } from '../batches/kind.js';
import { KINDS } from '../batches/registry.js';
import { sameOperationCheck } from '../batches/same-operation.js';
import { readBatch } from '../csv/reader.js';
import { clip, RemessaError } from '../errors.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK } from '../exit-codes.js';
import { formatMoney } from '../formats/money.js';
import { DEFAULT_LOCALE, type Locale, render, t } from '../i18n/index.js';
import { classifyInboxPath } from '../intake/classify.js';
import type { KindName } from '../types.js';
import { FileKeys } from './file-keys.js';
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
  /** Rows the run would answer `duplicate` of an earlier row of the file (nothing sent): one line each. */
  notes: string[];
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
  const report: ValidationReport = {
    rows: 0,
    valid: 0,
    invalid: 0,
    errors: [],
    notes: [],
    amounts: { valid: 0, invalid: 0 },
  };
  const maxErrors = hooks.maxErrors ?? 10_000;
  const locale = options.locale ?? DEFAULT_LOCALE;
  const label = columnLabeller(reader.header);
  /** The line of each error (sorted by it at the end: the rows checked against earlier ones come last). */
  const errorLines: number[] = [];
  const add = (line: number, e: CellError) => addText(line, shownColumn(e, label), render(locale, e.message), e.code);
  const addText = (line: number, columnName: string | undefined, text: string, code: string) => {
    if (report.errors.length >= maxErrors) return;
    const where = t(locale, 'WHERE.line', { file: clip(name), line });
    const column = columnName === undefined ? '' : `, ${render(locale, label(columnName))}`;
    report.errors.push(`${where}${column}: ${text} [${code}]`);
    errorLines.push(line);
  };
  // Rows whose key's digest an earlier row had: [line, the earlier line, 'natural' | 'explicit'].
  const keys = new FileKeys();
  const suspects: Array<[number, number, 'natural' | 'explicit']> = [];
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
            const owner = claimNatural(parsed.row, rec.line);
            if (owner !== undefined) suspects.push([rec.line, owner, 'natural']);
            const explicit = kind.explicitIdempotencyKey?.(parsed.row);
            if (explicit !== undefined && explicit !== '') {
              const first = keys.claim(`i|${explicit}`, rec.line);
              if (first !== undefined && owner === undefined) suspects.push([rec.line, first, 'explicit']);
            }
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
  if (suspects.length > 0) await checkAgainstEarlierRows();

  /**
   * The earlier line whose natural key `row` repeats, as the run decides (rule 4 of src/store/rows.ts): the first row
   * that brought the key; for a kind whose rows are changes of a thing (`BatchKind.changes`), the last row that
   * claimed the key, and only while no other change of the thing came after it (else the row is sent again and
   * claims both). Undefined: the row claims its key.
   */
  function claimNatural(row: unknown, line: number): number | undefined {
    const key = `n|${kind.naturalKey(row as never)}`;
    const thing = kind.changes?.(row as never);
    if (thing === undefined) return keys.claim(key, line);
    const last = keys.get(key);
    if (last !== undefined && keys.get(`c|${thing}`) === last) return last;
    keys.set(key, line);
    keys.set(`c|${thing}`, line);
    return undefined;
  }
  if (errorLines.some((line, i) => i > 0 && line < errorLines[i - 1]!)) {
    const order = errorLines.map((line, i) => [line, i] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    report.errors = order.map(([, i]) => report.errors[i]!);
  }

  /**
   * The rows a digest matched, compared with the earlier row for real (a second read of the file, keeping only the
   * lines concerned): a duplicate, a natural key reused for another operation, or an explicit idempotency key reused.
   */
  async function checkAgainstEarlierRows(): Promise<void> {
    const wanted = new Set<number>();
    for (const [line, owner] of suspects) wanted.add(line).add(owner);
    const rows = new Map<number, { record: Readonly<Record<string, string>>; parsed: unknown }>();
    const again = await readBatch(file, readOptions(options as RunnerOptions, kindName, name));
    try {
      for await (const batch of again.batches) {
        for (const rec of batch) {
          if (!wanted.has(rec.line) || rec.problems) continue;
          const parsed = kind.parse(rec.record, again.dialect);
          if (parsed.ok) rows.set(rec.line, { record: rec.record, parsed: parsed.row });
        }
      }
    } finally {
      again.close();
    }
    const check = sameOperationCheck(kind, reader.header, label, locale);
    // biome-ignore lint/suspicious/noExplicitAny: the kind's own row type, read back by the kind itself
    const k = kind as typeof kind & { naturalKey(row: any): string; explicitIdempotencyKey?(row: any): string };
    for (const [line, ownerLine, which] of suspects) {
      const row = rows.get(line);
      const owner = rows.get(ownerLine);
      if (row === undefined || owner === undefined) continue;
      const cents = kind.amountCents?.(row.parsed as never) ?? 0;
      if (which === 'natural') {
        const naturalKey = k.naturalKey(row.parsed);
        if (naturalKey !== k.naturalKey(owner.parsed)) continue; // two keys with one digest
        const refusal = check?.(
          { record: row.record, parsed: row.parsed, naturalKey },
          { line: ownerLine, sameBatch: true, fileName: name, answerName: null, parsed: owner.parsed },
        );
        if (refusal) {
          refuse(line, cents, row.record, undefined, refusal.message, refusal.code);
        } else {
          report.amounts.valid -= cents;
          const where = t(locale, 'WHERE.line', { file: clip(name), line });
          const note = t(locale, 'VALIDATE.duplicate', { kind: kindName, line: ownerLine });
          report.notes.push(`${where}: ${note} [DUPLICATE_NATURAL_KEY]`);
        }
      } else {
        const key = k.explicitIdempotencyKey?.(row.parsed);
        if (key === undefined || key !== k.explicitIdempotencyKey?.(owner.parsed)) continue;
        const message = t(locale, 'VALIDATE.idempotencyKeyReused', {
          key,
          line: ownerLine,
        });
        refuse(line, cents, row.record, 'idempotencyKey', message, 'IDEMPOTENCY_KEY_REUSED');
      }
    }
  }

  /** A row found valid alone that the run will not send: counted invalid, with its error. */
  function refuse(
    line: number,
    cents: number,
    record: Readonly<Record<string, string>>,
    column: string | undefined,
    text: string,
    code: string,
  ): void {
    report.valid--;
    report.invalid++;
    report.amounts.valid -= cents;
    report.amounts.invalid += readableAmount(record.amount, reader.dialect) ?? cents;
    addText(line, column, text, code);
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
  for (const line of result.notes) o.write(`${line}\n`);
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
