/**
 * End to end (issue 9 §2, the rest of the English): the daemon (a child process, against the sandbox in another
 * process) answers in Portuguese where a parser, the CSV reader or the inbox speaks, not only the cell rules: a
 * digitable line, an arrecadação line and a bar code with a wrong check digit; BR Codes with a wrong CRC, a wrong
 * start and a wrong currency; a workbook saved as such instead of as CSV; a file in a folder of no known kind; an
 * unclosed quote (`validate`); and `status`. Every sentence is the catalogue's (src/i18n), never English inside
 * Portuguese; `--locale en` still says it in English.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { crc16Hex } from '../src/formats/brcode.js';
import {
  drop,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

/** English words that must not reach a person reading Portuguese (codes, states and column names aside). */
const ENGLISH = /(?<!\p{L})(Expected|got|the|of|with|field|line|column|digits?|position|check|none)(?!\p{L})/u;

// examples/bill-payments.csv's lines, each with one digit changed.
const BILLS = [
  'Linha digitável;Código de barras;Valor',
  // 2: field 1's check digit is 8
  '34191090090012345678290000000001131380000015000;;150,00',
  // 3: the arrecadação line's block 1 check digit is 6
  '828800000007899001232029611000000004000000000027;;89,90',
  // 4: the bar code's general check digit (position 5) is 1
  ';34192313800001000001090000123456789000009004;250,00',
  // 5: a line typed with a wrong amount digit: its general check digit (line position 33) is 1
  '34191.09008 00123.456782 90000.000001 1 31380000015001;;150,01',
  '',
].join('\r\n');

const PAYLOAD =
  '00020126440014br.gov.bcb.pix0122fornecedor@example.com5204000053039865406100.005802BR5923Fornecedor Exemplo Ltda6009Sao Paulo62130509PEDIDO123630473BB';
const inDollars = PAYLOAD.slice(0, -8).replace('5303986', '5303840');
const PIX = [
  'Copia e cola;Valor;Descrição',
  // 2: copied with the CRC changed
  `${PAYLOAD.slice(0, -4)}0000;100,00;Pedido 123`,
  // 3: not a BR Code at all
  'olá mundo;100,00;Pedido 124',
  // 4: a well-formed code (its CRC is right) in another currency
  `${inDollars}6304${crc16Hex(`${inDollars}6304`)};100,00;Pedido 125`,
  '',
].join('\r\n');

let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;
let dir: string;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-i18n-formats-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url);
  daemon = startDaemon(ws);
  await waitFor('the daemon to be ready', () => daemon.stderr().includes('remessa daemon ready'), 60_000);
}, 90_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  if (sandbox) await sandbox.stop();
});

async function answer(kindFolder: string, stem: string) {
  return waitForAnswer(ws, kindFolder, stem).catch((err: Error) => {
    throw new Error(`${err.message}\ndaemon stderr:\n${daemon.stderr().slice(-4000)}`);
  });
}

describe('what the parsers say, in Portuguese', () => {
  it('bill lines and bar codes with a wrong check digit', async () => {
    await drop(ws, iconv.encode(BILLS, 'windows-1252'), 'bill-payments/contas.csv');
    const a = await answer('bill-payments', 'contas');
    expect(a.type, a.text).toBe('result');
    const rows = parseResultCsv(await fs.readFile(a.file), 'windows-1252');
    expect(rows.map((r) => [r.status, r.errorCode])).toEqual([
      ['rejected', 'INVALID_CHECK_DIGIT'],
      ['rejected', 'INVALID_CHECK_DIGIT'],
      ['rejected', 'INVALID_CHECK_DIGIT'],
      ['rejected', 'INVALID_CHECK_DIGIT'],
    ]);
    expect(rows.map((r) => r.errorMessage)).toEqual([
      'coluna 1 (Linha digitável -> digitableLine): Esperava o dígito verificador 8 no campo 1 da linha digitável (posição 10), veio 9',
      'coluna 1 (Linha digitável -> digitableLine): Esperava o dígito verificador 6 no bloco 1 da linha digitável (posição 12), veio 7',
      'coluna 2 (Código de barras -> barCode): Esperava o dígito verificador 1 no código de barras (posição 5), veio 2',
      // It said "no código de barras (posição 5)": position 5 of the line typed is another digit.
      'coluna 1 (Linha digitável -> digitableLine): Esperava o dígito verificador 9 na linha digitável (posição 33, o dígito sozinho antes dos 14 de vencimento e valor), veio 1',
    ]);
    for (const r of rows) expect(r.errorMessage).not.toMatch(ENGLISH);
  }, 90_000);

  it('BR Codes with a wrong CRC, a wrong start and a wrong currency', async () => {
    await drop(ws, iconv.encode(PIX, 'windows-1252'), 'pix-payments/pix.csv');
    const a = await answer('pix-payments', 'pix');
    expect(a.type, a.text).toBe('result');
    const rows = parseResultCsv(await fs.readFile(a.file), 'windows-1252');
    expect(rows.map((r) => [r.status, r.errorCode])).toEqual([
      ['rejected', 'INVALID_CRC'],
      ['rejected', 'INVALID_FIELD'],
      ['rejected', 'INVALID_FIELD'],
    ]);
    expect(rows.map((r) => r.errorMessage)).toEqual([
      'coluna 1 (Copia e cola -> payload): Esperava o CRC 73BB, veio 0000: o código foi alterado ou copiado pela metade',
      'coluna 1 (Copia e cola -> payload): Esperava que o BR Code começasse com o campo 00 = "01" (000201), veio "olá mu"; confira se o código foi copiado inteiro',
      'coluna 1 (Copia e cola -> payload): Esperava o campo 53 (moeda) = "986", veio "840"',
    ]);
    for (const r of rows) expect(r.errorMessage).not.toMatch(ENGLISH);
  }, 90_000);
});

describe('what the reader and the inbox say, in Portuguese', () => {
  it('a workbook saved as such instead of as CSV', async () => {
    // What Excel writes for "Pasta de Trabalho do Excel (.xlsx)": a zip.
    const xlsx = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 6, 0]), Buffer.alloc(64)]);
    await drop(ws, xlsx, 'charges/planilha.csv');
    const a = await answer('charges', 'planilha');
    expect(a.type).toBe('rejected');
    expect(a.text).toContain('planilha.csv não foi processado: nada foi enviado ao banco.');
    expect(a.text).toContain(
      'FILE_NOT_TEXT: planilha.csv: Esperava um arquivo de texto CSV, veio uma pasta de trabalho do Excel (.xlsx ou .xls): salve-a no Excel como CSV',
    );
    expect(a.text).not.toMatch(ENGLISH);
  }, 90_000);

  it('a file in a folder of no known kind', async () => {
    await drop(ws, Buffer.from('Nome;Valor\r\nAna;10,00\r\n'), 'boletos/janeiro.csv');
    const a = await answer('boletos', 'janeiro');
    expect(a.type).toBe('rejected');
    expect(a.text).toContain('janeiro.csv não foi processado: nada foi enviado ao banco.');
    expect(a.text).toMatch(
      /UNKNOWN_KIND: Esperava que a pasta da caixa de entrada fosse um tipo de lote \(charges, .+\), veio "boletos"/,
    );
    expect(a.text).not.toMatch(ENGLISH);
  }, 90_000);

  it('validate: a quote that never closes, said with its line and column', async () => {
    const file = path.join(dir, 'charges-aspas.csv');
    await fs.writeFile(
      file,
      iconv.encode('Nome;Valor;Descrição\r\nAna;10,00;"Parcela 1\r\nBia;20,00;Parcela 2\r\n', 'windows-1252'),
    );
    const pt = await runCli(['validate', '--config', ws.config, '--kind', 'charges', file]);
    expect(pt.code).toBe(1);
    expect(pt.stdout).toContain(
      'charges-aspas.csv linha 2, coluna 3: Esperava que o valor entre aspas aberto na coluna 3 fechasse com aspas ("), veio o fim do arquivo',
    );
    expect(pt.stdout).not.toContain('csv-parse');
    expect(pt.stdout).not.toMatch(ENGLISH);
    const en = await runCli(['validate', '--config', ws.config, '--locale', 'en', '--kind', 'charges', file]);
    expect(en.stdout).toContain(
      'charges-aspas.csv line 2, column 3: Expected the quoted value that opens in column 3 to close with a quote',
    );
  }, 60_000);

  it('validate: a payment date or due date out of range, said as the clerk typed it', async () => {
    // Before: "Esperava payAt a partir de hoje (2026-11-29) ..., veio 2026-11-01" for a cell 01/11/2026, and a due
    // date "de 2026-11-29 a 2036-11-26; veio 2040-01-15" for 15/01/2040: dates the clerk never wrote.
    // The bank's day, Brasília's (docs/service-gaps.md "Today"): from 21:00 there UTC's is already the next one.
    const today = brasiliaDay(new Date());
    const dayFirst = (d: string) => `${d.slice(8, 10)}/${d.slice(5, 7)}/${d.slice(0, 4)}`;
    const bills = path.join(dir, 'contas-datas.csv');
    await fs.writeFile(
      bills,
      iconv.encode(
        'Linha digitável;Valor;Data de pagamento\r\n34191.09008 00123.456782 90000.000001 1 31380000015000;150,00;01/11/2020\r\n',
        'windows-1252',
      ),
    );
    const pt = await runCli(['validate', '--config', ws.config, '--kind', 'bill-payments', bills]);
    expect(pt.stdout).toContain(
      `contas-datas.csv linha 2, coluna 3 (Data de pagamento -> payAt): Esperava payAt a partir de hoje (${dayFirst(today)}) (o banco recusa data passada), veio "01/11/2020"`,
    );
    const charges = path.join(dir, 'cobrancas-datas.csv');
    await fs.writeFile(
      charges,
      iconv.encode(
        'Tipo;Seu número;Valor;Vencimento;Nome do pagador;CPF/CNPJ\r\nBANKSLIP;NF-1;10,00;15/01/2099;Ana;529.982.247-25\r\n',
        'windows-1252',
      ),
    );
    const due = await runCli(['validate', '--config', ws.config, '--kind', 'charges', charges]);
    expect(due.stdout).toMatch(
      new RegExp(
        `linha 2, coluna 4 \\(Vencimento -> dueDate\\): Esperava .*, de ${dayFirst(today)} a \\d\\d/\\d\\d/\\d{4}; veio "15/01/2099"`,
      ),
    );
  }, 60_000);

  it('status, with the retorno lines', async () => {
    const pt = await runCli(['status', '--config', ws.config]);
    expect(pt.code, pt.stderr).toBe(0);
    expect(pt.stdout).toContain('Aguardando status final do banco: 0');
    // Statuses and states stay as they are (ERPs read them); the words around them are Portuguese.
    expect(pt.stdout).toContain('Lotes: 4: rejected 2, done 2');
    expect(pt.stdout).toContain('arquivo recusado por inteiro: UNKNOWN_KIND');
    expect(pt.stdout).toContain('Linhas: rejected 7');
    expect(pt.stdout).toContain('Linhas incertas: 0');
    expect(pt.stdout).not.toMatch(/Waiting|Batches|Rows|Uncertain|no rows|since|Driven/);
  }, 60_000);
});

// After the status test: these files would change its counts.
describe('what the inbox answers in Portuguese, after the status test', () => {
  it("a file of one column is answered in the columns of a Portuguese spreadsheet, ';'", async () => {
    // Before: a header with no delimiter to detect was read as ',', so Excel pt-BR showed the whole answer in column A.
    await drop(ws, iconv.encode('correlationId\r\nNAO-EXISTE-1\r\n', 'windows-1252'), 'charge-voids/baixas.csv');
    const a = await answer('charge-voids', 'baixas');
    expect(a.type).toBe('result');
    const text = iconv.decode(await fs.readFile(a.file), 'windows-1252');
    expect(text.split('\r\n')[0]).toBe('correlationId;status;errorCode;errorMessage;chargeStatus');
    expect(text.split('\r\n')[1]).toMatch(/^NAO-EXISTE-1;failed;/);
  }, 90_000);

  it('a row with a cell more than its header, or a value under no header, is refused as validate says: nothing paid', async () => {
    // Before: validate refused these rows (a value under the blank 4th header, a 5th cell) and the run paid them all
    // the same, the description cut at the ';' of an unquoted =HYPERLINK(...;...) and the cell after it dropped.
    const payload =
      '00020126440014br.gov.bcb.pix0122fornecedor@example.com5204000053039865802BR5923Fornecedor Exemplo Ltda6009Sao Paulo62090505NF1236304371F';
    const pixBefore = (await sandbox.effects('pix_paid')).length;
    const sheet = [
      'Copia e cola;Valor;Descrição;',
      `${payload};33,33;=HYPERLINK("http://x";"clique")`,
      `${payload};44,44;Pedido 9;;a mais`,
      '',
    ].join('\r\n');
    await drop(ws, iconv.encode(sheet, 'windows-1252'), 'pix-payments/celulas.csv');
    const a = await answer('pix-payments', 'celulas');
    expect(a.type, a.text).toBe('result');
    const rows = parseResultCsv(await fs.readFile(a.file), 'windows-1252');
    expect(rows.map((r) => [r.status, r.errorCode])).toEqual([
      ['rejected', 'UNNAMED_COLUMN'],
      ['rejected', 'COLUMN_COUNT'],
    ]);
    expect(rows[1]!.errorMessage).toContain('Esperava 4 células, como no cabeçalho, vieram 5');
    expect((await sandbox.effects('pix_paid')).length).toBe(pixBefore);
  }, 90_000);

  it('a sheet of a known kind at the inbox root, or in a folder named in Portuguese, is told where it goes', async () => {
    // Before: only "expected a kind folder or a <kind>-*.csv name", with no word on what the sheet is.
    const sheet = await fs.readFile(path.join(import.meta.dirname, '..', 'examples', 'charges-planilha-pt.csv'));
    await drop(ws, sheet, 'Cobranças Novembro.csv');
    await drop(ws, sheet, 'boletos/dezembro.csv');
    const root = await answer('_unknown', 'Cobranças Novembro');
    expect(root.type).toBe('rejected');
    expect(root.text).toContain(
      'O cabeçalho pode ser lido como o de um lote de charges: caso seja, coloque o arquivo em inbox/charges/, ou dê a ele um nome que comece pelo tipo (charges-Cobranças Novembro.csv)',
    );
    const folder = await answer('boletos', 'dezembro');
    expect(folder.text).toMatch(
      /veio "boletos"\. O cabeçalho pode ser lido como o de um lote de charges: caso seja, coloque o arquivo em inbox\/charges\//,
    );
    expect(folder.text).not.toMatch(ENGLISH);
    // A sheet no kind reads gets no guess.
    await drop(ws, Buffer.from('Fornecedor;Observação\r\nAna;pago\r\n'), 'boletos/notas.csv');
    expect((await answer('boletos', 'notas')).text).not.toContain('O cabeçalho');
  }, 90_000);
});
