/**
 * End to end (issue 9 §1): the daemon as a child process, against the sandbox in another process, with the SHIPPED
 * configuration (config/remessa.jsonc; only the folders, the bank URL and the test speed-ups replaced).
 * - A sheet as Excel exports it (Windows-1252, ";", decimal comma, dd/mm/yyyy, Portuguese headers only, no type or
 *   identifier column) succeeds; the result says which type and correlationId each row got.
 * - The same rows dropped again are duplicates (nothing sent); two identical rows in one file: the second is a
 *   duplicate of the first's line.
 * - A header with several problems gets one rejection note listing them all, with the mappings to paste.
 * - A configuration change is taken on SIGHUP without a restart; a bad one is refused and the running one kept.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfigText } from '../src/config.js';
import {
  answersOf,
  drop,
  EXAMPLES,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  ROOT,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;
let shipped: Record<string, unknown>;

async function totalEffects(): Promise<number> {
  return (await sandbox.effects()).reduce((n, e) => n + e.count, 0);
}

/** The shipped configuration with this workspace's folders, bank and test timings (written as a careful editor does). */
async function writeConfig(extra: Record<string, unknown> = {}): Promise<void> {
  const harness = JSON.parse(await fs.readFile(ws.config, 'utf8')) as Record<string, unknown>;
  const config = {
    ...shipped,
    folders: harness.folders,
    bank: harness.bank,
    intake: harness.intake,
    queue: harness.queue,
    ...extra,
  };
  await fs.writeFile(`${ws.config}.tmp`, JSON.stringify(config, null, 2));
  await fs.rename(`${ws.config}.tmp`, ws.config);
}

async function answer(kind: string, stem: string) {
  return waitForAnswer(ws, kind, stem).catch((err: Error) => {
    throw new Error(`${err.message}\ndaemon stderr:\n${daemon.stderr().slice(-4000)}`);
  });
}

function count(text: string, what: string): number {
  return text.split(what).length - 1;
}

beforeAll(async () => {
  shipped = parseConfigText(await fs.readFile(path.join(ROOT, 'config', 'remessa.jsonc'), 'utf8')) as Record<
    string,
    unknown
  >;
  const dir = await fs.mkdtemp(path.join((await import('node:os')).tmpdir(), 'remessa-e2e-hd-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url);
  await writeConfig();
  daemon = startDaemon(ws);
  await waitFor('the daemon to be ready', () => daemon.stderr().includes('remessa daemon ready'), 60_000);
}, 90_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  if (sandbox) await sandbox.stop();
});

describe('a sheet as Excel exports it, with the shipped configuration', () => {
  it('succeeds: BANKSLIP by default, correlationIds from Seu número or from the row, shown in the result', async () => {
    await drop(ws, path.join(EXAMPLES, 'charges-planilha-pt.csv'), 'charges/charges-planilha-pt.csv');
    const a = await answer('charges', 'charges-planilha-pt');
    expect(a.type, a.text).toBe('result');
    const bytes = await fs.readFile(a.file);
    const rows = parseResultCsv(bytes, 'windows-1252');
    for (const r of rows) expect(r.status, JSON.stringify(r)).toBe('succeeded');
    expect(rows.map((r) => r.type)).toEqual(['BANKSLIP', 'BANKSLIP', 'BANKSLIP', 'BANKSLIP']);
    expect(rows[0]!.correlationId).toBe('NF~203001~2FA');
    expect(rows[1]!.correlationId).toBe('NF~203002~2FA');
    expect(rows[2]!.correlationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(rows[3]!.correlationId).toMatch(/^[0-9a-f-]{36}$/);
    expect(rows[0]!['Nome do pagador']).toBe('José Conceição Araújo');
    expect(rows[0]!['Valor (R$)']).toBe('1.234,56');
    for (const r of rows) {
      // A Brazilian sheet's answer: the line as printed on the slip, which Excel keeps as text (README).
      expect(r.digitableLine).toMatch(/^\d{5}\.\d{5} \d{5}\.\d{6} \d{5}\.\d{6} \d \d{14}$/);
      const base = (await answersOf(ws, 'charges', 'charges-planilha-pt'))[0]!.base;
      const pdf = await fs.readFile(path.join(ws.outbox, 'charges', base, r.pdfFile!));
      expect(pdf.subarray(0, 4).toString('latin1')).toBe('%PDF');
    }
    // The bank got what the sheet says: the fine, the interest and the discount of the second row.
    const charge = (await sandbox.call('GET', 'charge', { params: [rows[1]!.correlationId!] })).json as Record<
      string,
      unknown
    >;
    expect(charge).toMatchObject({
      amount: 987.1,
      dueDate: '2027-03-20',
      yourNumber: 'NF 3002/A',
      payer: { document: '52998224725', phone: { prefix: '31', number: '33334444' } },
      discount: { type: 'Fixed', items: [{ date: '2027-03-10', amount: 50 }] },
      lateFine: { type: 'Percentage', amount: 2 },
      latePayment: { type: 'Percentage', amount: 1 },
    });
  });

  it('the same rows dropped again are duplicates; two identical rows in one file are one charge', async () => {
    const before = await totalEffects();
    const original = iconv.decode(await fs.readFile(path.join(EXAMPLES, 'charges-planilha-pt.csv')), 'windows-1252');
    const lines = original.trimEnd().split('\r\n');
    const fresh = lines[4]!.replace('Antônio Brandão', 'Antônia Brandão');
    const text = [...lines, fresh, fresh, ''].join('\r\n');
    await drop(ws, iconv.encode(text, 'windows-1252'), 'charges/again.csv');
    const a = await answer('charges', 'again');
    expect(a.type, a.text).toBe('result');
    const rows = parseResultCsv(await fs.readFile(a.file), 'windows-1252');
    expect(rows.map((r) => r.status)).toEqual([
      'duplicate',
      'duplicate',
      'duplicate',
      'duplicate',
      'succeeded',
      'duplicate',
    ]);
    expect(rows[5]!.errorMessage).toContain('linha 6 deste arquivo');
    expect(rows[5]!.correlationId).toBe(rows[4]!.correlationId);
    expect(rows[0]!.errorMessage).toContain('charges-planilha-pt.csv');
    expect(await totalEffects()).toBe(before + 1);
  });

  it('a charge issued without an id is voided by its Seu número', async () => {
    await drop(ws, iconv.encode('Seu número\r\nNF 3001/A\r\n', 'windows-1252'), 'charge-voids/cancelar.csv');
    const a = await answer('charge-voids', 'cancelar');
    expect(a.type, a.text).toBe('result');
    const rows = parseResultCsv(await fs.readFile(a.file), 'windows-1252');
    expect(rows[0]).toMatchObject({ status: 'succeeded', correlationId: 'NF~203001~2FA', chargeStatus: 'Voided' });
  });

  it('a header with several problems: one note lists them all, with the mappings to paste', async () => {
    const text = 'Nome;CPF/CNPJ;Vencimneto;Valor;Valor (R$);Obs\r\nAna;390.533.447-05;15/03/2027;1,00;1,00;x\r\n';
    await drop(ws, iconv.encode(text, 'windows-1252'), 'charges/bad-header.csv');
    const a = await answer('charges', 'bad-header');
    expect(a.type).toBe('rejected');
    expect(a.text).toContain('3 problemas no cabeçalho');
    expect(a.text).toContain('"Vencimneto"');
    expect(a.text).toContain('nome conhecido mais próximo: "Vencimento" (dueDate)');
    expect(a.text).toContain('na coluna 4 ("Valor") quanto na coluna 5 ("Valor (R$)")');
    expect(a.text).toContain('"Obs"');
    const json = JSON.parse(a.text.slice(a.text.indexOf('{'), a.text.lastIndexOf('}') + 1));
    expect(json).toEqual({ mappings: { charges: { Vencimneto: 'dueDate', 'Valor (R$)': '', Obs: '' } } });
  });
});

describe('a configuration change without a restart', () => {
  const header = 'RAZAO;CNPJ_CPF_CLIENTE;CEP;Endereço;Cidade;UF;Vencimento;Valor\r\n';
  const row = (amount: string) =>
    `Padaria Pão Quente Ltda;11.222.333/0001-81;13010-111;Rua Barão de Jaguara;Campinas;SP;30/06/2027;${amount}\r\n`;

  it('mappings are taken on SIGHUP; a bad configuration is refused and the running one kept', async () => {
    await drop(ws, Buffer.from(header + row('10,00')), 'charges/erp-1.csv');
    const first = await answer('charges', 'erp-1');
    expect(first.type).toBe('rejected');
    expect(first.text).toContain('"RAZAO"');
    expect(first.text).toContain('"CNPJ_CPF_CLIENTE"');

    await writeConfig({ mappings: { charges: { RAZAO: 'payer.name', CNPJ_CPF_CLIENTE: 'payer.document' } } });
    // Counted by SIGHUP: the file watcher may reload too (also fine), but SIGHUP is what is tested here.
    const bySighup = () => (daemon.stderr().match(/"reason":"SIGHUP"[^\n]*configuration reloaded/g) ?? []).length;
    const reloads = bySighup();
    daemon.child.kill('SIGHUP');
    await waitFor('the reload', () => bySighup() > reloads, 20_000);
    await drop(ws, Buffer.from(header + row('10,00')), 'charges/erp-2.csv');
    const second = await answer('charges', 'erp-2');
    expect(second.type, second.text).toBe('result');
    expect(parseResultCsv(second.text)[0]!.status).toBe('succeeded');

    // A configuration that does not load (a mapping to a column that does not exist): refused, the old one kept.
    await writeConfig({ mappings: { charges: { RAZAO: 'payer.nome' } } });
    const refusals = count(daemon.stderr(), 'configuration reload refused');
    daemon.child.kill('SIGHUP');
    await waitFor('the refusal', () => count(daemon.stderr(), 'configuration reload refused') > refusals, 20_000);
    expect(daemon.stderr()).toContain('payer.nome');
    await drop(ws, Buffer.from(header + row('20,00')), 'charges/erp-3.csv');
    const third = await answer('charges', 'erp-3');
    expect(third.type, third.text).toBe('result');
    expect(parseResultCsv(third.text)[0]!.status).toBe('succeeded');
    expect(daemon.child.exitCode).toBeNull();
  });
});
