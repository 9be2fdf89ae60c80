/**
 * Result files a person opens in Excel pt-BR (src/outbox/cell-forms.ts). Excel reads every cell of digits as a number:
 * a 47-digit digitable line or a 44-digit bar code became `3,41917E+46` (digits lost for good once saved), a Nosso
 * número, CEP, CPF or Seu número lost its leading zeros; `chargeDueDate` came ISO in a sheet of dd/mm/yyyy dates.
 * Now the answer of a Brazilian sheet writes the digitable line as printed on the slip, other digits as `="..."`
 * (text in Excel), and dates day first; an ERP's UTF-8 file keeps its bare digits and ISO dates, byte for byte as
 * before. And remessa reads its own answers back: a result file dropped again, as written or as Excel saves it, reads
 * as the same values (every row a duplicate, nothing sent).
 *
 * The files go through `remessa run` (a child process) against the sandbox over HTTP, with a real store.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { answerColumnsStart } from '../src/csv/headers.js';
import { unwrapAsText } from '../src/csv/reader.js';
import { asTextFormula, createResultWriter } from '../src/csv/writer.js';
import { formatBillLine, parseBillIdentifier } from '../src/formats/bill-identifier.js';
import { bankSlipBarCodeToLine } from '../src/formats/boleto.js';
import { cpfFromSeed } from '../src/formats/documents.js';
import { outputCell, resultForms } from '../src/outbox/cell-forms.js';
import { formatDigitableLine } from '../src/sandbox/pdf.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { makeWorkspace, parseResultCsv, runCli, type Workspace } from './e2e-harness.js';

const BR: Dialect = { delimiter: ';', decimalMark: ',', encoding: 'windows-1252', bom: false, lineEnding: '\r\n' };
const ERP: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false, lineEnding: '\n' };

// brazilian-formats.md section 2 and 3: the provider's sample, and an arrecadação line.
const SLIP_LINE = '43590001161200000060900005206370510380000000010';
const SLIP_BAR_CODE = '43595103800000000100001112000000600000520637';
const TAX_LINE = '828800000006899001232029611000000004000000000027';

describe('the printed forms', () => {
  it('a bank slip line as on the slip, a tax bill line in four blocks; the parser reads both back', () => {
    expect(formatBillLine(SLIP_LINE)).toBe('43590.00116 12000.000609 00005.206370 5 10380000000010');
    expect(parseBillIdentifier(formatBillLine(SLIP_LINE), { today: '2026-11-28' }).barCode).toBe(SLIP_BAR_CODE);
    // The sandbox's slips print the same form.
    expect(formatDigitableLine(SLIP_LINE)).toBe(formatBillLine(SLIP_LINE));
    const tax = parseBillIdentifier(TAX_LINE);
    expect(formatBillLine(TAX_LINE)).toBe('82880000000-6 89900123202-9 61100000000-4 00000000002-7');
    expect(formatBillLine(tax.digitableLine)).toMatch(/^\d{11}-\d \d{11}-\d \d{11}-\d \d{11}-\d$/);
    expect(parseBillIdentifier(formatBillLine(tax.digitableLine)).barCode).toBe(tax.barCode);
    expect(formatBillLine(TAX_LINE.slice(3))).toBe(TAX_LINE.slice(3)); // 45 digits: no line, as given
  });

  it('auto follows the dialect; a setting forces either form', () => {
    expect(resultForms(BR)).toEqual({ identifiers: 'masked', dates: 'dayFirst' });
    expect(resultForms(ERP)).toEqual({ identifiers: 'digits', dates: 'iso' });
    expect(resultForms(ERP, { identifiers: 'masked', dates: 'auto' })).toEqual({ identifiers: 'masked', dates: 'iso' });
    expect(resultForms(BR, { identifiers: 'auto', dates: 'iso' })).toEqual({ identifiers: 'masked', dates: 'iso' });
    const sheet = resultForms(BR);
    expect(outputCell('2026-12-20', 'date', sheet)).toBe('20/12/2026');
    // An instant in Brasília time: 03:00 UTC is midnight in São Paulo.
    expect(outputCell('2026-12-20T03:00:00.000Z', 'instant', sheet)).toBe('20/12/2026 00:00:00');
    expect(outputCell('00360305', 'identifier', sheet)).toEqual({ asText: '00360305' });
    expect(outputCell('d9c1-uuid', 'identifier', sheet)).toBe('d9c1-uuid');
    expect(outputCell('2026-12-20', 'date', resultForms(ERP))).toBe('2026-12-20');
  });

  it('="..." is written for remessa`s own text cells only; a formula typed by a person stays neutralised', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-forms-'));
    try {
      const file = path.join(dir, 'r.csv');
      const w = await createResultWriter(file, { dialect: BR, header: ['a', 'b', 'c'] });
      await w.write([{ asText: '0123' }, '=HYPERLINK("http://x")', { asText: 'say "hi"' }]);
      await w.close();
      expect(iconv.decode(await fs.readFile(file), 'windows-1252')).toBe(
        'a;b;c\r\n"=""0123""";"\'=HYPERLINK(""http://x"")";"=""say """"hi"""""""\r\n',
      );
      expect(asTextFormula('')).toBe('');
      // Read back: the text again; any other formula is left for the kind's checks.
      expect(unwrapAsText('="0123"')).toBe('0123');
      expect(unwrapAsText(' ="say ""hi""" ')).toBe('say "hi"');
      expect(unwrapAsText('=1+1')).toBe('=1+1');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('an answer`s columns are found at the end of a header, also as an answer of an answer names them', () => {
    const answer = ['status', 'errorCode', 'errorMessage', 'chargeStatus'];
    expect(answerColumnsStart(['a', 'b'], answer)).toBe(2);
    expect(answerColumnsStart(['a', ...answer], answer)).toBe(1);
    const again = ['a', ...answer, ...answer.map((c) => `${c} (result)`)];
    expect(answerColumnsStart(again, answer)).toBe(1);
    // Only the whole set, at the end: a column of the input named `status` is the input's.
    expect(answerColumnsStart(['status', 'a'], answer)).toBe(2);
    expect(answerColumnsStart(['a', 'errorCode', 'errorMessage', 'chargeStatus'], answer)).toBe(4);
  });
});

let sandbox: RunningSandbox;
let ws: Workspace;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  ws = await makeWorkspace(sandbox.url);
}, 60_000);

afterAll(async () => {
  await sandbox?.close();
  if (ws) await fs.rm(ws.dir, { recursive: true, force: true });
});

async function bankCharge(correlationId: string): Promise<Record<string, string>> {
  const res = await fetch(`${sandbox.url}/v1/charges/${encodeURIComponent(correlationId)}`, {
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, string>;
}

/** `remessa run FILE --kind KIND`; the answer's path, from what it printed. */
async function run(file: string, kind: string): Promise<string> {
  const r = await runCli(['run', '--config', ws.config, '--kind', kind, file], { timeoutMs: 90_000 });
  expect(r.code, r.stdout + r.stderr).toBeLessThanOrEqual(1);
  const m = / -> (\S+\.result\.csv)/.exec(r.stdout);
  expect(m, r.stdout + r.stderr).not.toBeNull();
  return m![1]!;
}

/** A valid CPF starting with 0 (Excel drops it). */
function cpfWithLeadingZero(): string {
  for (let seed = 1; ; seed++) {
    const cpf = cpfFromSeed(seed);
    if (cpf.startsWith('0')) return cpf;
  }
}

describe('a run', () => {
  // Digits, so that the Seu número `000<tag>` is one Excel would strip of its zeros.
  const tag = String(Date.now()).slice(-8);
  const cpf = cpfWithLeadingZero();

  it('a Brazilian sheet: the line as printed; bar code, Nosso número, CEP, CPF as text; dates day first', async () => {
    const sheet = [
      'Nome do pagador;CPF/CNPJ;CEP;Endereço;Número;Bairro;Cidade;UF;Vencimento;Valor (R$);Seu número',
      `Ana Zé;${cpf};01310100;Av Paulista;1000;Bela Vista;São Paulo;SP;15/03/2030;1.234,56;000${tag}`,
      '',
    ].join('\r\n');
    const file = path.join(ws.dir, 'cobrancas.csv');
    await fs.writeFile(file, iconv.encode(sheet, 'windows-1252'));
    const result = await run(file, 'charges');
    const text = iconv.decode(await fs.readFile(result), 'windows-1252');
    const [header, line] = text.split('\r\n');
    expect(header).toBe(
      'Nome do pagador;CPF/CNPJ;CEP;Endereço;Número;Bairro;Cidade;UF;Vencimento;Valor (R$);Seu número;type;' +
        'correlationId;status;errorCode;errorMessage;chargeStatus;ourNumber;barCode;digitableLine;qrCode;pdfFile;' +
        'imageFile',
    );
    const row = parseResultCsv(text)[0]!;
    // The correlationId derived from the Seu número is digits too.
    const correlationId = unwrapAsText(row.correlationId!);
    expect(correlationId).toBe(`000${tag}`);
    const charge = await bankCharge(correlationId);
    expect(charge.barCode).toMatch(/^\d{44}$/);
    expect(charge.ourNumber).toMatch(/^0\d+$/);
    const printed = formatBillLine(bankSlipBarCodeToLine(charge.barCode!));
    expect(printed).toMatch(/^\d{5}\.\d{5} \d{5}\.\d{6} \d{5}\.\d{6} \d \d{14}$/);
    // The exact cells: the input's digits Excel would change as ="...", its other cells as typed; the bank's
    // identifiers as text, the line as printed.
    expect(line).toBe(
      `Ana Zé;"=""${cpf}""";"=""01310100""";Av Paulista;1000;Bela Vista;São Paulo;SP;15/03/2030;1.234,56;` +
        `"=""000${tag}""";BANKSLIP;"=""${correlationId}""";succeeded;;;Pending;"=""${charge.ourNumber}""";` +
        `"=""${charge.barCode}""";${printed};;${row.pdfFile};`,
    );

    // A new due date: the bank's chargeDueDate as the sheet writes dates.
    const updates = path.join(ws.dir, 'vencimentos.csv');
    await fs.writeFile(
      updates,
      iconv.encode(`correlationId;Vencimento\r\n${correlationId};20/12/2030\r\n`, 'windows-1252'),
    );
    const updated = parseResultCsv(await fs.readFile(await run(updates, 'charge-updates')), 'windows-1252')[0]!;
    expect(updated.status).toBe('succeeded');
    expect(updated.chargeDueDate).toBe('20/12/2030');
    expect(updated.digitableLine).toMatch(/^\d{5}\.\d{5} \d{5}\.\d{6} \d{5}\.\d{6} \d \d{14}$/);

    // Dropped again as written: the same values (every row a duplicate of itself, nothing sent).
    const again = path.join(ws.dir, 'de-novo.csv');
    await fs.copyFile(result, again);
    const second = parseResultCsv(await fs.readFile(await run(again, 'charges')), 'windows-1252');
    expect(second.map((r) => r['status (result)'])).toEqual(['duplicate']);
    expect(second[0]!['ourNumber (result)']).toBe(`="${charge.ourNumber}"`);

    // And as Excel saves it (the values shown: `="..."` gone, the line still masked): the same values again.
    const saved = text.replace(/"=""(\d+)"""/g, '$1');
    expect(saved).toContain(`;${cpf};01310100;`);
    const excel = path.join(ws.dir, 'salvo-pelo-excel.csv');
    await fs.writeFile(excel, iconv.encode(saved, 'windows-1252'));
    const third = parseResultCsv(await fs.readFile(await run(excel, 'charges')), 'windows-1252');
    expect(third.map((r) => r['status (result)'])).toEqual(['duplicate']);
  }, 240_000);

  it("an ERP's UTF-8 file: bare digits and ISO dates, as remessa always wrote them", async () => {
    const csv = [
      'type,correlationId,amount,dueDate,yourNumber,payer.name,payer.document,payer.address.zipCode,' +
        'payer.address.publicPlace,payer.address.number,payer.address.neighborhood,payer.address.city,' +
        'payer.address.state',
      `BANKSLIP,ERP-${tag},10.00,2030-03-15,000${tag},Ana,${cpf},01310100,Av Paulista,1000,Bela Vista,Sao Paulo,SP`,
      '',
    ].join('\n');
    const file = path.join(ws.dir, 'erp.csv');
    await fs.writeFile(file, csv);
    const result = await run(file, 'charges');
    const text = await fs.readFile(result, 'utf8');
    const charge = await bankCharge(`ERP-${tag}`);
    expect(text.split('\n')[1]).toBe(
      `BANKSLIP,ERP-${tag},10.00,2030-03-15,000${tag},Ana,${cpf},01310100,Av Paulista,1000,Bela Vista,Sao Paulo,SP,` +
        `succeeded,,,Pending,${charge.ourNumber},${charge.barCode},${charge.digitableLine},,` +
        `${parseResultCsv(text)[0]!.pdfFile},`,
    );
    const updates = path.join(ws.dir, 'erp-updates.csv');
    await fs.writeFile(updates, `correlationId,dueDate\nERP-${tag},2030-12-20\n`);
    const updated = parseResultCsv(await fs.readFile(await run(updates, 'charge-updates')))[0]!;
    expect(updated.chargeDueDate).toBe('2030-12-20');
    expect(updated.digitableLine).toMatch(/^\d{47}$/);
  }, 240_000);
});
