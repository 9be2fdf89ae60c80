/**
 * What the retorno follows beyond charges and Pix payments (issue 11 §2-3, docs/retorno.md): scheduled bill payments
 * (looked up by id once their date has come), key claims (found by the claims search), Pix received on static QR
 * codes (PIX_RECEIVED events, or the static code's look-up), and how long the bank has owed each its outcome
 * (`due_at`: the unsettled age and `remessa status`; the metric itself is scraped in test/e2e-retorno.test.ts). A
 * real store on both engines (a SQLite file, a PostgreSQL database), the sandbox over HTTP on port 0 with a clock of
 * the test's, rows stored as the engine stores them.
 */

import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { instantIn } from '../src/i18n/index.js';
import { describeUnsettled } from '../src/runner/retorno.js';
import { renderUnsettled } from '../src/runner/status.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { SANDBOX_ADMIN_PREFIX } from '../src/sandbox/options.js';
import type { Store } from '../src/store/index.js';
import { insertWebhookEvent } from '../src/store/webhook-events.js';
import { retornoPerTest } from './helpers/retorno.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

/** The retorno's lines of `remessa status`, as `--locale en` says them. */
async function unsettledText(store: Store): Promise<string> {
  return renderUnsettled(await describeUnsettled(store), 'en').join('\n');
}

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  const w = retornoPerTest({ prefix: 'retorno-followups', start: '2026-11-23T12:00:00.000Z', engine });
  const pass = (reconcile = true) => w.pass({ reconcile });

  /** How long the bank has owed the oldest unsettled thing its outcome, in seconds, by the test's clock (0: none). */
  async function owedSeconds(): Promise<number> {
    const at = await w.things().oldestUnsettledAtMs();
    return at === undefined ? 0 : (w.clock.getTime() - at) / 1000;
  }

  /** The retorno's lines of the clock's day. */
  function lines() {
    return w.things().changesOfDay(brasiliaDay(w.clock));
  }

  describe('scheduled bill payments', () => {
    it('wait for their date, are looked up by id once it has come, and end in one line with the paid amount', async () => {
      const fixture = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT;
      const bill = await w.client.billPayments.lookup(fixture.digitableLine);
      const payAt = '2026-11-25T10:00:00';
      const payment = await w.client.billPayments.pay(bill, {
        amountCents: bill.chargedAmountCents,
        idempotencyKey: randomUUID(),
        payAt,
      });
      expect(payment.status).toBe('SCHEDULED');
      await w.succeeded(
        'bill-payments',
        {
          identifier: fixture.digitableLine,
          barCode: fixture.barCode,
          billType: 'BANKSLIP',
          amountCents: 15_000,
          payAt,
        },
        { paymentId: payment.id, paymentStatus: 'SCHEDULED', paidAmount: 15_000 },
        { amountCents: 15_000 },
      );
      // Before its date: waiting (listed with its date), not late, not looked up.
      let r = await pass();
      expect(r.lookedUp).toBe(0);
      expect(await unsettledText(w.store)).toContain(
        // The 10:00 typed is Brasília's (the bank's clock reads a time without zone so): due at 10:00 BRT.
        `bill-payment ${payment.id}: SCHEDULED since 2026-11-23 09:00:00 BRT, due 2026-11-25 10:00:00 BRT`,
      );
      expect(await owedSeconds()).toBe(0);

      // Its date has come and the bank paid it: owed for 2 hours until reconciliation tells it.
      w.clock = new Date('2026-11-25T15:00:00.000Z');
      expect(await owedSeconds()).toBe(7200);
      r = await pass();
      expect(r.lookedUp).toBe(1);
      expect(r.lookupErrors).toBe(0);
      expect(await lines()).toEqual([
        expect.objectContaining({
          kind: 'bill-payment',
          oldStatus: 'SCHEDULED',
          newStatus: 'PAID',
          occurredAt: '2026-11-25T13:00:00.000Z',
          paidCents: 15_000,
          source: 'reconcile',
        }),
      ]);
      expect(await unsettledText(w.store)).toContain('Waiting for a final status from the bank: 0');
      expect(await owedSeconds()).toBe(0);
      // Settled: never looked up again.
      expect((await pass()).lookedUp).toBe(0);
      expect(await lines()).toHaveLength(1);
    });

    it('stay waiting, with the look-up failure counted, against a bank without the look-up', async () => {
      await w.succeeded(
        'bill-payments',
        { payAt: '2026-11-23T08:00:00' },
        { paymentId: randomUUID(), paymentStatus: 'SCHEDULED', paidAmount: 100 },
      );
      const r = await pass();
      expect(r.lookedUp).toBe(1);
      expect(r.lookupErrors).toBe(1);
      expect(await lines()).toEqual([]);
      expect(await unsettledText(w.store)).toContain('Waiting for a final status from the bank: 1');
      // Due at 08:00 in Brasília (11:00 UTC), the clock at 12:00 UTC.
      expect(await owedSeconds()).toBe(3600);
    });
  });

  describe('key claims', () => {
    it('are found by search, one line per status moved, until COMPLETED', async () => {
      const started = await w.client.claims.start(
        {
          type: 'EMAIL',
          key: 'retorno@example.com',
          account: {
            number: '1234567',
            branch: '0001',
            type: 'CURRENT',
            holder: { document: '12345678909', name: 'Maria da Silva', type: 'NATURAL' },
          },
        },
        randomUUID(),
      );
      await w.succeeded(
        'claims',
        { input: { type: 'EMAIL', key: 'retorno@example.com' } },
        { claimId: started.id, claimStatus: started.status, resolutionDeadline: started.resolutionDeadline ?? null },
      );
      const move = (status: string) => w.atBank('PATCH', `${SANDBOX_ADMIN_PREFIX}/claims/${started.id}`, { status });
      // Nothing moved: the search finds it as it was, no line; it waits, due by its deadline (7 days), not late.
      let r = await pass();
      expect(r.lookupErrors).toBe(0);
      expect(await lines()).toEqual([]);
      expect(await unsettledText(w.store)).toMatch(
        new RegExp(`claim ${started.id}: PENDI?N?G since .*, due ${instantIn('en', started.resolutionDeadline!)}`),
      );
      expect(await owedSeconds()).toBe(0);

      w.clock = new Date('2026-11-24T09:00:00.000Z');
      await move('AWAITING_RESOLUTION');
      await pass();
      w.clock = new Date('2026-11-24T10:00:00.000Z');
      await move('CONFIRMED');
      await move('COMPLETED');
      r = await pass();
      expect(r.lookupErrors).toBe(0);
      expect((await lines()).map((l) => [l.kind, l.claimId, l.oldStatus, l.newStatus, l.occurredAt, l.source])).toEqual(
        [
          ['claim', started.id, started.status, 'AWAITING_RESOLUTION', '2026-11-24T09:00:00.000Z', 'reconcile'],
          ['claim', started.id, 'AWAITING_RESOLUTION', 'COMPLETED', '2026-11-24T10:00:00.000Z', 'reconcile'],
        ],
      );
      expect(await unsettledText(w.store)).toContain('Waiting for a final status from the bank: 0');
      // Final: not looked for any more.
      expect((await pass()).lookedUp).toBe(0);
    });
  });

  describe('Pix received on a static QR code', () => {
    it('each payment is one line (events and look-up agree); the same payment told twice is one line', async () => {
      const qr = await w.client.qrCodes.createStatic(
        { correlationId: 'ST-1', amountCents: 2_500, description: 'Cafe' },
        randomUUID(),
      );
      await w.succeeded(
        'qr-codes',
        { type: 'PIX_STATIC', input: { correlationId: 'ST-1' } },
        { qrCodePayload: qr.payloadPix },
      );
      const paid: string[] = [];
      for (let i = 0; i < 2; i++) {
        const init = await w.client.pixPayments.initialize(qr.payloadPix, randomUUID());
        const p = await w.client.pixPayments.pay(w.client.pixPayments.toPaymentRequest(init), randomUUID());
        paid.push(p.endToEndId!);
        w.clock = new Date(w.clock.getTime() + 60_000);
      }
      const events = (await w.atBank('GET', `${SANDBOX_ADMIN_PREFIX}/events?type=PIX_RECEIVED`)).json as Array<{
        id: string;
        type: string;
        payload: Record<string, unknown>;
        occurredAt: string;
      }>;
      expect(events).toHaveLength(2);
      // The first payment told by its event (twice: a redelivery under another id is still one change)...
      for (const id of [events[0]!.id, 'redelivered-under-another-id']) {
        await insertWebhookEvent(w.store, {
          id,
          type: 'PIX_RECEIVED',
          correlationId: 'ST-1',
          occurredAt: events[0]!.occurredAt,
          receivedAt: w.clock.toISOString(),
          payload: JSON.stringify({
            id,
            event: 'PIX_RECEIVED',
            createdAt: events[0]!.occurredAt,
            data: events[0]!.payload,
          }),
        });
      }
      await pass(false);
      expect(
        (await lines()).map((l) => [l.kind, l.endToEndId, l.oldStatus, l.newStatus, l.paidCents, l.eventIds]),
      ).toEqual([
        ['pix-received', paid[0], 'ACTIVE', 'RECEIVED', 2_500, [events[0]!.id, 'redelivered-under-another-id']],
      ]);
      // ...the second by reconciliation (the static code's look-up lists its payments), the first completed, not doubled.
      await pass(true);
      const all = await lines();
      expect(all.map((l) => [l.endToEndId, l.occurredAt, l.source, l.correlationId, l.fileName])).toEqual([
        [paid[0], events[0]!.payload.receivedAt, 'event', 'ST-1', 'qr-codes.csv'],
        [paid[1], events[1]!.payload.receivedAt, 'reconcile', 'ST-1', 'qr-codes.csv'],
      ]);
      // A static code never settles nor waits: nothing listed as waiting for it.
      expect(await unsettledText(w.store)).toContain('Waiting for a final status from the bank: 0');
    });
  });

  describe('Pix received on a static QR code, delbank dialect', () => {
    it('reconciliation reads each payment of the code as the provider writes it (createdAt, not receivedAt)', async () => {
      const { client: own } = await w.startBank({ profile: 'delbank' }, { profile: 'delbank' });
      const qr = await own.qrCodes.createStatic({ correlationId: 'ST-D', amountCents: 1_200 }, randomUUID());
      await w.succeeded(
        'qr-codes',
        { type: 'PIX_STATIC', input: { correlationId: 'ST-D' } },
        { qrCodePayload: qr.payloadPix },
      );
      const paidAt: string[] = [];
      for (let i = 0; i < 2; i++) {
        const init = await own.pixPayments.initialize(qr.payloadPix, randomUUID());
        await own.pixPayments.pay(own.pixPayments.toPaymentRequest(init), randomUUID());
        paidAt.push(w.clock.toISOString());
        w.clock = new Date(w.clock.getTime() + 60_000);
      }
      await w.pass({ client: own });
      expect((await lines()).map((l) => [l.kind, l.newStatus, l.paidCents, l.occurredAt, l.source])).toEqual([
        ['pix-received', 'RECEIVED', 1_200, paidAt[0], 'reconcile'],
        ['pix-received', 'RECEIVED', 1_200, paidAt[1], 'reconcile'],
      ]);
    });
  });

  describe('Pix QR payments', () => {
    it('a failed payment ends its wait with a line that shows no paid amount; a settled one shows it', async () => {
      const failed = `E${randomUUID().replace(/-/g, '').slice(0, 31)}`;
      const settled = `E${randomUUID().replace(/-/g, '').slice(0, 31)}`;
      for (const e2e of [failed, settled]) {
        await w.succeeded(
          'pix-payments',
          {},
          { endToEndId: e2e, paymentStatus: 'PIX_PROCESSING', paidAmount: 4_000 },
          { amountCents: 4_000 },
        );
      }
      expect(await unsettledText(w.store)).toContain('Waiting for a final status from the bank: 2');
      const at = '2026-11-23T11:59:00.000Z';
      for (const [id, e2e, status] of [
        ['ev-failed', failed, 'PIX_FAILED'],
        ['ev-settled', settled, 'PIX_EXECUTED'],
      ] as const) {
        await insertWebhookEvent(w.store, {
          id,
          type: 'PIX_PAYMENT_UPDATED',
          endToEndId: e2e,
          occurredAt: at,
          receivedAt: w.clock.toISOString(),
          payload: JSON.stringify({
            id,
            event: 'PIX_PAYMENT_UPDATED',
            createdAt: at,
            data: { endToEndId: e2e, status, amount: 40, updatedAt: at },
          }),
        });
      }
      await pass(false);
      expect((await lines()).map((l) => [l.endToEndId, l.oldStatus, l.newStatus, l.paidCents])).toEqual([
        [failed, 'PIX_PROCESSING', 'PIX_FAILED', undefined],
        [settled, 'PIX_PROCESSING', 'PIX_EXECUTED', 4_000],
      ]);
      expect(await unsettledText(w.store)).toContain('Waiting for a final status from the bank: 0');
    });

    it('a status that denies a word of success (NOT_PAID, UNSUCCESSFUL, UNCONFIRMED) shows no paid amount', async () => {
      const at = '2026-11-23T11:59:00.000Z';
      const cases = [
        ['NOT_PAID', false],
        ['UNSUCCESSFUL', false],
        ['PIX_UNCONFIRMED', false],
        ['PAYMENT_NOT_COMPLETED', false],
        ['PIX_EXECUTED', true],
        ['SUCCESS', true],
        ['Completed', true],
      ] as const;
      const e2es: string[] = [];
      for (const [status] of cases) {
        const e2e = `E${randomUUID().replace(/-/g, '').slice(0, 31)}`;
        e2es.push(e2e);
        await w.succeeded(
          'pix-payments',
          {},
          { endToEndId: e2e, paymentStatus: 'PIX_PROCESSING', paidAmount: 4_000 },
          { amountCents: 4_000 },
        );
        await insertWebhookEvent(w.store, {
          id: `ev-${status}`,
          type: 'PIX_PAYMENT_UPDATED',
          endToEndId: e2e,
          occurredAt: at,
          receivedAt: w.clock.toISOString(),
          payload: JSON.stringify({
            id: `ev-${status}`,
            event: 'PIX_PAYMENT_UPDATED',
            createdAt: at,
            data: { endToEndId: e2e, status, amount: 40, updatedAt: at },
          }),
        });
      }
      await pass(false);
      const byE2e = new Map((await lines()).map((l) => [l.endToEndId, [l.newStatus, l.paidCents]]));
      expect(e2es.map((e) => byE2e.get(e))).toEqual(cases.map(([status, paid]) => [status, paid ? 4_000 : undefined]));
    });
  });
});
