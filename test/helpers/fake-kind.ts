/**
 * A kind without a bank for the engine's tests: rows of one `id` column, in the bill-payments group (money out), with
 * the steps a test gives it.
 */
import type { BatchKind } from '../../src/batches/kind.js';

export interface IdRow {
  id: string;
}

export type IdRowStep = BatchKind<IdRow>['steps'][number];

export function idRowKind(steps: IdRowStep[], resultColumns: string[]): BatchKind<IdRow> {
  return {
    name: 'bill-payments',
    group: 'bill-payments',
    movesMoneyOut: true,
    columns: [{ name: 'id', required: true, format: 'text', example: 'x' }],
    parse: (record) => (record.id ? { ok: true, row: { id: record.id } } : { ok: false, errors: [] }),
    naturalKey: (row) => row.id,
    steps,
    resultColumns,
  };
}
