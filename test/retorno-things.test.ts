/**
 * The things' state machine (src/store/things.ts) on a real store (a SQLite file and a PostgreSQL database,
 * test/helpers/stores.ts), the charge list's windows and pages against the sandbox over HTTP (port 0), on one clock of
 * the test's (test/helpers/retorno.ts), and the retorno's metrics.
 */

import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { Metrics } from '../src/metrics.js';
import { deriveFromRow, observationsOfCharge, yearWindows } from '../src/runner/retorno.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { retornoSnapshot } from '../src/store/snapshot.js';
import { Things } from '../src/store/things.js';
import { insertWebhookEvent } from '../src/store/webhook-events.js';
import { retornoPerTest, storeSucceeded } from './helpers/retorno.js';
import { rawRequest } from './helpers/sandbox.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const PUBLIC_KEY = { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY };

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  // The one test that needs a bank starts it (`w.startBank`).
  const w = retornoPerTest({ prefix: 'things', start: '2026-11-23T12:00:00.000Z', engine, bank: false });

  /** A charges batch whose rows succeeded with the given correlationIds and status. */
  function succeededCharges(
    ids: readonly string[],
    status = 'Pending',
    { encoding = 'utf8', payerName = 'Ana' }: { encoding?: 'utf8' | 'windows-1252'; payerName?: string } = {},
  ): Promise<string> {
    return storeSucceeded(
      w.store,
      'charges',
      ids.map((id, i) => ({
        record: { correlationId: id },
        parsed: { input: { correlationId: id, yourNumber: `YN ${i}`, payer: { name: payerName, document: '1' } } },
        outputs: { chargeStatus: status, ourNumber: '00000000001' },
        naturalKey: id,
      })),
      {
        fileName: 'charges.csv',
        dialect: { delimiter: ';', decimalMark: ',', encoding, bom: false, lineEnding: '\n' },
        step: 'create',
      },
    );
  }

  async function things(): Promise<Things> {
    const t = w.things();
    await t.syncFromRows(deriveFromRow);
    return t;
  }

  describe('the things state machine', () => {
    it('one line per change, whichever source tells it first; a later source only completes it', async () => {
      await succeededCharges(['c1']);
      const t = await things();
      const paid = { kind: 'charge' as const, key: 'c1', status: 'Paid', occurredAt: '2026-11-23T10:00:00.000Z' };
      expect((await t.observe({ ...paid, source: 'reconcile' })).result).toBe('changed');
      expect((await t.observe({ ...paid, source: 'event', eventId: 'ev-1', paidCents: 1000 })).result).toBe('merged');
      expect((await t.observe({ ...paid, source: 'event', eventId: 'ev-1' })).result).toBe('same');
      expect((await t.observe({ ...paid, source: 'event', eventId: 'ev-2' })).result).toBe('merged');
      const lines = await t.changesOfDay(brasiliaDay(w.clock));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        oldStatus: 'Pending',
        newStatus: 'Paid',
        eventIds: ['ev-1', 'ev-2'],
        paidCents: 1000,
        source: 'reconcile',
        yourNumber: 'YN 0',
        payerName: 'Ana',
      });
    });

    it('a final status is never left; an older observation never overrides a newer one', async () => {
      await succeededCharges(['c1', 'c2']);
      const t = await things();
      const at = (h: number) => `2026-11-23T${String(h).padStart(2, '0')}:00:00.000Z`;
      await t.observe({ kind: 'charge', key: 'c1', status: 'Paid', occurredAt: at(10), source: 'event' });
      expect(
        (await t.observe({ kind: 'charge', key: 'c1', status: 'Expired', occurredAt: at(11), source: 'event' })).result,
      ).toBe('stale');
      // Expired at 10, then (delivered late) an expiry notice of 9, then Paid at 11: an expired slip is still payable.
      await t.observe({ kind: 'charge', key: 'c2', status: 'Expired', occurredAt: at(10), source: 'event' });
      expect(
        (await t.observe({ kind: 'charge', key: 'c2', status: 'Pending', occurredAt: at(9), source: 'event' })).result,
      ).toBe('stale');
      expect(
        (await t.observe({ kind: 'charge', key: 'c2', status: 'Paid', occurredAt: at(11), source: 'event' })).result,
      ).toBe('changed');
      expect((await t.get('charge', 'c1'))?.status).toBe('Paid');
      expect(await t.get('charge', 'c2')).toMatchObject({ status: 'Paid', final: true });
      expect(
        (await t.changesOfDay(brasiliaDay(w.clock))).map((l) => `${l.correlationId} ${l.oldStatus}->${l.newStatus}`),
      ).toEqual(['c1 Pending->Paid', 'c2 Pending->Expired', 'c2 Expired->Paid']);
    });

    it("the retorno's times are UTC instants, whatever zone a source wrote them in", async () => {
      await succeededCharges(['c1']);
      const t = await things();
      // 07:30 in Brasília is 10:30 UTC: a later time than 10:00 UTC, though earlier as text.
      await t.observe({
        kind: 'charge',
        key: 'c1',
        status: 'Expired',
        occurredAt: '2026-11-23T07:30:00-03:00',
        source: 'event',
      });
      expect(
        (
          await t.observe({
            kind: 'charge',
            key: 'c1',
            status: 'Pending',
            occurredAt: '2026-11-23T10:00:00.000Z',
            source: 'event',
          })
        ).result,
      ).toBe('stale');
      expect(await t.get('charge', 'c1')).toMatchObject({ status: 'Expired', statusAt: '2026-11-23T10:30:00.000Z' });
      expect((await t.changesOfDay(brasiliaDay(w.clock))).map((l) => l.occurredAt)).toEqual([
        '2026-11-23T10:30:00.000Z',
      ]);
    });

    it('a payment told late is a line even after an expiry or a void the retorno already has', async () => {
      await succeededCharges(['c1', 'c2', 'c3']);
      const t = await things();
      const at = (h: number) => `2026-11-23T${String(h).padStart(2, '0')}:00:00.000Z`;
      // Paid at 9 (a lottery house), expired at 10 (told first), the payment told at 11 with its own time, 9.
      await t.observe({ kind: 'charge', key: 'c1', status: 'Expired', occurredAt: at(10), source: 'event' });
      const late = { kind: 'charge' as const, status: 'Paid', occurredAt: at(9), paidCents: 1000 };
      expect((await t.observe({ ...late, key: 'c1', source: 'event', eventId: 'ev-1' })).result).toBe('changed');
      // Voided at 10 by a charge-voids row; a payment made before the void is not undone by it (spec 3).
      await t.observe({ kind: 'charge', key: 'c2', status: 'Voided', occurredAt: at(10), source: 'row' });
      expect((await t.observe({ ...late, key: 'c2', source: 'event', eventId: 'ev-2' })).result).toBe('changed');
      // The same payment learnt again (reconciliation) only completes its line; a dynamic QR code paid late likewise.
      expect((await t.observe({ ...late, key: 'c2', source: 'reconcile' })).result).toBe('same');
      await t.observe({ kind: 'charge', key: 'c3', status: 'Voided', occurredAt: at(10), source: 'row' });
      expect(
        (await t.observe({ kind: 'charge', key: 'c3', status: 'Expired', occurredAt: at(11), source: 'event' })).result,
      ).toBe('stale');
      expect(await t.get('charge', 'c2')).toMatchObject({ status: 'Paid', final: true });
      expect(
        (await t.changesOfDay(brasiliaDay(w.clock))).map(
          (l) => `${l.correlationId} ${l.oldStatus}->${l.newStatus} ${l.paidCents ?? ''}`,
        ),
      ).toEqual([
        'c1 Pending->Expired ',
        'c1 Expired->Paid 1000',
        'c2 Pending->Voided ',
        'c2 Voided->Paid 1000',
        'c3 Pending->Voided ',
      ]);
    });

    it('an event about something remessa did not create is kept unapplied a while, then applied as foreign', async () => {
      await succeededCharges(['c1']);
      const insert = (...values: Array<string | null>) =>
        w.store.driver.run(
          `INSERT INTO webhook_events (id, event_type, correlation_id, occurred_at, received_at, payload)
         VALUES (?, ?, ?, ?, ?, ?)`,
          values,
        );
      const envelope = (id: string, correlationId: string) =>
        JSON.stringify({
          id,
          event: 'CHARGE_PAID',
          createdAt: '2026-11-23T11:00:00.000Z',
          data: { correlationId, status: 'Paid', paidAt: '2026-11-23T11:00:00.000Z', payment: { amount: 10.5 } },
        });
      await insert('e1', 'CHARGE_PAID', 'c1', '2026-11-23T11:00:00.000Z', w.clock.toISOString(), envelope('e1', 'c1'));
      await insert('e2', 'CHARGE_PAID', 'x', '2026-11-23T11:00:00.000Z', w.clock.toISOString(), envelope('e2', 'x'));
      await insert('e3', 'CHARGE_PAID', null, null, w.clock.toISOString(), '{not json');
      const pass = () => w.pass();
      const first = await pass();
      expect(first).toMatchObject({ eventsApplied: 2, eventsForeign: 0, changes: 1 });
      const applied = async () =>
        (
          await w.store.driver.all<{ id: string }>(
            'SELECT id FROM webhook_events WHERE applied_at IS NOT NULL ORDER BY id',
          )
        ).map((r) => r.id);
      expect(await applied()).toEqual(['e1', 'e3']);
      w.clock = new Date(w.clock.getTime() + 2 * 3_600_000);
      expect(await pass()).toMatchObject({ eventsApplied: 1, eventsForeign: 1, changes: 0 });
      expect(await applied()).toEqual(['e1', 'e2', 'e3']);
      expect(await new Things(w.store).foreignEvents()).toEqual({
        count: 1,
        latest: [{ id: 'e2', type: 'CHARGE_PAID', subject: 'x' }],
      });
      w.clock = new Date('2026-11-23T12:00:00.000Z');
      const line = (await new Things(w.store).changesOfDay('2026-11-23'))[0]!;
      expect(line).toMatchObject({ newStatus: 'Paid', paidCents: 1050, eventIds: ['e1'] });
    });

    it('events the bank delivered out of order are applied in the order they happened once settled', async () => {
      await succeededCharges(['c1', 'c2']);
      const receive = async (id: string, type: string, correlationId: string, occurredAt: string) => {
        const data = { correlationId, status: type === 'CHARGE_PAID' ? 'Paid' : 'Expired', paidAt: occurredAt };
        await insertWebhookEvent(w.store, {
          id,
          type,
          correlationId,
          occurredAt,
          receivedAt: w.clock.toISOString(),
          payload: JSON.stringify({ id, event: type, createdAt: occurredAt, data }),
        });
      };
      const pass = (eventSettleMs: number) => w.pass({ eventSettleMs });
      const later = (ms: number) => {
        w.clock = new Date(w.clock.getTime() + ms);
      };
      // c1 expired at 10:00 and was paid at 11:00; the payment's delivery arrives first, the expiry's 1 s later, and
      // a pass runs between the two.
      await receive('c1-paid', 'CHARGE_PAID', 'c1', '2026-11-23T11:00:00.000Z');
      later(500);
      expect(await pass(5_000)).toMatchObject({ eventsApplied: 0, changes: 0 });
      later(500);
      await receive('c1-expired', 'CHARGE_EXPIRED', 'c1', '2026-11-23T10:00:00.000Z');
      later(4_500);
      // The payment has settled, but the expiry, which happened before it, has not: neither is applied yet.
      expect(await pass(5_000)).toMatchObject({ eventsApplied: 0, changes: 0 });
      later(1_000);
      expect(await pass(5_000)).toMatchObject({ eventsApplied: 2, changes: 2 });
      // Without the settling (0 s), the same deliveries lose the expiry: the payment is applied first and the
      // expiry, older than it, is stale (rule 2 of src/store/things.ts). The payment itself is never lost.
      await receive('c2-paid', 'CHARGE_PAID', 'c2', '2026-11-23T11:00:00.000Z');
      expect(await pass(0)).toMatchObject({ eventsApplied: 1, changes: 1 });
      later(1_000);
      await receive('c2-expired', 'CHARGE_EXPIRED', 'c2', '2026-11-23T10:00:00.000Z');
      expect(await pass(0)).toMatchObject({ eventsApplied: 1, changes: 0 });
      const lines = await new Things(w.store, { now: () => w.clock }).changesOfDay('2026-11-23');
      expect(lines.map((l) => `${l.correlationId} ${l.oldStatus}->${l.newStatus} ${l.eventIds.join(' ')}`)).toEqual([
        'c1 Pending->Expired c1-expired',
        'c1 Expired->Paid c1-paid',
        'c2 Pending->Paid c2-paid',
      ]);
    });

    it('a day begun by a Windows-1252 sheet keeps text it cannot carry: written in UTF-8, never as "?"', async () => {
      await succeededCharges(['c1'], 'Pending', { encoding: 'windows-1252', payerName: 'José' });
      await succeededCharges(['c2'], 'Pending', { payerName: 'Łukasz Nowak' });
      const t = await things();
      const at = '2026-11-23T10:00:00.000Z';
      await t.observe({ kind: 'charge', key: 'c1', status: 'Paid', occurredAt: at, source: 'event', paidCents: 1000 });
      let pass = await w.pass({ outboxDir: w.dir });
      // Only Windows-1252 text so far: the day is in the first sheet's encoding.
      expect((await fs.readFile(pass.files[0]!)).includes(Buffer.from('Jos\xe9', 'latin1'))).toBe(true);
      await t.observe({ kind: 'charge', key: 'c2', status: 'Paid', occurredAt: at, source: 'event', paidCents: 2000 });
      pass = await w.pass({ outboxDir: w.dir });
      const text = (await fs.readFile(pass.files[0]!)).toString('utf8');
      expect(text.startsWith('\ufeffkind;')).toBe(true);
      expect(text).toContain(';José;');
      expect(text).toContain(';Łukasz Nowak;');
      expect(text).toContain(';20,00;');
      const summary = JSON.parse(await fs.readFile(pass.files[0]!.replace(/\.csv$/, '.summary.json'), 'utf8'));
      expect(summary.dialect).toEqual({ encoding: 'utf8', delimiter: ';', decimalMark: ',' });
      // Its amounts as a person reads them, as in a batch's summary.
      expect(summary.paid.charge).toEqual({ cents: 3000, formatted: 'R$ 30,00' });
    });

    it("the retorno summary's amounts are in the locale, as a batch summary's", async () => {
      await succeededCharges(['c1'], 'Pending', { encoding: 'windows-1252' });
      const t = await things();
      const at = '2026-11-23T10:00:00.000Z';
      await t.observe({
        kind: 'charge',
        key: 'c1',
        status: 'Paid',
        occurredAt: at,
        source: 'event',
        paidCents: 123456,
      });
      const pass = await w.pass({ outboxDir: w.dir });
      const read = async () =>
        JSON.parse(await fs.readFile(pass.files[0]!.replace(/\.csv$/, '.summary.json'), 'utf8')).paid.charge;
      expect(await read()).toEqual({ cents: 123456, formatted: 'R$ 1.234,56' });
      await t.observe({ kind: 'charge', key: 'c1', status: 'Paid', occurredAt: at, source: 'event', eventId: 'ev-9' });
      await w.pass({ outboxDir: w.dir, locale: 'en' });
      expect(await read()).toEqual({ cents: 123456, formatted: 'R$1,234.56' });
    });

    it('a change whose file was not written (a crash in between) is written by the next pass', async () => {
      await succeededCharges(['c1']);
      const t = await things();
      // As if the process died right after this commit, before writing the file.
      await t.observe({
        kind: 'charge',
        key: 'c1',
        status: 'Paid',
        occurredAt: '2026-11-23T10:00:00.000Z',
        source: 'event',
      });
      const outbox = w.outboxDir;
      const result = await w.pass();
      expect(result.changes).toBe(0);
      const file = path.join(outbox, 'retorno', '2026-11-23.csv');
      expect(result.files).toEqual([file]);
      expect((await fs.readFile(file, 'utf8')).trim().split('\n')).toHaveLength(2);
      // Written once: the next pass has nothing to write.
      expect((await w.pass()).files).toEqual([]);
    });

    it('a charge record tells its history by its times: expired, then paid', async () => {
      const obs = observationsOfCharge({
        correlationId: 'c',
        status: 'Paid',
        amountCents: 1000,
        payments: [{ id: 'p', amountCents: 990, paidAt: '2026-11-22T10:00:00.000Z' }],
        ...({ expiredAt: '2026-11-21T00:00:00.000Z', paidAt: '2026-11-22T10:00:00.000Z' } as object),
      });
      expect(obs.map((o) => [o.status, o.occurredAt, o.paidCents])).toEqual([
        ['Expired', '2026-11-21T00:00:00.000Z', undefined],
        ['Paid', '2026-11-22T10:00:00.000Z', 990],
      ]);
    });

    it('a Pix charge read Expired by its expiry happened at its expiresAt', async () => {
      const obs = observationsOfCharge({
        correlationId: 'c',
        status: 'Expired',
        amountCents: 1000,
        ...({ expiresAt: '2026-11-22T10:00:00.000Z', updatedAt: '2026-11-21T10:00:00.000Z' } as object),
      });
      expect(obs.map((o) => [o.status, o.occurredAt])).toEqual([['Expired', '2026-11-22T10:00:00.000Z']]);
    });

    it('the retorno day is the Brasília date', async () => {
      expect(brasiliaDay(new Date('2026-11-24T02:59:59.000Z'))).toBe('2026-11-23');
      expect(brasiliaDay(new Date('2026-11-24T03:00:00.000Z'))).toBe('2026-11-24');
    });
  });

  describe('reconciliation paging', () => {
    it('splits a range into windows of at most one year', async () => {
      expect(yearWindows('2024-02-29', '2026-03-01')).toEqual([
        { startDate: '2024-02-29', endDate: '2025-02-27' },
        { startDate: '2025-02-28', endDate: '2026-02-27' },
        { startDate: '2026-02-28', endDate: '2026-03-01' },
      ]);
      expect(yearWindows('2026-11-23', '2026-11-23')).toEqual([{ startDate: '2026-11-23', endDate: '2026-11-23' }]);
      expect(yearWindows('2026-11-24', '2026-11-23')).toEqual([]);
    });

    it('pages through more than 100 charges and observes each one remessa created', async () => {
      const { sandbox, client } = await w.startBank({});
      const ids = Array.from({ length: 130 }, (_, i) => `PG-${i}`);
      for (const id of ids) await client.charges.create({ type: 'PIX_STATIC', correlationId: id, amountCents: 100 });
      for (const id of ids.slice(0, 125)) {
        const paid = await rawRequest(sandbox, 'POST', `/v1/charges/${id}/pay`, undefined, PUBLIC_KEY);
        expect(paid.status, paid.text).toBe(200);
      }
      await succeededCharges(ids.slice(5), 'Created');
      const result = await w.pass({ client });
      expect(result.chargesListed).toBe(130);
      expect(result.changes).toBe(120);
      expect(result.lookedUp).toBe(0);
      const day = brasiliaDay(w.clock);
      expect(result.files).toEqual([path.join(w.outboxDir, 'retorno', `${day}.csv`)]);
      const text = await fs.readFile(result.files[0]!, 'utf8');
      expect(text.trim().split('\n')).toHaveLength(121);
      expect(text).toContain(';PG-5;');
      expect(text).toMatch(/;1,00;/);

      const metrics = new Metrics();
      metrics.attach({ retornoSnapshot: () => retornoSnapshot(w.store) });
      const exposition = await metrics.render();
      expect(exposition).toMatch(/remessa_things\{kind="charge",status="paid"\} 120/);
      expect(exposition).toMatch(/remessa_things\{kind="charge",status="created"\} 5/);
      expect(exposition).toMatch(/remessa_retorno_oldest_unsettled_seconds 0/);
      expect(exposition).toMatch(/remessa_retorno_events_applied_total 0/);
    }, 60_000);
  });
});
