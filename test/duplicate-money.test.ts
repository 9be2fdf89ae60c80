/**
 * A `duplicate` line moved no money (src/outbox/result.ts): its money columns (the kind's `resultMoneyColumns`,
 * `paidAmount`) stay empty, so a clerk who sums `paidAmount` in Excel counts each payment once; the references to the
 * original (its ids, the message naming its line, file and state) stay. The summary's `succeeded` amount counts the
 * payment once too. A bill twice in one file, then again in another file; the same for a Pix QR code. An approval
 * preview leaves a duplicate out of what is to pay.
 *
 * In process: `remessa run` (runOnce) against the embedded sandbox over real HTTP, a store in a temp folder.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../src/config.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { createLogger } from '../src/log.js';
import type { ResultSummary } from '../src/outbox/result.js';
import { runOnce } from '../src/runner/commands.js';
import { runnerOptionsFromConfig } from '../src/runner/options.js';
import { answersOf, parseResultCsv } from './e2e-harness.js';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'remessa-dup-money-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const folders = () => ({
  inbox: path.join(dir, 'inbox'),
  outbox: path.join(dir, 'outbox'),
  archive: path.join(dir, 'archive'),
  data: path.join(dir, 'data'),
});

/** `remessa run FILE` (a file outside the inbox) with the embedded sandbox; its exit code. */
async function run(
  file: string,
  kind: 'bill-payments' | 'pix-payments',
  approval: { kinds: string[] } = { kinds: [] },
): Promise<number> {
  const out = { write: () => true } as unknown as NodeJS.WritableStream;
  const config = buildConfig({ folders: folders(), locale: 'en', approval }, { env: {} });
  const options = { ...runnerOptionsFromConfig(config, createLogger({ level: 'silent' })), out, progressStream: out };
  return runOnce(options, [file], kind);
}

function write(name: string, lines: readonly string[]): string {
  const file = path.join(dir, 'drop', name);
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${lines.join('\r\n')}\r\n`);
  return file;
}

/** The current answer of `<stem>.csv`: its lines and its summary. */
async function answer(kind: string, stem: string) {
  const [a] = await answersOf({ outbox: folders().outbox }, kind, stem);
  if (!a) throw new Error(`no answer for ${stem}`);
  return {
    rows: parseResultCsv(readFileSync(a.results.at(-1)!)),
    summary: JSON.parse(readFileSync(a.summaries.at(-1)!, 'utf8')) as ResultSummary,
  };
}

const bill = (cents: number, n: number) =>
  buildBankSlipBarCode({
    bankCode: '341',
    dueDate: '2030-08-31',
    amountCents: cents,
    freeField: `1090000123456700${String(n).padStart(9, '0')}`,
  });

describe('a duplicate line says it moved no money', () => {
  it('bill-payments: the same bill twice in a file, then again in another file', async () => {
    const a = bill(15_000, 1);
    const b = bill(25_050, 2);
    expect(
      await run(write('a.csv', ['barCode,amount', `${a},150.00`, `${a},150.00`, `${b},250.50`]), 'bill-payments'),
    ).toBe(0);
    const first = await answer('bill-payments', 'a');
    const [paid, again, other] = first.rows;
    expect(paid).toMatchObject({ status: 'succeeded', paidAmount: '150.00' });
    expect(paid!.paymentId).not.toBe('');
    expect(other).toMatchObject({ status: 'succeeded', paidAmount: '250.50' });
    // The line repeated: no money of its own; the original's payment id and status to find it; the message names it.
    expect(again).toMatchObject({ status: 'duplicate', errorCode: 'DUPLICATE_NATURAL_KEY', paidAmount: '' });
    expect(again!.paymentId).toBe(paid!.paymentId);
    expect(again!.paymentStatus).toBe(paid!.paymentStatus);
    expect(again!.errorMessage).toContain('line 2 of this file');
    expect(again!.errorMessage).toContain('succeeded');
    expect(again!.errorMessage).toContain('not sent again, nothing paid by this line (original: succeeded)');
    // Summed in a spreadsheet, the column says what was paid: each bill once.
    const sum = (rows: Array<Record<string, string>>) =>
      rows.reduce((n, r) => n + (r.paidAmount ? Math.round(Number(r.paidAmount) * 100) : 0), 0);
    expect(sum(first.rows)).toBe(40_050);
    expect(first.summary.amounts.succeeded.cents).toBe(40_050);
    expect(first.summary.counts).toMatchObject({ succeeded: 2, duplicate: 1 });
    // The duplicate's own amount is counted apart, under its status: never as paid.
    expect(first.summary.amounts.duplicate.cents).toBe(15_000);

    // The same bill in a later file: a duplicate of a.csv's line 2, no money either.
    expect(await run(write('b.csv', ['barCode,amount', `${a},150.00`]), 'bill-payments')).toBe(0);
    const second = await answer('bill-payments', 'b');
    expect(second.rows).toHaveLength(1);
    expect(second.rows[0]).toMatchObject({ status: 'duplicate', paidAmount: '', paymentId: paid!.paymentId });
    expect(second.rows[0]!.errorMessage).toContain('line 2 of a.csv');
    expect(sum(second.rows)).toBe(0);
    expect(second.summary.amounts.succeeded.cents).toBe(0);
  }, 60_000);

  it('pix-payments: the same QR code twice in a file, then again in another file', async () => {
    const payload =
      '00020126440014br.gov.bcb.pix0122fornecedor@example.com5204000053039865406100.005802BR5923Fornecedor Exemplo Ltda6009Sao Paulo62130509PEDIDO123630473BB';
    expect(
      await run(
        write('p.csv', ['payload,amount,description', `${payload},100.00,A`, `${payload},100.00,A`]),
        'pix-payments',
      ),
    ).toBe(0);
    const first = await answer('pix-payments', 'p');
    const [paid, again] = first.rows;
    expect(paid).toMatchObject({ status: 'succeeded', paidAmount: '100.00' });
    expect(paid!.endToEndId).not.toBe('');
    expect(again).toMatchObject({ status: 'duplicate', paidAmount: '', endToEndId: paid!.endToEndId });
    expect(again!.paymentId).toBe(paid!.paymentId);
    expect(first.summary.amounts.succeeded.cents).toBe(10_000);

    expect(await run(write('q.csv', ['payload,amount,description', `${payload},100.00,A`]), 'pix-payments')).toBe(0);
    const second = await answer('pix-payments', 'q');
    expect(second.rows[0]).toMatchObject({ status: 'duplicate', paidAmount: '', endToEndId: paid!.endToEndId });
    expect(second.rows[0]!.errorMessage).toContain('line 2 of p.csv');
  }, 60_000);

  it('the approval preview: a duplicate is not to pay, its amount counted apart', async () => {
    const a = bill(15_000, 3);
    const file = write('c.csv', ['barCode,amount', `${a},150.00`, `${a},150.00`]);
    await run(file, 'bill-payments', { kinds: ['bill-payments'] });
    const dir = path.join(folders().outbox, 'bill-payments');
    const name = readdirSync(dir).find((n) => /^c\..*\.preview\.csv$/.test(n));
    expect(name).toBeDefined();
    const rows = parseResultCsv(readFileSync(path.join(dir, name!)));
    expect(rows[0]).toMatchObject({ preview: 'to pay', amountToPay: '150.00' });
    expect(rows[1]).toMatchObject({ preview: 'duplicate', amountToPay: '' });
    expect(rows.find((r) => r.barCode === 'TOTAL to pay')).toMatchObject({ amountToPay: '150.00' });
    expect(rows.find((r) => r.barCode === 'TOTAL duplicate (not paid)')).toMatchObject({ amountToPay: '150.00' });
  }, 60_000);
});
