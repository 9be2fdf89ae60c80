/**
 * Glue between a read record, its kind and the result file, so that the engine (src/runner) does not repeat it:
 * - `validateRecord`: the record's own problems (wrong cell count, a cell against its header) plus the kind's errors;
 * - `resultHeader` / `resultCells`: the result file's columns (issue 4 section 6): the input columns as they were,
 *   then status, errorCode, errorMessage, then the kind's outputs; amounts in the file's decimal mark.
 */
import type { BatchRecord } from '../csv/reader.js';
import type { ResultCell } from '../csv/writer.js';
import type { RowOutcome } from '../types.js';
import { formatCellErrors } from './fields.js';
import type { BatchKind, CellError, Dialect, ParseResult, StepOutput } from './kind.js';

export { formatCellErrors };

/** Parses one record with its kind; the reader's problems (cell count, a conflict with the header) come first. */
export function validateRecord<Row>(kind: BatchKind<Row>, record: BatchRecord, dialect: Dialect): ParseResult<Row> {
  const parsed = kind.parse(record.record, dialect);
  if (record.problems === undefined) return parsed;
  const errors: CellError[] = [...record.problems, ...(parsed.ok ? [] : parsed.errors)];
  return { ok: false, errors };
}

/** The code written in the result's errorCode for a rejected row: the first error's code. */
export function rejectionCode(errors: readonly CellError[]): string {
  return errors[0]?.code ?? 'INVALID_ROW';
}

export const STATUS_COLUMNS = ['status', 'errorCode', 'errorMessage'] as const;

/** Header of the result file: input headers (as in the file), status columns, the kind's result columns. */
export function resultHeader(
  kind: Pick<BatchKind<unknown>, 'resultColumns'>,
  inputHeader: readonly string[],
): string[] {
  return [...inputHeader, ...STATUS_COLUMNS, ...kind.resultColumns];
}

export interface RowResult {
  /** The input cells, as read (BatchRecord.cells). */
  cells: readonly string[];
  status: RowOutcome;
  errorCode?: string | null;
  errorMessage?: string | null;
  /** Outputs of the row's steps (merged in step order; later steps win on a shared name). */
  outputs?: Readonly<Record<string, StepOutput>> | readonly StepOutput[];
}

/**
 * The cells of one result line, in `resultHeader` order. `width` is the number of input headers: a short record is
 * padded, a long one cut, so the columns always line up.
 */
export function resultCells(
  kind: Pick<BatchKind<unknown>, 'resultColumns' | 'resultMoneyColumns'>,
  width: number,
  result: RowResult,
): ResultCell[] {
  const input: ResultCell[] = [];
  for (let i = 0; i < width; i++) input.push(result.cells[i] ?? '');
  const merged: Record<string, StepOutput[string]> = {};
  const outputs =
    result.outputs === undefined ? [] : Array.isArray(result.outputs) ? result.outputs : Object.values(result.outputs);
  for (const out of outputs as StepOutput[]) Object.assign(merged, out);
  const money = new Set(kind.resultMoneyColumns ?? []);
  const values = kind.resultColumns.map((name): ResultCell => {
    const v = merged[name];
    if (money.has(name) && typeof v === 'number') return { cents: v };
    return v ?? null;
  });
  return [...input, result.status, result.errorCode ?? null, result.errorMessage ?? null, ...values];
}
