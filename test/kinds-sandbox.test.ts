/**
 * Every kind's steps against the sandbox over real HTTP with the real client (no engine: the steps are driven in
 * order here, the way the engine drives them). Recovery paths are exercised too.
 */
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { type BatchKind, type Dialect, StepOutcomeError, type StepOutput } from '../src/batches/kind.js';
import { KINDS } from '../src/batches/registry.js';
import { parseBrCode } from '../src/formats/brcode.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import {
  type RunningSandbox,
  SANDBOX_ADMIN_PREFIX,
  SANDBOX_PUBLIC_API_KEY,
  startSandbox,
} from '../src/sandbox/server.js';
import type { KindName } from '../src/types.js';
import { decodeQrPng } from './helpers/rendered-pdf.js';

const BR: Dialect = { encoding: 'utf8', bom: false, delimiter: ';', decimalMark: ',' };

let sandbox: RunningSandbox;
let client: BankClient;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-kinds-'));
  sandbox = await startSandbox({ port: 0, dataFile: join(dir, 'sandbox.db') });
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
  await rm(dir, { recursive: true, force: true });
});

function row(kindName: KindName, record: Record<string, string>): unknown {
  const result = (KINDS[kindName] as unknown as BatchKind<unknown>).parse(record, BR);
  if (!result.ok) throw new Error(JSON.stringify(result.errors));
  return result.row;
}

function context(row: unknown, previous: Record<string, StepOutput>, key: string, resend = false) {
  return { row, idempotencyKey: key, client, previous, outputPath: (f: string) => join(dir, f), request: {}, resend };
}

/** Runs every step in order, as the engine would; returns the outputs by step. */
async function runAll(kindName: KindName, record: Record<string, string>, key = randomUUID()) {
  const kind = KINDS[kindName] as unknown as BatchKind<unknown>;
  const parsed = row(kindName, record);
  const previous: Record<string, StepOutput> = {};
  for (const step of kind.steps) previous[step.name] = await step.run(context(parsed, previous, key));
  return { parsed, previous, key };
}

const SLIP = {
  type: 'BANKSLIP',
  amount: '1.234,56',
  dueDate: '15/12/2030',
  'payer.name': 'Maria da Silva',
  'payer.document': '123.456.789-09',
  'payer.address.zipCode': '01310-100',
  'payer.address.publicPlace': 'Avenida Paulista',
  'payer.address.city': 'São Paulo',
  'payer.address.state': 'SP',
};

describe('charges', () => {
  it('creates a bank slip and saves its PDF; recover finds it, and says absent for an unknown one', async () => {
    const id = `INV-${randomUUID().slice(0, 8)}`;
    const { previous, parsed, key } = await runAll('charges', { ...SLIP, correlationId: id });
    expect(previous.create).toMatchObject({ chargeStatus: 'Pending' });
    expect(previous.create!.barCode).toMatch(/^\d{44}$/);
    expect(previous.create!.digitableLine).toMatch(/^\d{47}$/);
    expect(previous.pdf).toEqual({ pdfFile: `${id}.pdf`, imageFile: null });
    expect((await readFile(join(dir, `${id}.pdf`))).subarray(0, 5).toString()).toBe('%PDF-');
    const create = KINDS.charges.steps[0]!;
    expect(await create.recover!(context(parsed, {}, key) as never)).toMatchObject({
      barCode: previous.create!.barCode,
    });
    const unknown = row('charges', { ...SLIP, correlationId: `NEVER-${randomUUID().slice(0, 8)}` });
    expect(await create.recover!(context(unknown, {}, key) as never)).toBeUndefined();
  });

  it('creates a PIX_STATIC charge: a qrCode, its QR image as a PNG (as qr-codes rows get), no PDF', async () => {
    const id = `P-${randomUUID().slice(0, 8)}`;
    const { previous } = await runAll('charges', { type: 'PIX_STATIC', correlationId: id, amount: '10,00' });
    expect(previous.create!.qrCode).toMatch(/^000201/);
    expect(previous.pdf).toEqual({ pdfFile: null, imageFile: `${id}.png` });
    expect(decodeQrPng(await readFile(join(dir, `${id}.png`)))).toBe(previous.create!.qrCode);
  });

  it('PIX_DYNAMIC and BANKSLIP_PIX charges get their QR image too; a BANKSLIP_PIX also its PDF', async () => {
    const dynamic = `D-${randomUUID().slice(0, 8)}`;
    const d = await runAll('charges', { type: 'PIX_DYNAMIC', correlationId: dynamic, amount: '25,50' });
    expect(d.previous.pdf).toEqual({ pdfFile: null, imageFile: `${dynamic}.png` });
    expect(decodeQrPng(await readFile(join(dir, `${dynamic}.png`)))).toBe(d.previous.create!.qrCode);

    const hybrid = `H-${randomUUID().slice(0, 8)}`;
    const h = await runAll('charges', { ...SLIP, type: 'BANKSLIP_PIX', correlationId: hybrid });
    expect(h.previous.pdf).toEqual({ pdfFile: `${hybrid}.pdf`, imageFile: `${hybrid}.png` });
    expect(h.previous.create!.qrCode).toMatch(/^000201/);
    expect(decodeQrPng(await readFile(join(dir, `${hybrid}.png`)))).toBe(h.previous.create!.qrCode);
    expect((await readFile(join(dir, `${hybrid}.pdf`))).subarray(0, 5).toString()).toBe('%PDF-');
    // Written again (a resumed row), the image keeps its name and content.
    const again = await KINDS.charges.steps[1]!.run(context(h.parsed, h.previous, h.key) as never);
    expect(again).toEqual(h.previous.pdf);
    expect(decodeQrPng(await readFile(join(dir, `${hybrid}.png`)))).toBe(h.previous.create!.qrCode);
  });

  it('a slip with Pix whose amount changes: the update answers the new Pix code too, not only the bar code', async () => {
    const id = `UPDPIX-${randomUUID().slice(0, 8)}`;
    const created = await runAll('charges', { ...SLIP, type: 'BANKSLIP_PIX', correlationId: id });
    const updated = await runAll('charge-updates', { correlationId: id, amount: '1.500,00' });
    const qrCode = updated.previous.confirm!.qrCode;
    // Before: no qrCode column; the person had only the first code, which still asks the payer for R$ 1.234,56.
    expect(typeof qrCode).toBe('string');
    expect(qrCode).not.toBe(created.previous.create!.qrCode);
    expect(parseBrCode(qrCode as string).amountCents).toBe(150_000);
    expect(KINDS['charge-updates'].resultColumns).toContain('qrCode');
  });

  it('updates the due date (the bar code follows) and voids; void recovery sees Voided', async () => {
    const id = `UPD-${randomUUID().slice(0, 8)}`;
    const created = await runAll('charges', { ...SLIP, correlationId: id });
    const updated = await runAll('charge-updates', { correlationId: id, dueDate: '20/12/2030' });
    expect(updated.previous.confirm).toMatchObject({ chargeDueDate: '2030-12-20' });
    expect(updated.previous.confirm!.barCode).not.toBe(created.previous.create!.barCode);
    // PATCH recovery re-sends the same values: same state.
    const patch = KINDS['charge-updates'].steps[0]!;
    await patch.recover!(context(updated.parsed, {}, updated.key) as never);
    const voided = await runAll('charge-voids', { correlationId: id });
    // The bank's time of the void is kept for the retorno (src/runner/retorno.ts), by the step and by its recovery.
    expect(voided.previous.void).toEqual({ chargeStatus: 'Voided', voidedAt: expect.stringMatching(/^\d{4}-.*Z$/) });
    const voidStep = KINDS['charge-voids'].steps[0]!;
    expect(await voidStep.recover!(context(voided.parsed, {}, voided.key) as never)).toEqual({
      chargeStatus: 'Voided',
      voidedAt: voided.previous.void!.voidedAt,
    });
  });
});

describe('bill-payments', () => {
  it('looks up and pays a payable bill', async () => {
    const fixture = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT;
    const lookup = await client.billPayments.lookup(fixture.digitableLine);
    const amount = (lookup.chargedAmountCents / 100).toFixed(2).replace('.', ',');
    const { previous } = await runAll('bill-payments', { digitableLine: fixture.digitableLine, amount });
    expect(previous.lookup).toMatchObject({ billStatus: 'PENDING_PAYMENT' });
    expect(previous.pay!.paymentId).toBeTruthy();
    expect(previous.pay!.paidAmount).toBe(lookup.chargedAmountCents);
  });

  it('a bill that is not payable fails the lookup step with a typed, final outcome', async () => {
    const fixture = SANDBOX_BILL_FIXTURES.BLOCKED_PAYMENT;
    const err = await runAll('bill-payments', { barCode: fixture.barCode, amount: '50,00' }).catch((e) => e);
    expect(err).toBeInstanceOf(StepOutcomeError);
    expect(err).toMatchObject({ outcome: 'failed', code: 'BANK_BILL_NOT_PAYABLE' });
  });

  it('a wrong amount fails before anything is paid', async () => {
    const fixture = SANDBOX_BILL_FIXTURES.DISCOUNT;
    const err = await runAll('bill-payments', { barCode: fixture.barCode, amount: '1,00' }).catch((e) => e);
    expect(err).toMatchObject({ outcome: 'failed', code: 'BANK_AMOUNT_OUT_OF_RANGE' });
  });

  // Regression: a resend used to look the bill up, see PAID and give the row up as uncertain. The first attempt is
  // what paid it; the same key must be resent so the bank answers with that first payment.
  it('a resend of the payment that finds the bill already paid gets the first payment back, never pays twice', async () => {
    const id = `BP-${randomUUID().slice(0, 8)}`;
    const charge = await runAll('charges', { ...SLIP, correlationId: id, amount: '12,34' });
    const record = { barCode: String(charge.previous.create!.barCode), amount: '12,34' };
    const paid = await runAll('bill-payments', record);
    expect(paid.previous.pay!.paymentStatus).toBe('PAID');
    const pay = KINDS['bill-payments'].steps[1]!;
    // In the same process the resend reuses the bill of the first attempt: no new lookup (one request less to fail).
    const lookups = vi.spyOn(client.billPayments, 'lookup');
    const again = await pay.run(context(paid.parsed, paid.previous, paid.key, true) as never);
    expect(again.paymentId).toBe(paid.previous.pay!.paymentId);
    expect(lookups).not.toHaveBeenCalled();
    // After a restart (a fresh row object, nothing cached) it looks the bill up, then resends with the same key.
    const afterRestart = await pay.run(context(row('bill-payments', record), paid.previous, paid.key, true) as never);
    expect(afterRestart.paymentId).toBe(paid.previous.pay!.paymentId);
    expect(lookups).toHaveBeenCalledTimes(1);
    lookups.mockRestore();
    expect(sandbox.ctx.ledger.count('bill_paid', paid.key)).toBe(1);
  });

  it('a fresh payment (not a resend) of a bill already paid fails, and nothing is sent', async () => {
    const id = `BP-${randomUUID().slice(0, 8)}`;
    const charge = await runAll('charges', { ...SLIP, correlationId: id, amount: '12,34' });
    const record = { barCode: String(charge.previous.create!.barCode), amount: '12,34' };
    const paid = await runAll('bill-payments', record);
    const pay = KINDS['bill-payments'].steps[1]!;
    const err = await pay.run(context(paid.parsed, paid.previous, paid.key, false) as never).catch((e) => e);
    expect(err).toMatchObject({ outcome: 'failed', code: 'BANK_BILL_NOT_PAYABLE' });
    expect(sandbox.ctx.ledger.count('bill_paid', paid.key)).toBe(1);
  });
});

describe('qr-codes and pix-payments', () => {
  it('creates a dynamic QR code with its PNG, then pays it', async () => {
    const id = randomUUID();
    const qr = await runAll('qr-codes', {
      type: 'PIX_DYNAMIC',
      correlationId: id,
      amount: '25,00',
      formatResponse: 'PAYLOAD_AND_QRCODE',
    });
    expect(qr.previous.create!.imageFile).toBe(`${id}.png`);
    const png = await readFile(join(dir, `${id}.png`));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    // Recovery of a keyless dynamic creation: found by correlationId (image too); an unknown id is certainly absent.
    const create = KINDS['qr-codes'].steps[0]!;
    expect(await create.recover!(context(qr.parsed, {}, qr.key) as never)).toEqual(qr.previous.create);
    const never = row('qr-codes', { type: 'PIX_DYNAMIC', correlationId: randomUUID(), amount: '1,00' });
    expect(await create.recover!(context(never, {}, qr.key) as never)).toBeUndefined();
    const payment = await runAll('pix-payments', {
      payload: String(qr.previous.create!.qrCodePayload),
      amount: '25,00',
    });
    expect(payment.previous.initialize!.endToEndId).toMatch(/^E\d{8}/);
    expect(payment.previous.pay).toMatchObject({ paidAmount: 2500 });
    expect(payment.previous.pay!.paymentId).toBeTruthy();
  });

  it('creates a static QR code (keyed: a resend replays it); a wrong amount for it is refused before sending', async () => {
    const id = `S-${randomUUID().slice(0, 8)}`;
    const record = { type: 'PIX_STATIC', correlationId: id, amount: '7,50', formatResponse: 'PAYLOAD_AND_QRCODE' };
    const first = await runAll('qr-codes', record);
    const create = KINDS['qr-codes'].steps[0]!;
    const again = await create.recover!(context(first.parsed, {}, first.key) as never);
    expect(again).toEqual(first.previous.create);
    const err = await runAll('pix-payments', {
      payload: String(first.previous.create!.qrCodePayload),
      amount: '8,00',
    }).catch((e) => e);
    // The code fixes its amount: the row is invalid (validate says so too), nothing is sent.
    expect(String(err)).toContain('AMOUNT_MISMATCH');
  });
});

describe('claims and claim-cancellations', () => {
  it('starts a claim and cancels it', async () => {
    const started = await runAll('claims', {
      type: 'EMAIL',
      key: `maria.${randomUUID().slice(0, 8)}@example.com`,
      'account.number': '123456-7',
      'account.branch': '0001',
      'account.type': 'CURRENT',
      'account.holder.document': '123.456.789-09',
      'account.holder.name': 'Maria da Silva',
      'account.holder.type': 'NATURAL',
    });
    const claimId = String(started.previous.start!.claimId);
    expect(claimId).toMatch(/^[0-9a-f-]{36}$/i);
    // A claim can be cancelled once it awaits resolution: move it there through the sandbox's admin route.
    const moved = await sandbox.app.inject({
      method: 'PATCH',
      url: `${SANDBOX_ADMIN_PREFIX}/claims/${claimId}`,
      headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
      payload: { status: 'AWAITING_RESOLUTION' },
    });
    expect(moved.statusCode).toBe(200);
    const cancelled = await runAll('claim-cancellations', {
      claimId: String(started.previous.start!.claimId),
      participationFlowType: 'CLAIMANT',
      reason: 'USER_REQUESTED',
    });
    expect(cancelled.previous.cancel).toMatchObject({ claimStatus: 'CANCELED' });
  });
});
