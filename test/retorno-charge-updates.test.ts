/**
 * A charge changed by a `charge-updates` row (its Seu número, its payer) is reported in the retorno as the bank now
 * holds it: the clerk who changed NF-10 to NF-10A finds the payment under NF-10A, paid by the payer the slip now
 * names. A line already written keeps what it said when it was written (rule 4 of src/store/things.ts). A real store,
 * the sandbox over HTTP on a clock of the test's.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { expect, it } from 'vitest';
import { insertWebhookEvent } from '../src/store/webhook-events.js';
import { retornoPerTest } from './helpers/retorno.js';

const w = retornoPerTest({ prefix: 'retorno-updates', start: '2026-11-23T12:00:00.000Z' });

/** A staging route of the sandbox (pay, expire): what happens to a charge at the bank. */
const staging = (route: string, body: unknown = {}) =>
  w.atBank(route.endsWith('/expire') ? 'PUT' : 'POST', route, body);

it('a charge whose Seu número, payer and amount a charge-updates row changed is paid under the new ones', async () => {
  const first = { name: 'Maria da Silva', document: '12345678909' };
  const input = {
    type: 'BANKSLIP' as const,
    correlationId: 'UPD-1',
    amountCents: 10_000,
    dueDate: '2026-11-25',
    yourNumber: 'NF-10',
    payer: { ...first, address: { zipCode: '01310100', publicPlace: 'Rua A', city: 'São Paulo', state: 'SP' } },
  };
  const created = await w.client.charges.create(input);
  await w.succeeded(
    'charges',
    { input },
    { chargeStatus: 'Pending', ourNumber: created.ourNumber ?? null },
    {
      amountCents: 10_000,
    },
  );
  // Expired on its date: a line under the Seu número and payer of the day.
  w.clock = new Date('2026-11-26T12:00:00.000Z');
  await staging('/v1/charges/UPD-1/expire');
  expect((await w.pass()).changes).toBe(1);

  // The clerk gives it a new due date, Seu número and payer; the bank holds them.
  w.clock = new Date('2026-11-27T12:00:00.000Z');
  const patch = {
    dueDate: '2026-12-10',
    amountCents: 12_000,
    yourNumber: 'NF-10A',
    payer: { name: 'Padaria Pão de Ló', document: '11222333000181' },
  };
  await w.client.charges.patch('UPD-1', patch);
  await w.succeeded(
    'charge-updates',
    { correlationId: 'UPD-1', patch },
    { chargeStatus: 'Pending' },
    { amountCents: 10_000 },
  );
  w.clock = new Date('2026-11-28T12:00:00.000Z');
  // Paid in part: 50,00 of the 120,00 it now asks.
  await staging('/v1/charges/UPD-1/pay', { amount: 50 });
  await w.pass();

  const things = w.things();
  const lines = [...(await things.changesOfDay('2026-11-26')), ...(await things.changesOfDay('2026-11-28'))];
  expect(
    lines.map((l) => [l.day, l.oldStatus, l.newStatus, l.yourNumber, l.payerName, l.payerDocument, l.amountCents]),
  ).toEqual([
    ['2026-11-26', 'Pending', 'Expired', 'NF-10', 'Maria da Silva', '12345678909', 10_000],
    ['2026-11-28', 'Expired', 'Pending', 'NF-10A', 'Padaria Pão de Ló', '11222333000181', 12_000],
    ['2026-11-28', 'Pending', 'Paid', 'NF-10A', 'Padaria Pão de Ló', '11222333000181', 12_000],
  ]);
  expect(lines.at(-1)?.paidCents).toBe(5_000);
  // The file says both: asked 120.00, paid 50.00.
  const file = await fs.readFile(path.join(w.outboxDir, 'retorno', '2026-11-28.csv'), 'utf8');
  const [header, , paid] = file
    .trim()
    .split('\n')
    .map((l) => l.split(','));
  expect(paid![header!.indexOf('amount')]).toBe('120.00');
  expect(paid![header!.indexOf('paidAmount')]).toBe('50.00');
});

it('a CHARGE_PAID whose payment gives no amount leaves paidAmount empty, not the charge`s amount', async () => {
  const input = { type: 'PIX_DYNAMIC' as const, correlationId: 'UPD-2', amountCents: 60_000, expiresInSeconds: 86_400 };
  await w.client.charges.create(input);
  await w.succeeded('charges', { input }, { chargeStatus: 'Created' }, { amountCents: 60_000 });
  await w.pass();
  // The charge's `amount` is what it asked (600,00); its payment, of a bank that did not say how much, 250,50.
  const payload = {
    id: 'ev-no-amount',
    event: 'CHARGE_PAID',
    createdAt: '2026-11-23T12:30:00.000Z',
    data: { correlationId: 'UPD-2', status: 'Paid', amount: 600, payment: { paidAt: '2026-11-23T12:30:00.000Z' } },
  };
  await insertWebhookEvent(w.store, {
    id: payload.id,
    type: payload.event,
    correlationId: 'UPD-2',
    occurredAt: payload.createdAt,
    receivedAt: w.clock.toISOString(),
    payload: JSON.stringify(payload),
  });
  // The event alone tells it: no reconciliation.
  await w.pass({ reconcile: false });
  const [line] = await w.things().changesOfDay('2026-11-23');
  expect([line?.newStatus, line?.amountCents, line?.paidCents]).toEqual(['Paid', 60_000, undefined]);
});
