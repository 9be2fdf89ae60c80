/**
 * End to end (issue 9 §2): a sheet with the usual mistakes, as Excel exports it (Windows-1252, ";", decimal comma,
 * Portuguese headers), dropped in the inbox of the daemon (a child process, against the sandbox in another process):
 * every error of every row comes at once, in Portuguese, under the sheet's own headers; Excel's habits that are not
 * ambiguous (R$, Boleto, 15/3/2030) are taken; lost leading zeros get a hint; the summary gives amounts as people
 * read them, the rejected ones too. `validate --locale en` says the same in English.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answersOf,
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

const SHEET = [
  'Tipo;Nome do pagador;CPF/CNPJ;E-mail;CEP;Endereço;Cidade;UF;Vencimento;Valor (R$);Seu número',
  // 2: a type remessa does not know hides nothing: the e-mail, the date and the state are reported with it
  'Cobrança;Ana Souza;123.456.789-09;ana@;01310-100;Av. Paulista, 1000;São Paulo;XY;31/02/2030;100,00;NF 1',
  // 3: Excel dropped the zeros of the CPF and of the CEP
  'Boleto;Bruno Lima;1234567890;bruno@example.com;1310100;Rua Augusta, 5;São Paulo;SP;10/03/2030;200,00;NF 2',
  // 4: "1.500" in a decimal-comma file: thousands or decimals?
  'Boleto;Carla Dias;529.982.247-25;;30130-010;Praça Sete, 12;Belo Horizonte;MG;20/03/2030;1.500;NF 3',
  // 5: Excel's habits that say one thing only: R$, Boleto Pix, a date without zeros
  'Boleto Pix;Davi Melo;390.533.447-05;davi@example.com;20040-020;Rua da Assembleia, 10;Rio de Janeiro;RJ;15/3/2030;R$ 50,00;NF 4',
  '',
].join('\r\n');

let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;
let sheetFile: string;

beforeAll(async () => {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-i18n-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url);
  sheetFile = path.join(dir, 'charges-erros.csv');
  await fs.writeFile(sheetFile, iconv.encode(SHEET, 'windows-1252'));
  daemon = startDaemon(ws);
  await waitFor('the daemon to be ready', () => daemon.stderr().includes('remessa daemon ready'), 60_000);
}, 90_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  if (sandbox) await sandbox.stop();
});

describe('a sheet with the usual mistakes', () => {
  it('gets every error of every row at once, in Portuguese, under its own headers', async () => {
    await drop(ws, sheetFile, 'charges/charges-erros.csv');
    const a = await waitForAnswer(ws, 'charges', 'charges-erros').catch((err: Error) => {
      throw new Error(`${err.message}\ndaemon stderr:\n${daemon.stderr().slice(-4000)}`);
    });
    expect(a.type, a.text).toBe('result');
    const rows = parseResultCsv(await fs.readFile(a.file), 'windows-1252');
    expect(rows.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected', 'succeeded']);

    const [first, second, third, fourth] = rows as [
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
      Record<string, string>,
    ];
    expect(first.errorCode).toBe('INVALID_ENUM');
    expect(first.errorMessage).toBe(
      'coluna 1 (Tipo -> type): Esperava um destes: BANKSLIP, BANKSLIP_PIX, PIX_STATIC, PIX_DYNAMIC; veio "Cobrança"; ' +
        'coluna 9 (Vencimento -> dueDate): Esperava uma data que exista no calendário, veio "31/02/2030"; ' +
        'coluna 4 (E-mail -> payer.email): Esperava um e-mail como ana@exemplo.com.br, veio "ana@"; ' +
        'coluna 8 (UF -> payer.address.state): Esperava a sigla de um estado (UF) com duas letras, como SP ou RJ, veio "XY"',
    );

    expect(second.errorCode).toBe('INVALID_DOCUMENT');
    expect(second.errorMessage).toContain(
      'coluna 3 (CPF/CNPJ -> payer.document): Esperava um CPF de 11 dígitos, vieram 10 dígitos: o Excel apaga os zeros à esquerda; formate a coluna como Texto',
    );
    expect(second.errorMessage).toContain('(012.345.678-90)');
    expect(second.errorMessage).toContain('coluna 5 (CEP -> payer.address.zipCode): Esperava um CEP de 8 dígitos');
    expect(second.errorMessage).toContain('digite 01310-100');

    expect(third.errorCode).toBe('AMBIGUOUS_AMOUNT');
    expect(third.errorMessage).toBe(
      'coluna 10 (Valor (R$) -> amount): Valor ambíguo "1.500": "." seguido de 3 dígitos pode ser milhar ou decimal; ' +
        'escreva 1500 ou 1,50 (use vírgula: 1.234,56)',
    );

    // "Boleto Pix" issued a BANKSLIP_PIX charge at the bank.
    const charge = (await sandbox.call('GET', 'charge', { params: [fourth.correlationId!] })).json as Record<
      string,
      unknown
    >;
    expect(charge).toMatchObject({ type: 'BANKSLIP_PIX', amount: 50, dueDate: '2030-03-15' });
    expect(fourth['Valor (R$)']).toBe('R$ 50,00');
    for (const r of rows) expect(`${r.errorMessage}`).not.toMatch(/Expected|got /);

    const summary = JSON.parse(
      await fs.readFile((await answersOf(ws, 'charges', 'charges-erros')).at(-1)!.summaries.at(-1)!, 'utf8'),
    ) as { amounts: Record<string, { cents: number; formatted: string }> };
    expect(summary.amounts.succeeded).toEqual({ cents: 5000, formatted: 'R$ 50,00' });
    // The rejected rows whose amount can be read: 100,00 + 200,00 ("1.500" cannot be read).
    expect(summary.amounts.rejected).toEqual({ cents: 30000, formatted: 'R$ 300,00' });
  }, 90_000);

  it('validate says the same, in Portuguese by default and in English with --locale en', async () => {
    const pt = await runCli(['validate', '--config', ws.config, '--kind', 'charges', sheetFile]);
    expect(pt.code).toBe(1);
    expect(pt.stdout).toContain(
      'charges-erros.csv linha 2, coluna 8 (UF -> payer.address.state): Esperava a sigla de um estado (UF)',
    );
    expect(pt.stdout).toContain(
      'charges-erros.csv: 4 linhas, 1 válida, 3 inválidas, 7 erros; política send-valid: 1 linha válida seria enviada; valores: R$ 50,00 válidos, R$ 300,00 inválidos',
    );
    const en = await runCli(['validate', '--config', ws.config, '--locale', 'en', '--kind', 'charges', sheetFile]);
    expect(en.code).toBe(1);
    expect(en.stdout).toContain(
      'charges-erros.csv line 2, column 8 (UF -> payer.address.state): Expected a two-letter state code (UF) such as SP or RJ, got "XY" [INVALID_STATE]',
    );
    expect(en.stdout).toContain('charges-erros.csv line 4, column 10 (Valor (R$) -> amount): Expected "." followed by');
    expect(en.stdout).toContain('(this file writes decimals after a comma: 1.234,56)');
    expect(en.stdout).toContain(
      'charges-erros.csv: 4 rows, 1 valid, 3 invalid, 7 errors; policy send-valid: 1 valid row would be sent; amounts: R$50.00 valid, R$300.00 invalid',
    );
    expect(en.stdout).not.toContain('Esperava');
  }, 60_000);
});
