/**
 * What Excel writes into a CSV instead of what the person typed: a long number in scientific notation (a CNPJ or a
 * bar code typed without a leading apostrophe: `1,12223E+13`, `3,41913E+43`) and the error value of a formula
 * (`#N/D`, `#VALOR!`, `#REF!`). The message names the cell's whole value and says what Excel did, in any column.
 */
import { describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { KINDS } from '../src/batches/registry.js';
import { formatCellErrors } from '../src/batches/results.js';

const BR: Dialect = { delimiter: ';', decimalMark: ',', encoding: 'windows-1252', bom: false, lineEnding: '\r\n' };

const CHARGE = {
  type: 'BANKSLIP',
  correlationId: 'X-1',
  amount: '10,00',
  dueDate: '28/12/2030',
  'payer.name': 'José Araújo',
  'payer.document': '123.456.789-09',
  'payer.address.zipCode': '01310-100',
  'payer.address.publicPlace': 'Av Paulista',
  'payer.address.number': '1',
  'payer.address.neighborhood': 'Bela Vista',
  'payer.address.city': 'São Paulo',
  'payer.address.state': 'SP',
};

function errorsOf(kind: keyof typeof KINDS, record: Record<string, string>): string {
  const parsed = KINDS[kind].parse(record, BR);
  expect(parsed.ok).toBe(false);
  return parsed.ok ? '' : formatCellErrors(parsed.errors, 'pt-BR');
}

describe('a cell Excel wrote in scientific notation', () => {
  it('is told as such for a CNPJ, not as a stray comma', () => {
    expect(errorsOf('charges', { ...CHARGE, 'payer.document': '1,12223E+13' })).toBe(
      'coluna payer.document: Esperava o número inteiro, veio "1,12223E+13": o Excel o escreveu em notação ' +
        'científica e perdeu dígitos; formate a coluna como Texto e digite o número de novo',
    );
  });

  it('is told as such for a bar code', () => {
    expect(errorsOf('bill-payments', { barCode: '3,41913E+43', amount: '250,00' })).toBe(
      'coluna barCode: Esperava o número inteiro, veio "3,41913E+43": o Excel o escreveu em notação ' +
        'científica e perdeu dígitos; formate a coluna como Texto e digite o número de novo',
    );
  });
});

describe('a date Excel wrote as its serial number', () => {
  it('is refused, saying the day it stands for, never guessed (a Mac sheet counts from 1904)', () => {
    expect(errorsOf('charges', { ...CHARGE, dueDate: '46384' })).toBe(
      'coluna dueDate: Esperava uma data como dd/mm/aaaa, veio "46384": o Excel escreveu a data como número (numa ' +
        'planilha do Windows, 28/12/2026); formate a coluna como Data e salve a planilha de novo',
    );
  });
});

describe('a cell holding the error of a formula', () => {
  it('names the error value, whatever the column', () => {
    expect(errorsOf('charges', { ...CHARGE, amount: '#N/D', dueDate: '#VALOR!', 'payer.document': '#REF!' })).toBe(
      [
        'coluna amount: Esperava um valor, veio "#N/D", o erro de uma fórmula do Excel; corrija a fórmula (ou cole ' +
          'os valores) e salve a planilha de novo',
        'coluna dueDate: Esperava um valor, veio "#VALOR!", o erro de uma fórmula do Excel; corrija a fórmula (ou ' +
          'cole os valores) e salve a planilha de novo',
        'coluna payer.document: Esperava um valor, veio "#REF!", o erro de uma fórmula do Excel; corrija a fórmula ' +
          '(ou cole os valores) e salve a planilha de novo',
      ].join('; '),
    );
  });

  it('rejects the row when it is in a column of free text, rather than send "#N/D" as the payer name', () => {
    const parsed = KINDS.charges.parse({ ...CHARGE, 'payer.name': '#N/D' }, BR);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.errors.map((e) => e.code)).toEqual(['EXCEL_ERROR']);
    expect(formatCellErrors(parsed.errors, 'pt-BR')).toBe(
      'coluna payer.name: Esperava um valor, veio "#N/D", o erro de uma fórmula do Excel; corrija a fórmula (ou ' +
        'cole os valores) e salve a planilha de novo',
    );
  });

  it('leaves a cell that only starts with # as it is', () => {
    const parsed = KINDS.charges.parse({ ...CHARGE, 'payer.address.number': '#12' }, BR);
    expect(parsed.ok).toBe(true);
  });
});
