/**
 * Issue 9 §1: a typical Brazilian sheet works with no configuration. Built-in Portuguese header names matched without
 * regard to case, accents, spaces and punctuation; configured mappings win; two headers for one column is an error
 * naming both; every header problem at once with the nearest known name and the mappings to paste; defaults and
 * derived correlationIds for columns a sheet does not carry; the configuration's mappings and defaults checked.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import iconv from 'iconv-lite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { aliasHeader, HEADER_ALIASES } from '../src/batches/aliases.js';
import { shown } from '../src/batches/fields.js';
import { KINDS } from '../src/batches/registry.js';
import { rejectionCode, validateRecord } from '../src/batches/results.js';
import {
  checkColumnSettings,
  columnSupply,
  correlationIdFromYourNumber,
  headerColumns,
} from '../src/batches/supply.js';
import { buildConfig } from '../src/config.js';
import { HeaderError, normalizeHeader, resolveHeader } from '../src/csv/headers.js';
import { type BatchRecord, readBatch } from '../src/csv/reader.js';
import { ConfigError } from '../src/errors.js';
import { CORRELATION_ID_PATTERN } from '../src/formats/charges.js';
import { msg, t } from '../src/i18n/index.js';
import { readOptions } from '../src/runner/options.js';
import { KIND_NAMES, type KindName } from '../src/types.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-headers-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const WHERE = { file: 'f.csv', line: 1 };

function resolve(kind: KindName, cells: string[], mapping: Record<string, string> = {}) {
  const supply = columnSupply(kind);
  return resolveHeader(cells, WHERE, {
    columns: headerColumns(KINDS[kind]),
    mapping,
    kind,
    ...(supply ? { supplied: supply.columns } : {}),
    ...(supply?.needs ? { suppliedNeeds: supply.needs } : {}),
  });
}

function headerError(run: () => unknown): HeaderError {
  try {
    run();
  } catch (err) {
    expect(err).toBeInstanceOf(HeaderError);
    return err as HeaderError;
  }
  throw new Error('expected a HeaderError');
}

async function readAll(kind: KindName, text: string, encoding: 'utf8' | 'windows-1252' = 'utf8', defaults = {}) {
  const path = join(dir, `${kind}-x.csv`);
  await writeFile(path, iconv.encode(text, encoding));
  const reader = await readBatch(path, readOptions({ mappings: {}, defaults, csv: {} }, kind, 'x.csv'));
  const rows: BatchRecord[] = [];
  for await (const r of reader.rows) rows.push(r);
  return { reader, rows };
}

describe('normalizeHeader', () => {
  it('ignores case, accents, spaces and punctuation; keeps % and R$ apart', () => {
    const same = [
      'Data de vencimento',
      'DATA_DE_VENCIMENTO',
      'data-de-vencimento',
      'Data de Vencimento ',
      'datadevencimento',
    ];
    for (const h of same) expect(normalizeHeader(h)).toBe('datadevencimento');
    expect(normalizeHeader('Município')).toBe(normalizeHeader('MUNICIPIO'));
    expect(normalizeHeader('Nº documento')).toBe(normalizeHeader('N° documento'));
    expect(normalizeHeader('Nº documento')).toBe(normalizeHeader('No. Documento'));
    expect(normalizeHeader('Valor (R$)')).toBe(normalizeHeader('VALOR R$'));
    expect(normalizeHeader('Multa (%)')).not.toBe(normalizeHeader('Multa (R$)'));
    expect(normalizeHeader('Multa (%)')).not.toBe(normalizeHeader('Multa'));
  });
});

describe('built-in header names', () => {
  it('never clash within a kind, and name only columns the kind has', () => {
    for (const kind of KIND_NAMES) {
      const columns = new Set(KINDS[kind].columns.map((c) => c.name));
      const owner = new Map<string, string>();
      for (const c of KINDS[kind].columns) {
        const key = normalizeHeader(c.name);
        expect(owner.get(key), `${kind}: ${c.name}`).toBeUndefined();
        owner.set(key, c.name);
      }
      for (const [column, aliases] of Object.entries(HEADER_ALIASES[kind])) {
        expect(columns.has(column), `${kind}: alias table names ${column}`).toBe(true);
        for (const a of aliases) {
          const key = normalizeHeader(aliasHeader(a));
          const before = owner.get(key);
          expect(
            before === undefined || before === column,
            `${kind}: "${aliasHeader(a)}" is ${before} and ${column}`,
          ).toBe(true);
          owner.set(key, column);
          if (typeof a !== 'string') for (const implied of Object.keys(a.sets)) expect(columns.has(implied)).toBe(true);
        }
      }
    }
  });

  it('read the headers finance staff and ERPs write, for charges', () => {
    const expected: Record<string, string> = {
      Nome: 'payer.name',
      'Nome do pagador': 'payer.name',
      SACADO: 'payer.name',
      'CPF/CNPJ': 'payer.document',
      Documento: 'payer.document',
      'E-mail': 'payer.email',
      Telefone: 'payer.phone',
      CEP: 'payer.address.zipCode',
      Endereço: 'payer.address.publicPlace',
      Número: 'payer.address.number',
      Complemento: 'payer.address.complement',
      Bairro: 'payer.address.neighborhood',
      Município: 'payer.address.city',
      Estado: 'payer.address.state',
      'Data de vencimento': 'dueDate',
      'Valor (R$)': 'amount',
      'Nº documento': 'yourNumber',
      'Nosso número': 'ourNumber',
      Descrição: 'description',
      Multa: 'lateFine.amount',
      Juros: 'latePayment.amount',
      Desconto: 'discount.items.1.amount',
    };
    // One at a time: two of them in one header would name one column twice.
    for (const [h, column] of Object.entries(expected)) {
      const rest = [column === 'amount' ? [] : ['Valor'], column === 'dueDate' ? [] : ['Vencimento']].flat();
      expect(resolve('charges', [h, ...rest]).header[0]!.column, h).toBe(column);
    }
  });

  it('read the headers of the other kinds', () => {
    expect(resolve('bill-payments', ['Linha digitável', 'Valor']).header.map((h) => h.column)).toEqual([
      'digitableLine',
      'amount',
    ]);
    expect(resolve('bill-payments', ['CÓDIGO DE BARRAS', 'Valor a pagar']).header.map((h) => h.column)).toEqual([
      'barCode',
      'amount',
    ]);
    expect(resolve('pix-payments', ['Copia e cola', 'Valor']).header.map((h) => h.column)).toEqual([
      'payload',
      'amount',
    ]);
    expect(resolve('qr-codes', ['Tipo', 'Valor', 'Chave Pix']).header.map((h) => h.column)).toEqual([
      'type',
      'amount',
      'pixKey',
      'correlationId',
    ]);
  });

  it('a configured mapping wins over a built-in name', () => {
    const { header } = resolve('charges', ['Documento', 'CPF', 'Valor', 'Vencimento'], { documento: 'yourNumber' });
    expect(header.map((h) => h.column).slice(0, 2)).toEqual(['yourNumber', 'payer.document']);
  });

  it('two headers naming one column is an error naming both', () => {
    const err = headerError(() => resolve('charges', ['Valor', 'Vencimento', 'Valor (R$)']));
    expect(err.code).toBe('HEADER_DUPLICATE_COLUMN');
    expect(err.message).toContain('"Valor"');
    expect(err.message).toContain('"Valor (R$)"');
    expect(err.message).toContain('amount');
    expect(err.location).toMatchObject({ column: 3, columnName: 'Valor (R$)' });
  });
});

describe('one answer lists every header problem', () => {
  it('unknown headers with their nearest names, missing columns, and the mappings to paste', () => {
    const err = headerError(() =>
      resolve('bill-payments', ['Linha digitavle', 'Vencimento do boleto', 'Observações', 'Juros']),
    );
    expect(err.problems.map((p) => p.code)).toEqual([
      'HEADER_UNKNOWN_COLUMN',
      'HEADER_UNKNOWN_COLUMN',
      'HEADER_UNKNOWN_COLUMN',
      'HEADER_UNKNOWN_COLUMN',
      'HEADER_MISSING_COLUMN',
    ]);
    expect(err.problems[0]).toMatchObject({ column: 1, nearest: { name: 'Linha digitável', column: 'digitableLine' } });
    expect(err.message).toContain('5 problems with the header');
    expect(err.message).toContain('nearest known name: "Linha digitável" (digitableLine)');
    expect(err.message).toContain('Expected the required column amount');
    // The suggestion is JSON the user can paste: the near one mapped, the others ignored (to be checked by a person).
    const json = err.message.slice(err.message.indexOf('{'));
    expect(JSON.parse(json)).toEqual({
      mappings: {
        'bill-payments': { 'Linha digitavle': 'digitableLine', 'Vencimento do boleto': '', Observações: '', Juros: '' },
      },
    });
    expect(err.suggestion).toEqual(JSON.parse(json).mappings['bill-payments']);
  });

  it('a header of punctuation only is unknown, not silently ignored', () => {
    const err = headerError(() => resolve('charges', ['Valor', 'Vencimento', '#']));
    expect(err.problems).toEqual([{ code: 'HEADER_UNKNOWN_COLUMN', column: 3, header: '#' }]);
  });

  it('names a nearest known name only when it is a likely misspelling (Observação was told "barCode")', () => {
    const far = headerError(() => resolve('bill-payments', ['Linha digitável', 'Valor', 'Observação']));
    expect(far.problems).toEqual([{ code: 'HEADER_UNKNOWN_COLUMN', column: 3, header: 'Observação' }]);
    expect(far.message).not.toMatch(/nearest|barCode/);
    expect(far.suggestion).toEqual({ Observação: '' });
    const near = headerError(() => resolve('charges', ['Valr', 'Vencimento']));
    expect(near.problems).toContainEqual({
      code: 'HEADER_UNKNOWN_COLUMN',
      column: 1,
      header: 'Valr',
      nearest: expect.objectContaining({ column: 'amount' }),
    });
  });

  it('a runaway header gives a bounded answer', () => {
    const cells = ['Valor', 'Vencimento', 'x'.repeat(100_000), ...Array.from({ length: 5000 }, (_, i) => `col${i}`)];
    const err = headerError(() => resolve('charges', cells));
    expect(err.problems).toHaveLength(5001);
    expect(err.message.length).toBeLessThan(20_000);
    expect(err.message).toContain('... and 4951 more');
    expect(Object.keys(err.suggestion)).toHaveLength(50);
  });

  it('a column already named is not suggested again', () => {
    const err = headerError(() => resolve('charges', ['Valor', 'Valr', 'Vencimento']));
    expect(err.suggestion).toEqual({ Valr: '' });
  });
});

describe('columns a sheet does not carry', () => {
  const HEADER = 'Nome do pagador;CPF/CNPJ;CEP;Endereço;Cidade;UF;Vencimento;Valor (R$);Seu número';
  const ROW = 'Ana Souza;390.533.447-05;01310-100;Av. Paulista;São Paulo;SP;15/03/2027;1.234,56';

  it('charges are BANKSLIP and get a correlationId: from Seu número, else from the row, shown after the file columns', async () => {
    const text = [HEADER, `${ROW};NF 12/A`, `${ROW};`, `${ROW};`, `${ROW.replace('1.234,56', '1234,56')};`].join(
      '\r\n',
    );
    const { reader, rows } = await readAll('charges', `${text}\r\n`, 'windows-1252');
    expect(reader.header.slice(-2)).toEqual([
      { source: 'type', column: 'type', supplied: true },
      { source: 'correlationId', column: 'correlationId', supplied: true },
    ]);
    expect(rows[0]!.record.type).toBe('BANKSLIP');
    expect(rows[0]!.record.correlationId).toBe('NF~2012~2FA');
    expect(rows[0]!.cells.slice(-2)).toEqual(['BANKSLIP', 'NF~2012~2FA']);
    // Same business content -> same id, whatever the formatting of the amount.
    const id = rows[1]!.record.correlationId!;
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(rows[2]!.record.correlationId).toBe(id);
    expect(rows[3]!.record.correlationId).toBe(id);
    for (const r of rows) expect(KINDS.charges.parse(r.record, reader.dialect).ok, JSON.stringify(r)).toBe(true);
  });

  it('a different row gets a different id, and the id does not depend on the file', async () => {
    const a = await readAll('charges', `${HEADER}\n${ROW};\n`);
    // The same row in a "," UTF-8 file with the columns in another order: the same charge.
    const b = await readAll(
      'charges',
      `${HEADER.replaceAll(';', ',')}\n"${ROW.replace('1.234,56', '1234.56').replaceAll(';', '","')}",\n`,
    );
    expect(b.rows[0]!.record.correlationId).toBe(a.rows[0]!.record.correlationId);
    const c = await readAll('charges', `${HEADER}\n${ROW.replace('Ana Souza', 'Ana  Souza')};\n`);
    expect(c.rows[0]!.record.correlationId).not.toBe(a.rows[0]!.record.correlationId);
    const d = await readAll(
      'charges',
      `Valor;Vencimento;${HEADER.replace(';Vencimento;Valor (R$)', '')}\n1.234,56;15/03/2027;${ROW.replace(';15/03/2027;1.234,56', '')};\n`,
    );
    expect(d.rows[0]!.record.correlationId).toBe(a.rows[0]!.record.correlationId);
  });

  it('a Seu número made of unsafe characters stays injective and within the id limits', () => {
    expect(correlationIdFromYourNumber('NF-2001')).toBe('NF-2001');
    expect(correlationIdFromYourNumber('NF 2001')).not.toBe(correlationIdFromYourNumber('NF_2001'));
    expect(correlationIdFromYourNumber('a~b')).toBe('a~7Eb');
    expect(correlationIdFromYourNumber('ção')).toBe('~C3~A7~C3~A3o');
    const long = 'çççççççççççççççççççç';
    expect(correlationIdFromYourNumber(long)).toMatch(/^[0-9a-f-]{36}$/);
    for (const s of ['NF 12/A', 'x'.repeat(20), long, '#%&?/\\ ']) {
      expect(correlationIdFromYourNumber(s)).toMatch(CORRELATION_ID_PATTERN);
    }
  });

  it('qr codes without an id get a GUID (dynamic QR codes need one)', async () => {
    const { rows, reader } = await readAll('qr-codes', 'Tipo,Valor\nPIX_DYNAMIC,10.00\nPIX_DYNAMIC,10.00\n');
    expect(rows[0]!.record.correlationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(rows[1]!.record.correlationId).toBe(rows[0]!.record.correlationId);
    expect(KINDS['qr-codes'].parse(rows[0]!.record, reader.dialect).ok).toBe(true);
  });

  it('a void names the charge by its Seu número when the sheet has no correlationId', async () => {
    const { rows, reader } = await readAll('charge-voids', 'Seu número\nNF 12/A\n');
    expect(rows[0]!.record.correlationId).toBe('NF~2012~2FA');
    expect(KINDS['charge-voids'].parse(rows[0]!.record, reader.dialect).ok).toBe(true);
    // Neither column: the correlationId is missing from the header, as before.
    const err = headerError(() => resolve('charge-voids', ['Chave de idempotência']));
    expect(err.problems).toEqual([
      { code: 'HEADER_MISSING_COLUMN', target: 'correlationId', example: 'Identificador' },
    ]);
  });

  it('configured defaults win over built-in ones; a default inside a group fills only rows that use the group', async () => {
    const text = `${HEADER};Multa\n${ROW};;2,00\n${ROW};;\n`;
    const { rows, reader } = await readAll('charges', text, 'utf8', {
      charges: { type: 'BANKSLIP_PIX', 'lateFine.type': 'Percentage' },
    });
    expect(rows[0]!.record).toMatchObject({ type: 'BANKSLIP_PIX', 'lateFine.type': 'Percentage' });
    expect(rows[1]!.record.type).toBe('BANKSLIP_PIX');
    expect(rows[1]!.record['lateFine.type']).toBeUndefined();
    for (const r of rows) expect(KINDS.charges.parse(r.record, reader.dialect).ok).toBe(true);
  });

  it('a header can imply a value: Multa (%) is a Percentage fine, only where the row has one', async () => {
    const { rows } = await readAll('charges', `${HEADER};Multa (%);Juros (R$)\n${ROW};;2,00;0,50\n${ROW};;;\n`);
    expect(rows[0]!.record).toMatchObject({
      'lateFine.type': 'Percentage',
      'lateFine.amount': '2,00',
      'latePayment.type': 'Fixed',
    });
    expect(rows[1]!.record['lateFine.type']).toBeUndefined();
  });

  it('a row whose type column contradicts what its header implies is refused, never guessed (R$ 80 was sent as 80%)', async () => {
    const text =
      `${HEADER};Desconto (R$);Data limite do desconto;Tipo de desconto;Multa (%);Tipo de multa\n` +
      `${ROW};;80,00;10/03/2027;Percentage;2,00;percentage\n` +
      `${ROW};;80,00;10/03/2027;fixed;2,00;Fixed\n`;
    const { rows, reader } = await readAll('charges', text);
    // The same value in another case is no contradiction (an enumerated cell is read so).
    expect(rows[0]!.problems).toEqual([
      {
        column: 'discount.type',
        code: 'CONFLICT',
        message: msg('CONFLICT.header', { header: 'Desconto (R$)', implied: 'Fixed', got: shown('Percentage') }),
      },
    ]);
    expect(rows[1]!.problems).toEqual([
      {
        column: 'lateFine.type',
        code: 'CONFLICT',
        message: msg('CONFLICT.header', { header: 'Multa (%)', implied: 'Percentage', got: shown('Fixed') }),
      },
    ]);
    for (const r of rows) {
      const result = validateRecord(KINDS.charges, r, reader.dialect);
      expect(result.ok).toBe(false);
      if (!result.ok) expect(rejectionCode(result.errors)).toBe('CONFLICT');
    }
    expect(t('pt-BR', rows[0]!.problems![0]!.message.key, rows[0]!.problems![0]!.message.params)).toBe(
      'Esperava Fixed, como diz o cabeçalho "Desconto (R$)", veio "Percentage"',
    );
  });

  it('a whole phone number in one cell', () => {
    const base = {
      type: 'BANKSLIP',
      correlationId: 'P1',
      amount: '10,00',
      dueDate: '15/03/2027',
      'payer.name': 'Ana',
      'payer.document': '390.533.447-05',
      'payer.address.zipCode': '01310-100',
      'payer.address.publicPlace': 'Rua A',
      'payer.address.city': 'São Paulo',
      'payer.address.state': 'SP',
    };
    const dialect = { delimiter: ';', decimalMark: ',', encoding: 'utf8', bom: false } as const;
    const phone = (cells: Record<string, string>) => {
      const r = KINDS.charges.parse({ ...base, ...cells }, dialect);
      return r.ok
        ? (r.row as { input: { payer: { phone?: unknown } } }).input.payer.phone
        : r.errors.map((e) => e.code);
    };
    expect(phone({ 'payer.phone': '(11) 98765-4321' })).toEqual({ prefix: '11', number: '987654321' });
    expect(phone({ 'payer.phone': '+55 11 3333-4444' })).toEqual({ prefix: '11', number: '33334444' });
    expect(phone({ 'payer.phone': '98765-4321', 'payer.phone.prefix': '21' })).toEqual({
      prefix: '21',
      number: '987654321',
    });
    expect(phone({ 'payer.phone': '98765-4321' })).toEqual(['INVALID_PHONE']);
    expect(phone({ 'payer.phone': '(11) 98765-4321', 'payer.phone.number': '987654321' })).toEqual(['CONFLICT']);
    // A DDD column that says another area code than the whole number: refused (the 21 was dropped without a word).
    expect(phone({ 'payer.phone': '(11) 98765-4321', 'payer.phone.prefix': '21' })).toEqual(['CONFLICT']);
    // The same area code, written as a DDD column may write it, is no conflict.
    for (const prefix of ['11', '(11)', '011']) {
      expect(phone({ 'payer.phone': '(11) 98765-4321', 'payer.phone.prefix': prefix })).toEqual({
        prefix: '11',
        number: '987654321',
      });
    }
  });
});

describe('the configuration of mappings and defaults', () => {
  it('is checked against the kinds: unknown columns, a header mapped twice, empty defaults', () => {
    const config = buildConfig({
      mappings: { charges: { Valor: 'amount', VALOR: 'amount', Cliente: 'payer.nome' } },
      defaults: { charges: { tipo: 'BANKSLIP', dueDate: '' } },
    });
    let err: unknown;
    try {
      checkColumnSettings(KINDS, config);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    const message = (err as Error).message;
    expect(message).toContain('"payer.nome"');
    expect(message).toContain('"Valor" and "VALOR"');
    expect(message).toContain('"tipo"');
    expect(message).toContain('defaults.charges.dueDate');
    expect(() =>
      checkColumnSettings(KINDS, buildConfig({ mappings: { charges: { Cliente: 'payer.name', X: '' } } })),
    ).not.toThrow();
  });

  it('defaults is a setting per kind; unknown kinds are refused', () => {
    expect(buildConfig({ defaults: { 'qr-codes': { type: 'PIX_DYNAMIC' } } }).defaults['qr-codes']).toEqual({
      type: 'PIX_DYNAMIC',
    });
    expect(() => buildConfig({ defaults: { boletos: {} } })).toThrow(ConfigError);
  });
});
