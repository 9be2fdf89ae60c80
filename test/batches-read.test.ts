/**
 * A Brazilian spreadsheet export end to end through the reader and the kinds: Windows-1252, ';', decimal comma,
 * dd/mm/yyyy, ERP headers mapped, a quoted multi-line cell, and the result written back in the same dialect.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import iconv from 'iconv-lite';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KINDS } from '../src/batches/registry.js';
import { formatCellErrors, rejectionCode, resultCells, resultHeader, validateRecord } from '../src/batches/results.js';
import { headerColumns } from '../src/batches/supply.js';
import { HeaderError } from '../src/csv/headers.js';
import { dialectOverrides, readBatch } from '../src/csv/reader.js';
import { createResultWriter } from '../src/csv/writer.js';
import { readOptions } from '../src/runner/options.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-read-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const HEADER = 'Tipo;Documento;Valor;Vencimento;Sacado;CPF/CNPJ;CEP;Logradouro;Cidade;UF;Observação';

/**
 * An ERP's charges sheet (HEADER's columns) as Excel pt-BR saves it: `lines` joined by CRLF in Windows-1252, written
 * to `fileName` in the test's folder, and opened by the reader with the ERP's columns mapped and the dialect detected.
 */
async function readErpSheet(fileName: string, lines: readonly string[]) {
  const path = join(dir, fileName);
  await writeFile(path, iconv.encode(`${lines.join('\r\n')}\r\n`, 'windows-1252'));
  return readBatch(path, {
    columns: KINDS.charges.columns,
    mapping: {
      Tipo: 'type',
      Documento: 'correlationId',
      Valor: 'amount',
      Vencimento: 'dueDate',
      Sacado: 'payer.name',
      'CPF/CNPJ': 'payer.document',
      CEP: 'payer.address.zipCode',
      Logradouro: 'payer.address.publicPlace',
      Cidade: 'payer.address.city',
      UF: 'payer.address.state',
      Observação: '',
    },
    ...dialectOverrides({ encoding: 'auto', delimiter: 'auto', decimalMark: 'auto' }),
  });
}

describe('a Brazilian spreadsheet batch of charges', () => {
  it('reads, validates with line and column, and writes the result in the same dialect', async () => {
    const kind = KINDS.charges;
    const reader = await readErpSheet('charges-dez.csv', [
      HEADER,
      'BANKSLIP;NF-1;1.234,56;15/12/2030;Conceição Araújo;123.456.789-09;01310-100;Av. Paulista;São Paulo;SP;"linha 1',
      'linha 2"',
      'BANKSLIP;NF-2;12,345;31/02/2030;José;111.111.111-11;01310-100;Rua A;Santos;XX;€ 5',
      ';;;;;;;;;;',
      'PIX_STATIC;NF-3;=1+1;;;;;;;;',
    ]);
    expect(reader.dialect).toMatchObject({
      encoding: 'windows-1252',
      delimiter: ';',
      decimalMark: ',',
      lineEnding: '\r\n',
    });
    const out = join(dir, 'charges-dez.result.csv');
    const writer = await createResultWriter(out, {
      dialect: reader.dialect,
      header: resultHeader(
        kind,
        reader.header.map((h) => h.source),
      ),
    });
    const seen: Array<[number, boolean, string]> = [];
    for await (const record of reader.rows) {
      const parsed = validateRecord(kind, record, reader.dialect);
      const message = parsed.ok ? '' : formatCellErrors(parsed.errors, 'en');
      seen.push([record.line, parsed.ok, message]);
      await writer.write(
        resultCells(kind, reader.header.length, {
          cells: record.cells,
          status: parsed.ok ? 'succeeded' : 'rejected',
          errorCode: parsed.ok ? null : rejectionCode(parsed.errors),
          errorMessage: message || null,
          outputs: parsed.ok ? { create: { chargeStatus: 'Pending' } } : {},
        }),
      );
    }
    await writer.close();

    expect(seen.map(([line, ok]) => [line, ok])).toEqual([
      [2, true],
      [4, false],
      [6, false],
    ]);
    const second = seen[1]![2];
    expect(second).toContain('amount: Expected');
    expect(second).toContain('dueDate: Expected');
    expect(second).toContain('payer.document: Expected a CPF with valid check digits');
    expect(second).toContain('payer.address.state: Expected a two-letter state code');
    expect(seen[2]![2]).toContain('amount: Expected');

    const result = iconv.decode(await readFile(out), 'windows-1252');
    const lines = result.split('\r\n');
    expect(lines[0]).toBe(
      `${HEADER};status;errorCode;errorMessage;chargeStatus;ourNumber;barCode;digitableLine;qrCode;pdfFile;imageFile`,
    );
    expect(result).toContain('"linha 1\r\nlinha 2"');
    expect(result).toContain(';€ 5;rejected;');
    expect(result).toContain("PIX_STATIC;NF-3;'=1+1;");
  });
});

describe('a file dropped in the folder of another kind', () => {
  it('is told which folder it belongs in, not mappings that would read it as this kind', async () => {
    const file = join(dir, 'cobrancas.csv');
    await writeFile(
      file,
      iconv.encode(
        'Nome do pagador;CPF/CNPJ;CEP;Endereço;Número;Bairro;Cidade;UF;Vencimento;Valor (R$);Seu número\r\n' +
          'José;123.456.789-09;01310-100;Av. São João;450;República;São Paulo;SP;15/03/2030;1.234,56;NF 1\r\n',
        'windows-1252',
      ),
    );
    const settings = { mappings: {}, defaults: {}, csv: {} };
    const error = await readBatch(file, readOptions(settings, 'bill-payments', 'cobrancas.csv')).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeInstanceOf(HeaderError);
    const note = (error as HeaderError).describe('pt-BR');
    expect(note).toContain('cobrancas.csv linha 1');
    expect(note).toContain('são os de um lote de charges, não de bill-payments');
    expect(note).toContain('inbox/charges/');
    expect(note).not.toContain('"mappings"');
    expect((error as HeaderError).describe('en')).toContain('Put it in inbox/charges/');
    // A header that fits no kind still gets the mappings that would read it.
    await writeFile(file, 'Cod. barras;Valorr\n1;2\n');
    const other = await readBatch(file, readOptions(settings, 'bill-payments', 'cobrancas.csv')).catch((e) => e);
    expect((other as HeaderError).otherKinds).toEqual([]);
    expect((other as HeaderError).describe('pt-BR')).toContain('"mappings"');
  });
});

describe('a sheet with a title above its header', () => {
  it('reads the header on the line under the title, lines counted as the file has them', async () => {
    // Before: the title was taken for the header ('coluna 1 ("Cobranças de novembro"): Esperava um nome de coluna'),
    // with the advice to map the title to "".
    const kind = KINDS.charges;
    const reader = await readErpSheet('charges-titulo.csv', [
      'Cobranças de novembro;;;;;;;;;;',
      HEADER,
      'BANKSLIP;NF-1;1.234,56;15/12/2030;Conceição Araújo;123.456.789-09;01310-100;Av. Paulista;São Paulo;SP;',
      ';;;;;;;;;;',
    ]);
    expect(reader.headerLine).toBe(2);
    expect(reader.header.map((h) => h.source)).toEqual(HEADER.split(';'));
    const seen: Array<[number, boolean]> = [];
    for await (const record of reader.rows) seen.push([record.line, validateRecord(kind, record, reader.dialect).ok]);
    expect(seen).toEqual([[3, true]]);
  });

  it('a header under the title with a column it does not know: that header error, at its own line', async () => {
    // Before: the title was taken for the header, and the answer named the title ('coluna 1 ("Baixas de dezembro")'),
    // advising to map it to "", and said nothing of the header's own unknown column.
    const path = join(dir, 'baixas-titulo.csv');
    await writeFile(
      path,
      iconv.encode('Baixas de dezembro;\r\nIdentificador;Motivo\r\nNF-1;pago em dinheiro\r\n', 'windows-1252'),
    );
    const error = await readBatch(path, {
      columns: headerColumns(KINDS['charge-voids']),
      ...dialectOverrides({ encoding: 'auto', delimiter: 'auto', decimalMark: 'auto' }),
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(HeaderError);
    const header = error as HeaderError;
    expect(header.problems).toEqual([expect.objectContaining({ column: 2, header: 'Motivo' })]);
    expect(header.location.line).toBe(2);
  });

  it("tells the header line's own problem, not the title's, when the header has one column too many", async () => {
    // Before: 'linha 1: coluna 1 ("Pagamentos de contas - novembro/2026"): Esperava um nome de coluna', with the
    // advice to map the title to "" and amount said missing; the extra `Observação` on line 2 was never named.
    const path = join(dir, 'contas.csv');
    await writeFile(
      path,
      iconv.encode(
        'Pagamentos de contas - novembro/2026;;;\r\nLinha digitável;Valor;Data de pagamento;Observação\r\n' +
          '34191.09008 00123.456782 90000.000001 1 31380000015000;150,00;;boleto\r\n',
        'windows-1252',
      ),
    );
    const settings = { mappings: {}, defaults: {}, csv: {} };
    const error = await readBatch(path, readOptions(settings, 'bill-payments', 'contas.csv')).catch((e) => e);
    expect(error).toBeInstanceOf(HeaderError);
    const told = (error as HeaderError).describe('pt-BR');
    expect(told).toContain('linha 2');
    expect(told).toContain('Observação');
    expect(told).not.toContain('Pagamentos de contas');
    expect((error as HeaderError).problems.map((p) => p.code)).toEqual(['HEADER_UNKNOWN_COLUMN']);
  });

  it('still refuses a first line of one cell when the next is no header either', async () => {
    const path = join(dir, 'charges-nada.csv');
    await writeFile(path, 'Cobranças de novembro;;\r\nBANKSLIP;NF-1;10,00\r\n');
    await expect(
      readBatch(path, {
        columns: KINDS.charges.columns,
        ...dialectOverrides({ encoding: 'auto', delimiter: 'auto', decimalMark: 'auto' }),
      }),
    ).rejects.toThrow(HeaderError);
  });
});
