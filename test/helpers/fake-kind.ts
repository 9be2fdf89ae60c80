/**
 * A kind without a bank for the engine's tests: rows of one `id` column, in the bill-payments group (money out), with
 * the steps a test gives it; and the engine run of such rows (`processIdRows`).
 */
import type { BankClient } from '../../src/bank/client.js';
import type { BatchKind } from '../../src/batches/kind.js';
import type { RequestQueue } from '../../src/queue/index.js';
import { type ProcessBatchOptions, processBatch } from '../../src/runner/engine.js';
import type { Store } from '../../src/store/index.js';

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

/**
 * The engine's run of batch `b` of `kind` over `ids`, one row each from line 2, with no bank (the steps answer) and
 * quick retries; `extra` overrides any option.
 */
export function processIdRows(
  store: Store,
  kind: BatchKind<IdRow>,
  ids: readonly string[],
  queue: RequestQueue,
  filesDir: string,
  extra: Partial<ProcessBatchOptions> = {},
) {
  const rows = (async function* () {
    let line = 1;
    for (const id of ids) yield { line: ++line, record: { id }, cells: [id] };
  })();
  return processBatch({
    store,
    kind: kind as BatchKind<never>,
    batchId: 'b',
    fileName: 'b.csv',
    input: { dialect: { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false }, header: ['id'], rows },
    client: {} as BankClient,
    queue,
    filesDir,
    accountId: '0001234',
    retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 10 },
    ...extra,
  });
}
