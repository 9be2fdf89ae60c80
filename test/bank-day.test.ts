/**
 * "Today" for the bank's date limits is the day in Brasília, on both sides: the day a finance team in Brazil lives by
 * and a Brazilian bank's clock reads. A clerk who dropped a file at 22:30 with that day's payment date, or a charge due
 * that day, was refused ("a partir de hoje (30/11/2026)"): remessa and the sandbox counted days in UTC, which is
 * already the next day from 21:00 in Brasília.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BillPaymentRow } from '../src/batches/bill-payments.js';
import type { ChargeRow } from '../src/batches/charges.js';
import type { BatchKind, Dialect } from '../src/batches/kind.js';
import { KINDS } from '../src/batches/registry.js';
import { brasiliaMidnight } from '../src/formats/brasilia-time.js';
import { render } from '../src/i18n/index.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { PAYER_ADDRESS, PUBLIC_KEY_JSON_HEADERS, rawRequest, sandboxPerTest } from './helpers/sandbox.js';

const BR: Dialect = { encoding: 'windows-1252', bom: false, delimiter: ';', decimalMark: ',' };
const BAR = '43594939800000003250001112000000200000311672';
const billPayments = KINDS['bill-payments'] as unknown as BatchKind<BillPaymentRow>;
const charges = KINDS.charges as unknown as BatchKind<ChargeRow>;
const SLIP: Record<string, string> = {
  type: 'BANKSLIP',
  correlationId: 'INV-1',
  amount: '1.234,56',
  'payer.name': 'Maria da Silva',
  'payer.document': '123.456.789-09',
  'payer.address.zipCode': '01310-100',
  'payer.address.publicPlace': 'Avenida Paulista',
  'payer.address.city': 'São Paulo',
  'payer.address.state': 'sp',
};

describe("remessa's parse: the bank's today is Brasília's", () => {
  afterEach(() => {
    vi.useRealTimers();
  });
  const at = (iso: string) => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date(iso));
  };

  it('accepts the payment date and the due date of the Brasília day still running at 22:30 (01:30 UTC next day)', () => {
    at('2026-11-30T01:30:00Z'); // 29/11/2026 22:30 in Brasília
    const bill = billPayments.parse({ amount: '3,25', barCode: BAR, payAt: '29/11/2026' }, BR);
    expect(bill.ok ? bill.row.payAt : bill.errors).toBe('2026-11-29T00:00:00');
    const charge = charges.parse({ ...SLIP, dueDate: '29/11/2026' }, BR);
    expect(charge.ok ? (charge.row.input as { dueDate?: string }).dueDate : charge.errors).toBe('2026-11-29');
  });

  it('refuses the day before, saying the Brasília day as today', () => {
    at('2026-11-30T01:30:00Z');
    const bill = billPayments.parse({ amount: '3,25', barCode: BAR, payAt: '28/11/2026' }, BR);
    expect(bill.ok).toBe(false);
    if (bill.ok) return;
    expect(bill.errors.map((e) => e.code)).toEqual(['DATE_OUT_OF_RANGE']);
    expect(render('pt-BR', bill.errors[0]!.message)).toContain('29/11/2026');
    expect(charges.parse({ ...SLIP, dueDate: '28/11/2026' }, BR).ok).toBe(false);
  });

  it('turns the day at midnight in Brasília (03:00 UTC), not at midnight UTC', () => {
    at('2026-11-30T02:59:59Z'); // 29/11 23:59:59 in Brasília
    expect(billPayments.parse({ amount: '3,25', barCode: BAR, payAt: '29/11/2026' }, BR).ok).toBe(true);
    expect(charges.parse({ ...SLIP, dueDate: '29/11/2026' }, BR).ok).toBe(true);
    at('2026-11-30T03:00:00Z'); // 30/11 00:00 in Brasília
    expect(billPayments.parse({ amount: '3,25', barCode: BAR, payAt: '29/11/2026' }, BR).ok).toBe(false);
    expect(charges.parse({ ...SLIP, dueDate: '29/11/2026' }, BR).ok).toBe(false);
  });

  it("knows Brasília's midnight as an instant", () => {
    expect(new Date(brasiliaMidnight('2026-11-29')).toISOString()).toBe('2026-11-29T03:00:00.000Z');
  });
});

describe("the sandbox: the bank's today is Brasília's", () => {
  const sandboxes = sandboxPerTest({ client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
  let sandbox: RunningSandbox;
  let now: Date;
  beforeEach(async () => {
    now = new Date('2026-11-23T01:30:00.000Z'); // 22/11/2026 22:30 in Brasília
    ({ sandbox } = await sandboxes.setup({ now: () => now }));
  });
  const pay = (body: unknown) =>
    rawRequest(sandbox, 'POST', '/baas/api/v1/bill-payments', body, {
      ...PUBLIC_KEY_JSON_HEADERS,
      IdempotencyKey: randomUUID(),
    });

  it('pays a bill whose payAt is the Brasília day still running, at once', async () => {
    const res = await pay({ amount: 150, barCode: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode, payAt: '2026-11-22' });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('PAID');
  });

  it('reads a payAt without zone in Brasília time, as a Brazilian bank does', async () => {
    const res = await pay({
      amount: 150,
      barCode: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode,
      payAt: '2026-11-25T09:00:00',
    });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: 'SCHEDULED', payAt: '2026-11-25T12:00:00.000Z' });
  });

  it('refuses the day before from midnight in Brasília, naming that day', async () => {
    now = new Date('2026-11-23T03:00:00.000Z'); // 23/11 00:00 in Brasília
    const res = await pay({ amount: 150, barCode: SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.barCode, payAt: '2026-11-22' });
    expect(res.status).toBe(400);
    expect(res.json.errors['$.payAt'][0]).toMatch(/today \(2026-11-23\) or later/);
  });

  it('creates a charge due on the Brasília day still running', async () => {
    const res = await rawRequest(
      sandbox,
      'POST',
      '/v1/charges',
      {
        type: 'BANKSLIP',
        correlationId: randomUUID(),
        dueDate: '2026-11-22',
        Amount: 150,
        payer: { name: 'Maria Silva', document: '52998224725', address: PAYER_ADDRESS },
      },
      PUBLIC_KEY_JSON_HEADERS,
    );
    expect(res.json.errors).toBeUndefined();
    expect(res.status).toBe(200);
  });
});
