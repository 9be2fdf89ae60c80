import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../src/store/index.js';
import {
  countWebhookEvents,
  getWebhookEvent,
  insertWebhookEvent,
  listUnappliedWebhookEvents,
  listWebhookEventsByCorrelationId,
  markWebhookEventsApplied,
  type NewWebhookEvent,
} from '../src/store/webhook-events.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  let store: Store;

  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(async () => {
    await store.close();
  });

  function event(id: string, occurredAt: string | null, extra: Partial<NewWebhookEvent> = {}): NewWebhookEvent {
    return {
      id,
      type: 'CHARGE_PAID',
      correlationId: `c-${id}`,
      occurredAt,
      receivedAt: '2026-11-23T12:00:00.000Z',
      payload: JSON.stringify({ id, event: 'CHARGE_PAID', createdAt: occurredAt, data: { correlationId: `c-${id}` } }),
      ...extra,
    };
  }

  describe('webhook_events (migration 007)', () => {
    it('stores an event once: a second insert of the same id is ignored and leaves the first row as it was', async () => {
      expect(await insertWebhookEvent(store, event('e1', '2026-11-23T10:00:00.000Z', { ourNumber: '123' }))).toBe(true);
      expect(
        await insertWebhookEvent(store, event('e1', '2026-11-23T11:00:00.000Z', { ourNumber: '999', payload: '{}' })),
      ).toBe(false);
      const stored = await getWebhookEvent(store, 'e1');
      expect(stored).toMatchObject({
        id: 'e1',
        type: 'CHARGE_PAID',
        correlationId: 'c-e1',
        ourNumber: '123',
        occurredAt: '2026-11-23T10:00:00.000Z',
        appliedAt: null,
      });
      expect(JSON.parse(stored!.payload)).toMatchObject({ id: 'e1' });
      expect(await countWebhookEvents(store)).toEqual({ total: 1, unapplied: 1 });
    });

    // Regression: the bank's times were stored as sent; ordered as text, 23:50 in Brasília (02:50 UTC the next day)
    // came before 01:00 UTC, and an event applied out of order could lose an Expired line of the retorno.
    it('stores when an event happened as a UTC instant, whatever zone the bank wrote it in, and orders by it', async () => {
      await insertWebhookEvent(store, event('brasilia', '2026-11-27T23:50:00-03:00'));
      await insertWebhookEvent(store, event('utc', '2026-11-28T01:00:00.000Z'));
      await insertWebhookEvent(store, event('no-zone', '2026-11-28T02:00:00'));
      expect((await getWebhookEvent(store, 'brasilia'))?.occurredAt).toBe('2026-11-28T02:50:00.000Z');
      expect((await getWebhookEvent(store, 'no-zone'))?.occurredAt).toBe('2026-11-28T02:00:00.000Z');
      expect((await listUnappliedWebhookEvents(store)).map((e) => e.id)).toEqual(['utc', 'no-zone', 'brasilia']);
    });

    it('lists unapplied events in the order they happened, not the order they arrived', async () => {
      await insertWebhookEvent(store, event('late', '2026-11-23T10:00:02.000Z'));
      await insertWebhookEvent(store, event('early', '2026-11-23T10:00:00.000Z'));
      await insertWebhookEvent(store, event('middle', '2026-11-23T10:00:01.000Z'));
      expect((await listUnappliedWebhookEvents(store)).map((e) => e.id)).toEqual(['early', 'middle', 'late']);
      expect((await listUnappliedWebhookEvents(store, { limit: 2 })).map((e) => e.id)).toEqual(['early', 'middle']);
    });

    it('marks events applied once: the first time is kept and applied events leave the unapplied list', async () => {
      await insertWebhookEvent(store, event('a', '2026-11-23T10:00:00.000Z'));
      await insertWebhookEvent(store, event('b', '2026-11-23T10:00:01.000Z'));
      expect(await markWebhookEventsApplied(store, ['a'], '2026-11-23T12:00:00.000Z')).toBe(1);
      expect(await markWebhookEventsApplied(store, ['a', 'b'], '2026-11-23T13:00:00.000Z')).toBe(1);
      expect((await getWebhookEvent(store, 'a'))?.appliedAt).toBe('2026-11-23T12:00:00.000Z');
      expect((await getWebhookEvent(store, 'b'))?.appliedAt).toBe('2026-11-23T13:00:00.000Z');
      expect(await listUnappliedWebhookEvents(store)).toEqual([]);
      expect(await countWebhookEvents(store)).toEqual({ total: 2, unapplied: 0 });
    });

    it('finds the events of one correlationId', async () => {
      await insertWebhookEvent(store, event('x', '2026-11-23T10:00:01.000Z', { correlationId: 'same' }));
      await insertWebhookEvent(store, event('y', '2026-11-23T10:00:00.000Z', { correlationId: 'same' }));
      await insertWebhookEvent(store, event('z', '2026-11-23T10:00:00.000Z'));
      expect((await listWebhookEventsByCorrelationId(store, 'same')).map((e) => e.id)).toEqual(['y', 'x']);
    });
  });
});
