import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { msg } from '../src/i18n/index.js';
import { filesDirFor, writeRejected, writeResult } from '../src/outbox/index.js';
import { IdempotencyKeys, type IngestRow, openStore, type Store } from '../src/store/index.js';

let dir: string;
let store: Store;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-outbox-'));
  store = openStore(path.join(dir, 'state.sqlite'));
});
afterEach(() => {
  store.close();
  rmSync(dir, { recursive: true, force: true });
});

const kind = {
  name: 'charges' as const,
  resultColumns: ['ourNumber', 'paidAmount'],
  resultMoneyColumns: ['paidAmount'],
};
const BR: Dialect = { delimiter: ';', decimalMark: ',', encoding: 'windows-1252', bom: false, lineEnding: '\r\n' };
const keys = new IdempotencyKeys('acc');

function valid(line: number, id: string, payer: string, cents: number): IngestRow {
  return {
    line,
    record: { correlationId: id, 'payer.name': payer, amount: String(cents) },
    cells: [id, payer, `${Math.floor(cents / 100)},${String(cents % 100).padStart(2, '0')}`],
    valid: true,
    parsed: {},
    naturalKey: id,
    idempotencyKey: keys.forRow('charges', id),
    amountCents: cents,
  };
}

describe('writeResult', () => {
  it('one line per input row in input order, input dialect kept, formulas neutralised, summary beside it', async () => {
    store.createBatch({
      id: 'b1',
      kind: 'charges',
      fileName: 'cobranças.csv',
      dialect: BR,
      header: ['correlationId', 'payer.name', 'amount'],
    });
    store.ingest(
      'b1',
      [
        valid(2, 'A-1', 'José Conceição', 123456),
        {
          line: 3,
          record: { correlationId: '=cmd|calc' },
          cells: ['=cmd|calc', '@SUM(1)', '-1'],
          valid: false,
          errors: [{ column: 'amount', code: 'INVALID_AMOUNT', message: msg('INVALID_AMOUNT.sign', { got: '"-1"' }) }],
        },
        valid(5, 'A-1', 'José Conceição', 123456),
        valid(6, 'A-3', 'Ana', 1000),
      ],
      'en',
    );
    store.finishIngest('b1', 'send-valid');
    store.recordIntent('b1', 2, 'create');
    store.recordStepDone('b1', 2, 'create', { ourNumber: '00000000042', paidAmount: 123456 }, true);
    store.recordIntent('b1', 6, 'create');
    store.recordRowUncertain('b1', 6, 'create', { code: 'UNKNOWN_OUTCOME', message: '+ timed out' });
    store.markBatchDone('b1');

    const out = await writeResult(store, 'b1', {
      outboxDir: path.join(dir, 'outbox'),
      kind,
      name: 'cobranças',
      locale: 'en',
    });
    expect(out.resultPath).toBe(path.join(dir, 'outbox', 'charges', 'cobranças.result.csv'));
    const bytes = readFileSync(out.resultPath);
    expect(bytes.includes(Buffer.from('Concei\xe7\xe3o', 'latin1'))).toBe(true); // Windows-1252, not UTF-8
    const lines = iconv.decode(bytes, 'windows-1252').split('\r\n');
    expect(lines.slice(0, 5)).toEqual([
      'correlationId;payer.name;amount;status;errorCode;errorMessage;ourNumber;paidAmount',
      'A-1;José Conceição;1234,56;succeeded;;;00000000042;1234,56',
      `'=cmd|calc;'@SUM(1);'-1;rejected;INVALID_AMOUNT;"column amount: Expected an amount without a sign, got ""-1""";;`,
      `A-1;José Conceição;1234,56;duplicate;DUPLICATE_NATURAL_KEY;Same charges natural key as line 2 of this file: not sent again (original: succeeded);00000000042;1234,56`,
      `A-3;Ana;10,00;uncertain;UNKNOWN_OUTCOME;'+ timed out;;`,
    ]);
    expect(lines[5]).toBe('');
    expect(out.summary).toMatchObject({
      rows: 4,
      counts: { succeeded: 1, rejected: 1, duplicate: 1, uncertain: 1, failed: 0 },
      amounts: {
        succeeded: { cents: 123456, formatted: 'R$1,234.56' },
        duplicate: { cents: 123456, formatted: 'R$1,234.56' },
        uncertain: { cents: 1000, formatted: 'R$10.00' },
      },
      file: 'cobranças.csv',
    });
    expect(JSON.parse(readFileSync(out.summaryPath, 'utf8')).counts.succeeded).toBe(1);
    // no temporary file left behind
    expect(readdirSync(path.join(dir, 'outbox', 'charges')).sort()).toEqual([
      'cobranças.result.csv',
      'cobranças.summary.json',
    ]);
  });

  it('streams a large batch page by page', async () => {
    store.createBatch({
      id: 'big',
      kind: 'charges',
      fileName: 'big.csv',
      dialect: { ...BR, encoding: 'utf8' },
      header: ['correlationId', 'payer.name', 'amount'],
    });
    const rows: IngestRow[] = [];
    for (let i = 0; i < 2_000; i++) rows.push(valid(i + 2, `K-${i}`, 'P', 100 + i));
    store.ingest('big', rows);
    store.finishIngest('big', 'send-valid');
    const out = await writeResult(store, 'big', { outboxDir: dir, kind, name: 'big' });
    const lines = readFileSync(out.resultPath, 'utf8').trimEnd().split('\r\n');
    expect(lines).toHaveLength(2_001);
    expect(lines[2_000]).toMatch(/^K-1999;P;20,99;uncertain;/); // pending rows show as uncertain
  });

  it('refuses names that are paths', async () => {
    store.createBatch({ id: 'b', kind: 'charges', fileName: 'x.csv', dialect: BR, header: [] });
    await expect(writeResult(store, 'b', { outboxDir: dir, kind, name: '../escape' })).rejects.toMatchObject({
      code: 'OUTBOX_UNSAFE_NAME',
    });
    expect(() => filesDirFor(dir, 'charges', '..')).toThrow(/Expected a plain name/);
    expect(filesDirFor(dir, 'charges', 'jan')).toBe(path.join(dir, 'charges', 'jan'));
  });
});

describe('writeRejected', () => {
  it('writes <name>.rejected.txt saying why, atomically', async () => {
    const file = await writeRejected({
      outboxDir: dir,
      kind: 'bill-payments',
      name: 'pagamentos',
      fileName: 'pagamentos.csv',
      error: { code: 'HEADER_MISSING_COLUMN', message: 'pagamentos.csv line 1: Expected a column "amount", got none' },
      details: ['columns found: barCode, payAt'],
      locale: 'en',
    });
    expect(file).toBe(path.join(dir, 'bill-payments', 'pagamentos.rejected.txt'));
    expect(readFileSync(file, 'utf8')).toBe(
      'pagamentos.csv was not processed: nothing was sent to the bank.\n\nHEADER_MISSING_COLUMN: pagamentos.csv line 1: Expected a column "amount", got none\ncolumns found: barCode, payAt\n',
    );
    expect(readdirSync(path.join(dir, 'bill-payments'))).toEqual(['pagamentos.rejected.txt']);
  });
});
