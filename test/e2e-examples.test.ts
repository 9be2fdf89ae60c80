/**
 * End to end: the daemon as a real child process against the sandbox in another process.
 * Every sample of examples/ goes through the inbox; the result CSVs, PDFs and PNGs are checked; dropping a file again
 * or a row in a second file sends nothing more (the sandbox's effects ledger proves it); invalid files and invalid
 * rows of every kind get their one answer; ERP headers work through the configured mapping.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import jsQRModule from 'jsqr';
import { PDFParse } from 'pdf-parse';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bankSlipBarCodeToLine, buildBankSlipBarCode } from '../src/formats/index.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { KIND_NAMES } from '../src/types.js';
import {
  answersOf,
  drop,
  E2E_PROFILES,
  EXAMPLES,
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

// jsqr is CommonJS typed as `export default`: under NodeNext the default import is the module itself at run time.
const jsQR = ((jsQRModule as unknown as { default?: typeof jsQRModule }).default ?? jsQRModule) as unknown as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;

const ERP_MAPPING = {
  TIPO: 'type',
  PEDIDO: 'correlationId',
  VALOR: 'amount',
  VENCIMENTO: 'dueDate',
  CLIENTE: 'payer.name',
  CPF_CNPJ: 'payer.document',
  CEP: 'payer.address.zipCode',
  LOGRADOURO: 'payer.address.publicPlace',
  CIDADE: 'payer.address.city',
  UF: 'payer.address.state',
};

describe.each(E2E_PROFILES)('provider profile %s', (profile) => {
  let sandbox: SandboxProcess;
  let ws: Workspace;
  let daemon: Proc;

  async function totalEffects(): Promise<number> {
    return (await sandbox.effects()).reduce((n, e) => n + e.count, 0);
  }

  async function result(kind: string, stem: string, encoding: 'utf8' | 'windows-1252' = 'utf8') {
    const answer = await waitForAnswer(ws, kind, stem).catch((err: Error) => {
      throw new Error(`${err.message}\ndaemon exit ${daemon.child.exitCode}, stderr:\n${daemon.stderr().slice(-4000)}`);
    });
    expect(answer.type, `${kind}/${stem}: ${answer.text}`).toBe('result');
    return parseResultCsv(await fs.readFile(answer.file), encoding);
  }

  function expectAll(rows: Array<Record<string, string>>, status: string): void {
    for (const r of rows) expect(r.status, JSON.stringify(r)).toBe(status);
  }

  beforeAll(async () => {
    const dir = await fs.mkdtemp(path.join((await import('node:os')).tmpdir(), 'remessa-e2e-sb-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), profile);
    ws = await makeWorkspace(sandbox.url, { mappings: { charges: ERP_MAPPING }, bank: { profile } });
    daemon = startDaemon(ws);
  }, 60_000);

  afterAll(async () => {
    if (daemon) await stopDaemon(daemon);
    if (sandbox) await sandbox.stop();
  });

  describe('examples through the daemon', () => {
    it('charges: slips with PDFs that carry their digitable line, Pix charges with their BR Codes', async () => {
      await drop(ws, path.join(EXAMPLES, 'charges.csv'), 'charges/charges.csv');
      const rows = await result('charges', 'charges');
      expect(rows.map((r) => r.correlationId)).toEqual([
        'EX-CHG-0001',
        'EX-CHG-0002',
        'EX-CHG-0003',
        'EX-CHG-0004',
        'EX-CHG-0005',
      ]);
      expectAll(rows, 'succeeded');
      // Express charge keeps its our number; slips have a 44-digit bar code and 47-digit line.
      expect(rows[1]!.ourNumber).toBe('12345678901');
      for (const r of rows.slice(0, 3)) {
        expect(r.barCode).toMatch(/^\d{44}$/);
        expect(r.digitableLine).toMatch(/^\d{47}$/);
        expect(r.pdfFile).toBe(`${r.correlationId}.pdf`);
        const pdf = await fs.readFile(
          path.join(ws.outbox, 'charges', (await answersOf(ws, 'charges', 'charges'))[0]!.base, r.pdfFile!),
        );
        expect(pdf.subarray(0, 4).toString('latin1')).toBe('%PDF');
        const parser = new PDFParse({ data: new Uint8Array(pdf) });
        try {
          const text = (await parser.getText()).text;
          expect(text.replace(/\D/g, '')).toContain(r.digitableLine);
        } finally {
          await parser.destroy();
        }
      }
      for (const r of rows.slice(2)) expect(r.qrCode).toMatch(/^000201.*6304[0-9A-F]{4}$/);
      // Pix charges and the BANKSLIP_PIX get their QR image next to the PDFs, as qr-codes rows do; plain slips none.
      for (const r of rows.slice(0, 2)) expect(r.imageFile).toBe('');
      for (const r of rows.slice(2)) {
        expect(r.imageFile).toBe(`${r.correlationId}.png`);
        const chargesBase = (await answersOf(ws, 'charges', 'charges'))[0]!.base;
        const png = PNG.sync.read(await fs.readFile(path.join(ws.outbox, 'charges', chargesBase, r.imageFile!)));
        expect(jsQR(new Uint8ClampedArray(png.data), png.width, png.height)?.data).toBe(r.qrCode);
      }
      const summary = JSON.parse(
        await fs.readFile((await answersOf(ws, 'charges', 'charges'))[0]!.summaries[0]!, 'utf8'),
      );
      expect(summary.counts.succeeded).toBe(5);
      // The original is archived, the inbox folder is empty again.
      expect(await fs.readdir(path.join(ws.inbox, 'charges'))).toEqual([]);
      const base = (await answersOf(ws, 'charges', 'charges'))[0]!.base;
      expect(await fs.readdir(path.join(ws.archive, 'charges'))).toContain(`${base}.csv`);
    });

    it('charge updates and voids act on the charges created above', async () => {
      await drop(ws, path.join(EXAMPLES, 'charge-updates.csv'), 'charge-updates/charge-updates.csv');
      await drop(ws, path.join(EXAMPLES, 'charge-voids.csv'), 'charge-voids/charge-voids.csv');
      const updates = await result('charge-updates', 'charge-updates');
      expectAll(updates, 'succeeded');
      expect(updates[0]!.dueDate).toBe('2027-04-15');
      const voids = await result('charge-voids', 'charge-voids');
      expectAll(voids, 'succeeded');
    });

    it('bill payments of the sandbox fixture bills are paid once each', async () => {
      await drop(ws, path.join(EXAMPLES, 'bill-payments.csv'), 'bill-payments/bill-payments.csv');
      const rows = await result('bill-payments', 'bill-payments');
      expectAll(rows, 'succeeded');
      expect(rows.map((r) => r.paidAmount)).toEqual(['150.00', '250.00', '490.00', '89.90']);
      for (const r of rows) expect(r.paymentId).not.toBe('');
      const paid = await sandbox.effects('bill_paid');
      expect(paid).toHaveLength(4);
      for (const e of paid) expect(e.count).toBe(1);
      expect(rows[3]!.billType).toBe('TAXES');
      expect(SANDBOX_BILL_FIXTURES.TAXES.digitableLine).toBe(rows[3]!.digitableLine);
    });

    it('pix payments of static QR codes', async () => {
      await drop(ws, path.join(EXAMPLES, 'pix-payments.csv'), 'pix-payments/pix-payments.csv');
      const rows = await result('pix-payments', 'pix-payments');
      expectAll(rows, 'succeeded');
      for (const r of rows) expect(r.endToEndId).toMatch(/^E\d{8}\d{12}[A-Za-z0-9]{11}$/);
    });

    it('qr codes with PNG images that decode to their payload', async () => {
      await drop(ws, path.join(EXAMPLES, 'qr-codes.csv'), 'qr-codes/qr-codes.csv');
      const rows = await result('qr-codes', 'qr-codes');
      expectAll(rows, 'succeeded');
      for (const r of rows) {
        expect(r.imageFile).not.toBe('');
        const base = (await answersOf(ws, 'qr-codes', 'qr-codes'))[0]!.base;
        const png = PNG.sync.read(await fs.readFile(path.join(ws.outbox, 'qr-codes', base, r.imageFile!)));
        const decoded = jsQR(new Uint8ClampedArray(png.data), png.width, png.height);
        expect(decoded?.data).toBe(r.qrCodePayload);
      }
    });

    it('claims, then cancellations of the claims they started', async () => {
      await drop(ws, path.join(EXAMPLES, 'claims.csv'), 'claims/claims.csv');
      const claims = await result('claims', 'claims');
      expectAll(claims, 'succeeded');
      const ids = claims.map((c) => c.claimId!);
      for (const id of ids) expect(id).toMatch(/^[0-9a-f-]{36}$/);
      // The DICT flow cancels from AWAITING_RESOLUTION: the other participant's answer, played by the admin route.
      for (const id of ids) await sandbox.admin('PATCH', `/claims/${id}`, { status: 'AWAITING_RESOLUTION' });
      const csv = `claimId,participationFlowType,reason\n${ids.map((id) => `${id},CLAIMANT,USER_REQUESTED`).join('\n')}\n`;
      await drop(ws, Buffer.from(csv), 'claim-cancellations/cancel.csv');
      const cancelled = await result('claim-cancellations', 'cancel');
      expectAll(cancelled, 'succeeded');
      for (const c of cancelled) expect(c.claimStatus).toBe('CANCELED');
      expect(await sandbox.effects('claim_cancelled')).toHaveLength(3);

      // The sample itself cancels the sandbox's open fixture claims.
      await drop(ws, path.join(EXAMPLES, 'claim-cancellations.csv'), 'claim-cancellations/claim-cancellations.csv');
      const sample = await result('claim-cancellations', 'claim-cancellations');
      expectAll(sample, 'succeeded');
      expect(sample.map((c) => c.claimStatus)).toEqual(['CANCELED', 'CANCELED']);
    });

    it('the Brazilian spreadsheet sample: Windows-1252, ";", decimal comma, dd/mm/yyyy; answered in kind', async () => {
      await drop(ws, path.join(EXAMPLES, 'charges-planilha-br.csv'), 'charges-planilha-br.csv');
      const answer = await waitForAnswer(ws, 'charges', 'charges-planilha-br');
      const bytes = await fs.readFile(answer.file);
      // Same encoding and delimiter as the input: "José Conceição" in Windows-1252 bytes, decimal comma kept.
      expect(bytes.includes(Buffer.from('Jos\xe9 Concei\xe7\xe3o', 'latin1'))).toBe(true);
      const rows = parseResultCsv(bytes, 'windows-1252');
      expectAll(rows, 'succeeded');
      expect(rows[0]!.amount).toBe('1.234,56');
      expect(rows[0]!['payer.name']).toBe('José Conceição Araújo');
      expect(rows[3]!.description).toBe('Doação – campanha “Inverno”');
    });

    it('ERP headers work through the configured mapping', async () => {
      const csv =
        'TIPO;PEDIDO;VALOR;VENCIMENTO;CLIENTE;CPF_CNPJ;CEP;LOGRADOURO;CIDADE;UF\r\n' +
        'BANKSLIP;ERP-0001;2.345,67;30/06/2027;Carlos Mendes;390.533.447-05;01001-000;Praça da Sé;São Paulo;SP\r\n';
      await drop(ws, Buffer.from(csv, 'utf8'), 'charges/erp-export.csv');
      const rows = await result('charges', 'erp-export');
      expectAll(rows, 'succeeded');
      expect(rows[0]!.PEDIDO).toBe('ERP-0001');
      // `;` and a decimal comma: a spreadsheet's dialect, answered with the line as printed (README).
      expect(rows[0]!.digitableLine).toMatch(/^\d{5}\.\d{5} \d{5}\.\d{6} \d{5}\.\d{6} \d \d{14}$/);
    });
  });

  describe('nothing twice', () => {
    it('the same file dropped again, and the same rows in another file, make no request that acts', async () => {
      const before = await totalEffects();
      // Same name, same bytes: its own answer beside the first one, which stays as it was.
      const [first] = await answersOf(ws, 'bill-payments', 'bill-payments');
      const firstText = await fs.readFile(first!.results[0]!, 'utf8');
      await drop(ws, path.join(EXAMPLES, 'bill-payments.csv'), 'bill-payments/bill-payments.csv');
      await waitFor(
        'the second answer',
        async () => (await answersOf(ws, 'bill-payments', 'bill-payments')).length === 2,
      );
      const again = await result('bill-payments', 'bill-payments');
      expect(again.map((r) => r.status)).toEqual(['duplicate', 'duplicate', 'duplicate', 'duplicate']);
      expect(await fs.readFile(first!.results[0]!, 'utf8')).toBe(firstText);
      expect(again).toHaveLength(4);
      for (const r of again) expect(['succeeded', 'duplicate']).toContain(r.status);
      // A duplicate paid nothing: its paidAmount is empty (summed in Excel, each bill counts once); its payment is the
      // original's, named by id.
      expect(again.map((r) => r.paidAmount)).toEqual(['', '', '', '']);
      const paidFirst = parseResultCsv(firstText).map((r) => r.paymentId);
      expect(paidFirst.every((id) => id !== '')).toBe(true);
      expect(again.map((r) => r.paymentId)).toEqual(paidFirst);

      // Two rows of charges.csv in a new file, with one new row: only the new row acts.
      const lines = (await fs.readFile(path.join(EXAMPLES, 'charges.csv'), 'utf8')).split('\n');
      const fresh = lines[1]!.replace('EX-CHG-0001', 'EX-CHG-0101');
      await drop(ws, Buffer.from([lines[0], lines[1], lines[2], fresh, ''].join('\n')), 'charges-again.csv');
      const rows = await result('charges', 'charges-again');
      expect(rows.map((r) => r.status)).toEqual(['duplicate', 'duplicate', 'succeeded']);
      // A duplicate repeats the original outcome.
      expect(rows[0]!.digitableLine).toMatch(/^\d{47}$/);
      expect(await totalEffects()).toBe(before + 1);
      for (const e of await sandbox.effects()) expect(e.count, `${e.kind} ${e.key}`).toBe(1);
    });
  });

  describe('invalid input gets one answer each', () => {
    it('whole files: unknown kind, empty, not text, missing columns', async () => {
      await drop(ws, Buffer.from('a,b\n1,2\n'), 'payroll.csv');
      await drop(ws, Buffer.alloc(0), 'charges/empty.csv');
      await drop(
        ws,
        Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0xff, 0xfe, 0, 1, 2, 3]),
        'bill-payments/image.csv',
      );
      await drop(ws, Buffer.from('type,key,account.number\nEMAIL,a@b.com,1\n'), 'claims/missing.csv');
      const unknown = await waitForAnswer(ws, '_unknown', 'payroll');
      expect(unknown.type).toBe('rejected');
      expect(unknown.text).toMatch(/UNKNOWN_KIND/);
      expect(unknown.text).toMatch(/payroll\.csv/);
      const empty = await waitForAnswer(ws, 'charges', 'empty');
      expect(empty.type).toBe('rejected');
      expect(empty.text).toMatch(/FILE_EMPTY/);
      const binary = await waitForAnswer(ws, 'bill-payments', 'image');
      expect(binary.type).toBe('rejected');
      expect(binary.text).toMatch(/FILE_NOT_TEXT|FILE_ENCODING/);
      const missing = await waitForAnswer(ws, 'claims', 'missing');
      expect(missing.type).toBe('rejected');
      expect(missing.text).toMatch(/HEADER_MISSING_COLUMN/);
      expect(missing.text).toMatch(/account\.branch/);
      expect(missing.text).toMatch(/missing\.csv linha 1: \d+ problemas no cabeçalho/);
    });

    it('a header without the required columns, for every kind', async () => {
      const kinds = KIND_NAMES;
      for (const kind of kinds) {
        await drop(ws, Buffer.from('idempotencyKey\n9b2f8a3e-1c4d-4e5f-8a6b-7c8d9e0f1a2b\n'), `${kind}/nocolumns.csv`);
      }
      for (const kind of kinds) {
        const answer = await waitForAnswer(ws, kind, 'nocolumns');
        expect(answer.type, kind).toBe('rejected');
        expect(answer.text, kind).toMatch(/HEADER_MISSING_COLUMN/);
        expect(answer.text, kind).toMatch(/nocolumns\.csv linha 1/);
      }
    });

    it('rows of every kind: each error names its column; money kinds send nothing when a row is invalid', async () => {
      const before = await sandbox.effects();
      const fx = SANDBOX_BILL_FIXTURES;
      // A payable bill never paid before, so only the policy can stop it.
      const freshLine = bankSlipBarCodeToLine(
        buildBankSlipBarCode({
          bankCode: '341',
          dueDate: '2030-01-10',
          amountCents: 1000,
          freeField: '1090000123456789000007777',
        }),
      );
      const files: Record<string, string> = {
        charges: `type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state\nBANKSLIP,BAD-CPF-1,10.00,2027-05-01,Ana,123.456.789-00,01310-100,Rua A,São Paulo,SP\n`,
        'charge-updates': 'correlationId,dueDate\nEX-CHG-0001,31/02/2027\n',
        'charge-voids': 'correlationId\nbad id with spaces\n',
        'bill-payments': `digitableLine,amount\n${fx.PENDING_PAYMENT.digitableLine.slice(0, -1)}1,150.00\n${freshLine},10.00\n`,
        'pix-payments':
          'payload,amount\n00020126360014br.gov.bcb.pix0114+5511987654321520400005303986540545.505802BR5918Padaria Pao Quente6008Campinas62100506NF45506304FFFF,45.50\n',
        'qr-codes': 'type,correlationId,amount\nPIX_DYNAMIC,not-a-guid,10.00\n',
        claims:
          'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type\nEMAIL,x@example.com,1,0001,CHECKING,123.456.789-09,X,NATURAL\n',
        'claim-cancellations': 'claimId,participationFlowType,reason\n123,CLAIMANT,USER_REQUESTED\n',
      };
      const expectedColumn: Record<string, string> = {
        charges: 'payer.document',
        'charge-updates': 'dueDate',
        'charge-voids': 'correlationId',
        'bill-payments': 'digitableLine',
        'pix-payments': 'payload',
        'qr-codes': 'correlationId',
        claims: 'account.type',
        'claim-cancellations': 'claimId',
      };
      for (const [kind, text] of Object.entries(files)) await drop(ws, Buffer.from(text), `${kind}/invalid.csv`);
      for (const kind of Object.keys(files)) {
        const rows = await result(kind, 'invalid');
        expect(rows[0]!.status, `${kind}: ${JSON.stringify(rows[0])}`).toBe('rejected');
        expect(rows[0]!.errorMessage, kind).toContain(expectedColumn[kind]!);
      }
      // All-or-nothing: the valid bill of the invalid bill-payments file was not paid either.
      const bills = await result('bill-payments', 'invalid');
      expect(bills[1]!.status).toBe('rejected');
      expect(bills[1]!.errorCode).toBe('BATCH_HAS_INVALID_ROWS');
      expect(await sandbox.effects()).toEqual(before);
    });
  });

  describe('commands beside the daemon', () => {
    it('status lists the batches and rows by status', async () => {
      const { code, stdout } = await runCli(['status', '--config', ws.config, '--locale', 'en']);
      expect(code).toBe(0);
      expect(stdout).toMatch(/Batches: \d+/);
      expect(stdout).toMatch(/bill-payments\s+bill-payments\.csv/);
      expect(stdout).toMatch(/Rows: .*succeeded \d+/);
      expect(stdout).toMatch(/Uncertain rows: 0/);
    });

    it('the daemon stops on SIGTERM with exit code 0', async () => {
      expect(await stopDaemon(daemon), daemon.stderr().slice(-4000)).toBe(0);
      expect(daemon.stderr()).toMatch(/remessa daemon stopped/);
    });
  });
});
