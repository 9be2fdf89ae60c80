/**
 * The retorno tells when a change happened in Brasília time, as the day's sheet writes a date and time: a payment at
 * 23:30 in São Paulo belongs to that day, though it is already the next day in UTC. A clerk filtering the day's
 * payments in Excel pt-BR reads `27/11/2026 23:30:00`, not `2026-11-28T02:30:00.000Z` (a text Excel does not read as
 * a date, and of the wrong day). A real store, the sandbox over HTTP on a clock of the test's.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { retornoPerTest } from './helpers/retorno.js';

// 23:20 in Brasília on 27/11; 02:20 on 28/11 in UTC.
const w = retornoPerTest({ prefix: 'retorno-brt', start: '2026-11-28T02:20:00.000Z' });

/** A charge issued at the bank, and its row stored as the engine stores a succeeded row of a file in `dialect`. */
async function issued(correlationId: string, dialect: Dialect, payerDocument?: string): Promise<void> {
  await w.client.charges.create({ type: 'PIX_DYNAMIC', correlationId, amountCents: 12_345, expiresInSeconds: 86_400 });
  const payer = payerDocument === undefined ? {} : { payer: { name: 'Padaria Pão de Ló', document: payerDocument } };
  const parsed = { input: { type: 'PIX_DYNAMIC', correlationId, amountCents: 12_345, ...payer } };
  const batch = { amountCents: 12_345, fileName: 'cobrancas.csv', dialect };
  await w.succeeded('charges', parsed, { chargeStatus: 'Created' }, batch);
}

async function payAt23h30(correlationIds: string[]): Promise<void> {
  w.clock = new Date('2026-11-28T02:30:00.000Z');
  for (const correlationId of correlationIds) await w.atBank('POST', `/v1/charges/${correlationId}/pay`, {});
  w.clock = new Date('2026-11-28T02:45:00.000Z');
  const r = await w.pass();
  expect(r.changes).toBe(correlationIds.length);
}

function cells(text: string, delimiter: string): Array<Record<string, string>> {
  const [header, ...rows] = text
    .replace(/^\uFEFF/, '')
    .trim()
    .split(/\r?\n/);
  const names = header!.split(delimiter);
  return rows.map((r) => Object.fromEntries(r.split(delimiter).map((c, i) => [names[i], c])));
}

describe('the retorno says when a change happened in Brasília time', () => {
  it('from a Brazilian sheet: 27/11/2026 23:30:00 for a payment at 23:30 in São Paulo, in that day file', async () => {
    await issued('BRT-PAY-1', {
      encoding: 'windows-1252',
      bom: false,
      delimiter: ';',
      decimalMark: ',',
      lineEnding: '\r\n',
    });
    await payAt23h30(['BRT-PAY-1']);
    const file = path.join(w.outboxDir, 'retorno', '2026-11-27.csv');
    const [line] = cells(iconv.decode(await fs.readFile(file), 'windows-1252'), ';');
    expect(line).toMatchObject({
      correlationId: 'BRT-PAY-1',
      newStatus: 'Paid',
      paidAmount: '123,45',
      occurredAt: '2026-11-28T02:30:00.000Z',
      occurredAtBrasilia: '27/11/2026 23:30:00',
    });
  });

  it('from a UTF-8 file with a decimal point: 2026-11-27 23:30:00', async () => {
    await issued('BRT-PAY-2', { encoding: 'utf8', bom: false, delimiter: ',', decimalMark: '.', lineEnding: '\n' });
    await payAt23h30(['BRT-PAY-2']);
    const file = path.join(w.outboxDir, 'retorno', '2026-11-27.csv');
    const [line] = cells(await fs.readFile(file, 'utf8'), ',');
    expect(line).toMatchObject({
      correlationId: 'BRT-PAY-2',
      paidAmount: '123.45',
      occurredAtBrasilia: '2026-11-27 23:30:00',
    });
  });

  it('writes the payer`s CPF or CNPJ masked: Excel keeps it text, not 1,12223E+13 or a CPF without its 0', async () => {
    const br: Dialect = { encoding: 'windows-1252', bom: false, delimiter: ';', decimalMark: ',', lineEnding: '\r\n' };
    await issued('BRT-DOC-1', br, '11222333000181');
    await issued('BRT-DOC-2', br, '01234567890');
    await payAt23h30(['BRT-DOC-1', 'BRT-DOC-2']);
    const file = path.join(w.outboxDir, 'retorno', '2026-11-27.csv');
    const lines = cells(iconv.decode(await fs.readFile(file), 'windows-1252'), ';');
    expect(lines.map((l) => [l.correlationId, l.payerName, l.payerDocument])).toEqual([
      ['BRT-DOC-1', 'Padaria Pão de Ló', '11.222.333/0001-81'],
      ['BRT-DOC-2', 'Padaria Pão de Ló', '012.345.678-90'],
    ]);
  });
});
