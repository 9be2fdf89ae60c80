import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ChargeRow } from '../src/batches/charges.js';
import { CELL_ERROR_CODES, columnLabeller, formatCellErrors } from '../src/batches/fields.js';
import type { CellError, Dialect } from '../src/batches/kind.js';
import { KINDS } from '../src/batches/registry.js';
import { parseDate } from '../src/formats/dates.js';
import { formatMoney } from '../src/formats/money.js';
import { CATALOGUES, isMessageKey, LOCALES, render, t } from '../src/i18n/index.js';

const BR: Dialect = { encoding: 'windows-1252', bom: false, delimiter: ';', decimalMark: ',' };
const US: Dialect = { encoding: 'utf8', bom: false, delimiter: ',', decimalMark: '.' };
const SRC = path.join(import.meta.dirname, '..', 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : [],
  );
}

describe('the catalogues', () => {
  it('have every key in both languages, with the same values to put in', () => {
    const en = Object.keys(CATALOGUES.en).sort();
    for (const locale of LOCALES) expect(Object.keys(CATALOGUES[locale]).sort()).toEqual(en);
    const placeholders = (entry: unknown) =>
      typeof entry === 'string' ? [...new Set([...entry.matchAll(/\{(\w+)\}/g)].map((m) => m[1]))].sort() : 'function';
    for (const key of en) {
      const k = key as keyof typeof CATALOGUES.en;
      expect(placeholders(CATALOGUES['pt-BR'][k]), key).toEqual(placeholders(CATALOGUES.en[k]));
    }
  });

  it('have a sentence for every code the pipeline raises (cells, reader, kinds)', () => {
    // A FormatError (src/formats) carries its own catalogue key and values (the type requires them): its code needs
    // no sentence of its own.
    const codes = new Set<string>(Object.values(CELL_ERROR_CODES));
    // Codes given literally where a row's error is raised: r.error(column, 'CODE', ...), { code: 'CODE', message: msg(
    for (const file of sources(SRC).filter((f) => !f.includes(`${path.sep}sandbox${path.sep}`))) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\.error\(\s*[^,]+,\s*'([A-Z_]+)'/g)) codes.add(m[1]!);
      for (const m of text.matchAll(/code: '([A-Z_]+)', message: msg\(/g)) codes.add(m[1]!);
      for (const m of text.matchAll(/code: ([A-Z_]+_CODE), message: msg\(/g)) codes.add(m[1]!);
    }
    codes.delete('COLUMN_COUNT_CODE');
    codes.add('COLUMN_COUNT');
    expect(codes.size).toBeGreaterThan(20); // the scan found the raising sites (25 when written)
    const missing = [...codes].filter((c) => !isMessageKey(c));
    expect(missing).toEqual([]);
  });

  it('say nothing in English in pt-BR: every key rendered with every optional part', () => {
    // Every value a sentence may take (placeholders of the string entries, and the optional parts of the function
    // entries), given as a neutral token: what is left of the sentence is the catalogue's own words.
    const names = new Set(['when', 'why', 'policy', 'step', 'reason', 'total', 'counts', 'eta', 'both', 'name']);
    for (const entry of Object.values(CATALOGUES.en)) {
      if (typeof entry === 'string') for (const m of entry.matchAll(/\{(\w+)\}/g)) names.add(m[1]!);
      else for (const m of entry.toString().matchAll(/\bp\.(\w+)/g)) names.add(m[1]!);
    }
    const params = Object.fromEntries([...names].map((n) => [n, '7']));
    // Words only English uses; what remessa's users read as is stays: code and setting names (bank.profile), commands,
    // formats, the bank's statuses and codes (PENDING_PAYMENT, PIX_STATIC).
    const english =
      /(?<!\p{L})(the|of|and|with|got|expected|field|line|lines|column|file|row|rows|none|since|until|waiting|bank|digits?|characters|amount|invalid|must|is|are|was|to|for|from|by|an|it|this|that|which|after|before|only|every|each|empty|missing|unknown|should|could|cannot|error|errors|found|position|check|date|due|slip|payment|event|events|more|than|least|most|between|any|its|nothing|sent|not|value|values|at|here|there|read|written|please)(?!\p{L})/iu;
    const allowed =
      /`[^`]*`|all-or-nothing|send-valid|BR Code|CSV UTF-8|UTF-8|UTF-16\/UTF-32|UTF-16|Windows-1252|6304XXXX|payAt|barCode|digitableLine|correlationId|payer\.phone(\.number)?|--[a-z]+|inbox\/<tipo>\/|<tipo>[-_]\*\.csv|nome\.csv(\.tmp|\.filepart|\.done)?|SIGHUP|mappings?|txid|[A-Z]+(?:_[A-Z]+)+|BANKSLIP|ETA|\{\w+\}|[a-z]+(?:\.[a-z][A-Za-z]*)+/g;
    const leaks: string[] = [];
    for (const key of Object.keys(CATALOGUES.en)) {
      if (!isMessageKey(key)) continue;
      const text = t('pt-BR', key, params);
      const words = text.replace(allowed, ' ');
      const m = english.exec(words);
      if (m) leaks.push(`${key}: "${m[0]}" in ${text}`);
    }
    expect(leaks).toEqual([]);
  });

  it('words a code in Portuguese by default and in English on request', () => {
    expect(t('pt-BR', 'INVALID_STATE', { got: '"XX"' })).toBe(
      'Esperava a sigla de um estado (UF) com duas letras, como SP ou RJ, veio "XX"',
    );
    expect(t('en', 'INVALID_STATE', { got: '"XX"' })).toBe(
      'Expected a two-letter state code (UF) such as SP or RJ, got "XX"',
    );
  });

  it('gives amounts as a person reads them', () => {
    expect(formatMoney('pt-BR', 1_432_521)).toBe('R$ 14.325,21');
    expect(formatMoney('en', 1_432_521)).toBe('R$14,325.21');
    expect(formatMoney('pt-BR', 5)).toBe('R$ 0,05');
  });
});

const charges = KINDS.charges;
const SLIP = {
  type: 'BANKSLIP',
  correlationId: 'INV-1',
  amount: '1.234,56',
  dueDate: '15/12/2030',
  'payer.name': 'Maria da Silva',
  'payer.document': '123.456.789-09',
  'payer.address.zipCode': '01310-100',
  'payer.address.publicPlace': 'Avenida Paulista',
  'payer.address.city': 'São Paulo',
  'payer.address.state': 'SP',
};

function errorsOf(record: Record<string, string>, dialect: Dialect = BR): CellError[] {
  const parsed = charges.parse(record, dialect);
  if (parsed.ok) throw new Error(`expected errors, got ${JSON.stringify(parsed.row)}`);
  return parsed.errors;
}

describe('a row reports every error at once', () => {
  it('an invalid type does not hide the bad e-mail, date and state', () => {
    const errors = errorsOf({
      ...SLIP,
      type: 'Cobrança',
      'payer.email': 'maria@',
      dueDate: '31/02/2030',
      'payer.address.state': 'XY',
    });
    expect(errors.map((e) => [e.column, e.code])).toEqual([
      ['type', 'INVALID_ENUM'],
      ['dueDate', 'INVALID_DATE'],
      ['payer.email', 'INVALID_EMAIL'],
      ['payer.address.state', 'INVALID_STATE'],
    ]);
  });

  it('a missing type too', () => {
    const { type: _, ...noType } = SLIP;
    const errors = errorsOf({ ...noType, 'payer.document': '123.456.789-00' });
    expect(errors.map((e) => [e.column, e.code])).toEqual([
      ['type', 'REQUIRED'],
      ['payer.document', 'INVALID_CPF'],
    ]);
  });
});

describe('the habits of Excel', () => {
  const parsedOk = (record: Record<string, string>, dialect: Dialect = BR) => {
    const parsed = charges.parse(record, dialect);
    if (parsed.ok) return (parsed.row as ChargeRow).input;
    throw new Error(formatCellErrors(parsed.errors, 'en'));
  };

  it('a currency sign in an amount is accepted (R$ 50,00)', () => {
    expect(parsedOk({ ...SLIP, amount: 'R$ 50,00' }).amountCents).toBe(5000);
    expect(parsedOk({ ...SLIP, amount: 'R$1.234,56' }).amountCents).toBe(123456);
    expect(parsedOk({ ...SLIP, amount: 'R$ 1,234.56' }, US).amountCents).toBe(123456);
  });

  it('Boleto, Boleto Pix and Pix are charge types', () => {
    expect(parsedOk({ ...SLIP, type: 'Boleto' }).type).toBe('BANKSLIP');
    expect(parsedOk({ ...SLIP, type: 'boleto pix' }).type).toBe('BANKSLIP_PIX');
    const pix = { correlationId: 'p-1', amount: '10,00' };
    expect(parsedOk({ ...pix, type: 'Pix' }).type).toBe('PIX_DYNAMIC');
    expect(parsedOk({ ...pix, type: 'Pix estático' }).type).toBe('PIX_STATIC');
  });

  it('a date without leading zeros (15/3/2030) is read', () => {
    expect(parseDate('15/3/2030')).toBe('2030-03-15');
    expect(parseDate('1/1/2031')).toBe('2031-01-01');
    expect((parsedOk({ ...SLIP, dueDate: '5/3/2030' }) as { dueDate?: string }).dueDate).toBe('2030-03-05');
  });

  it('a CPF, CNPJ or CEP that lost its leading zeros gets a hint, never a guess', () => {
    // CPF 012.345.678-90 and CNPJ 01.234.567/0001-95 as Excel leaves them (a number).
    const cpf = errorsOf({ ...SLIP, 'payer.document': '1234567890' });
    expect(cpf.map((e) => e.code)).toEqual(['INVALID_DOCUMENT']);
    expect(render('pt-BR', cpf[0]!.message)).toBe(
      'Esperava um CPF de 11 dígitos, vieram 10 dígitos: o Excel apaga os zeros à esquerda; formate a coluna como Texto e digite o documento com os zeros (012.345.678-90)',
    );
    const cnpj = errorsOf({ ...SLIP, 'payer.document': '1234567000195' });
    expect(render('en', cnpj[0]!.message)).toContain('Excel drops leading zeros');
    expect(render('en', cnpj[0]!.message)).toContain('01.234.567/0001-95');
    const cep = errorsOf({ ...SLIP, 'payer.address.zipCode': '1310100' });
    expect(cep.map((e) => [e.column, e.code])).toEqual([['payer.address.zipCode', 'INVALID_ZIP_CODE']]);
    expect(render('pt-BR', cep[0]!.message)).toContain('formate a coluna como Texto e digite 01310-100');
    // Not a lost zero: no hint.
    const short = errorsOf({ ...SLIP, 'payer.document': '1234' });
    expect(render('en', short[0]!.message)).not.toContain('Excel');
  });

  it("a decimal-comma file's amount error is said in its own dialect", () => {
    const [e] = errorsOf({ ...SLIP, amount: '1.500' });
    expect(e!.code).toBe('AMBIGUOUS_AMOUNT');
    const text = render('pt-BR', e!.message);
    expect(text).toContain('use vírgula: 1.234,56');
    expect(text).toContain('escreva 1500 ou 1,50');
    expect(text).not.toContain('Expected');
    const [d] = errorsOf({ ...SLIP, amount: '12.3456' });
    expect(render('pt-BR', d!.message)).toBe(
      'Esperava no máximo 2 casas decimais, vieram 4 em "12.3456" (use vírgula: 1.234,56)',
    );
  });

  it('says how the file writes decimals only when the error is about the marks', () => {
    // A sign, an empty cell, letters or a size have nothing to do with the decimal mark: no hint after them.
    for (const [amount, said] of [
      ['-5,00', 'Esperava um valor sem sinal, veio "-5,00"'],
      ['abc', 'Esperava só dígitos, ponto e vírgula, veio "a" em "abc"'],
      ['99999999999,00', 'Esperava um valor abaixo de 10.000.000.000, veio "99999999999,00"'],
    ] as const) {
      const [e] = errorsOf({ ...SLIP, amount });
      expect(render('pt-BR', e!.message)).toBe(said);
    }
  });
});

describe('a cell error names the column as the file does', () => {
  it('coluna N (Vencimento -> dueDate)', async () => {
    const { columnLabeller } = await import('../src/batches/fields.js');
    const label = columnLabeller([
      { source: 'Nome', column: 'payer.name' },
      { source: 'Vencimento', column: 'dueDate' },
      { source: 'amount', column: 'amount' },
      { source: 'type', column: 'type', supplied: true },
    ]);
    const errors = errorsOf({ ...SLIP, dueDate: '31/02/2030', amount: 'abc' });
    expect(formatCellErrors(errors, 'pt-BR', label)).toBe(
      'coluna 3 (amount): Esperava só dígitos, ponto e vírgula, veio "a" em "abc"; ' +
        'coluna 2 (Vencimento -> dueDate): Esperava uma data que exista no calendário, veio "31/02/2030"',
    );
    expect(formatCellErrors([{ column: 'type', code: 'REQUIRED', message: { key: 'REQUIRED' } }], 'en', label)).toBe(
      'column type: Expected a value, got an empty cell',
    );
  });
});

describe('a bill with neither a bar code nor a digitable line', () => {
  // Seen with a spreadsheet of bills to pay that has only a `Linha digitável` column: its TOTAL line was answered
  // `coluna barCode: Esperava barCode ou digitableLine`, a column the file does not have, in no word of the person's.
  const bills = KINDS['bill-payments'];
  const neither = (() => {
    const parsed = bills.parse({ amount: '640,00' }, BR);
    if (parsed.ok) throw new Error('expected the row refused');
    return parsed.errors;
  })();

  it.each([
    {
      file: 'only a digitable line',
      header: [
        { source: 'Fornecedor', column: null },
        { source: 'Linha digitável', column: 'digitableLine' },
        { source: 'Valor (R$)', column: 'amount' },
      ],
      locale: 'pt-BR',
      said:
        'coluna 2 (Linha digitável -> digitableLine): Esperava o código de barras (barCode) ou a linha digitável ' +
        '(digitableLine), vieram os dois vazios',
    },
    {
      file: 'only a bar code',
      header: [
        { source: 'Código de barras', column: 'barCode' },
        { source: 'Valor', column: 'amount' },
      ],
      locale: 'en',
      said:
        'column 1 (Código de barras -> barCode): Expected a bar code (barCode) or a digitable line (digitableLine), ' +
        'got both empty',
    },
    {
      file: 'both, the bar code second: at the first of the two the error names',
      header: [
        { source: 'Linha digitável', column: 'digitableLine' },
        { source: 'Código de barras', column: 'barCode' },
      ],
      locale: 'en',
      said:
        'column 2 (Código de barras -> barCode): Expected a bar code (barCode) or a digitable line (digitableLine), ' +
        'got both empty',
    },
  ] as const)('is told at the one of the two columns the file has, in its words: $file', ({ header, locale, said }) => {
    expect(formatCellErrors(neither, locale, columnLabeller(header))).toBe(said);
    expect(neither.map((e) => e.code)).toEqual([CELL_ERROR_CODES.required]);
  });

  it('and so by `remessa validate`', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { validateBatchFile } = await import('../src/runner/validate.js');
    const file = path.join(mkdtempSync(path.join(tmpdir(), 'remessa-i18n-')), 'contas.csv');
    writeFileSync(file, 'Fornecedor;Linha digitável;Valor (R$)\r\nTOTAL;;640,00\r\n', 'latin1');
    const report = await validateBatchFile(file, 'bill-payments', {
      csv: {},
      mappings: { 'bill-payments': { Fornecedor: '' } },
      policy: {},
    });
    expect(report.errors).toEqual([
      'contas.csv linha 2, coluna 2 (Linha digitável -> digitableLine): Esperava o código de barras (barCode) ou a ' +
        'linha digitável (digitableLine), vieram os dois vazios [REQUIRED]',
    ]);
  });
});

describe('a file-level answer in the locale', () => {
  it('an empty file and one without rows', async () => {
    const { mkdtempSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const { readBatch } = await import('../src/csv/reader.js');
    const { InputError } = await import('../src/errors.js');
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-i18n-'));
    const empty = path.join(dir, 'vazio.csv');
    writeFileSync(empty, '');
    const noRows = path.join(dir, 'so-cabecalho.csv');
    writeFileSync(noRows, 'correlationId;amount\r\n');
    const options = {
      columns: [
        { name: 'correlationId', required: true },
        { name: 'amount', required: true },
      ],
    };
    const errorOf = async (file: string) => {
      try {
        (await readBatch(file, options)).close();
      } catch (err) {
        if (err instanceof InputError) return err;
        throw err;
      }
      throw new Error('expected an InputError');
    };
    const e = await errorOf(empty);
    expect(e.describe('pt-BR')).toBe(
      'vazio.csv: Esperava uma linha de cabeçalho e linhas de dados, veio um arquivo vazio',
    );
    expect(e.describe('en')).toBe('vazio.csv: Expected a header line and data rows, got an empty file');
    expect((await errorOf(noRows)).describe('pt-BR')).toBe(
      'so-cabecalho.csv linha 1: Esperava ao menos uma linha de dados depois do cabeçalho, não veio nenhuma',
    );
  });
});
