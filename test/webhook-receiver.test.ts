/**
 * remessa's webhook receiver (src/webhooks/receiver.ts) in-process, over real HTTP on port 0, on a real store (a
 * SQLite file, a PostgreSQL database):
 * each authorization scheme checked (401 and nothing stored otherwise), a duplicate stored once, an oversized body
 * 413, a body that is not an event 400, added fields tolerated; and the real sandbox delivering to it after
 * `ensureRegistered` (the registration the daemon and `remessa webhooks register` use).
 * The end-to-end cases with the daemon and the sandbox as child processes are in test/e2e-webhooks.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import type { AuthorizationScheme } from '../src/formats/webhook-authorization.js';
import { Metrics } from '../src/metrics.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/server.js';
import type { StorePlace } from '../src/store/place.js';
import type { Store } from '../src/store/store.js';
import { countWebhookEvents, getWebhookEvent, listUnappliedWebhookEvents } from '../src/store/webhook-events.js';
import { authorizationChecker } from '../src/webhooks/authorization.js';
import { type RunningWebhookReceiver, startWebhookReceiver } from '../src/webhooks/receiver.js';
import { ensureRegistered } from '../src/webhooks/registration.js';
import { PAYER_ADDRESS } from './helpers/sandbox.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

const TOKEN = 'receiver-test-token-0123456789';

let dir: string;
let place: StorePlace;
const closers: Array<() => Promise<void>> = [];
let db: Store | undefined;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-receiver-'));
});
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await db?.close();
  db = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function receiver(
  options: { scheme?: AuthorizationScheme; authorization?: string; bodyLimitBytes?: number; metrics?: Metrics } = {},
): Promise<RunningWebhookReceiver> {
  const r = await startWebhookReceiver({
    store: place,
    authorizationScheme: options.scheme ?? 'BEARER',
    authorization: options.authorization ?? TOKEN,
    ...(options.bodyLimitBytes ? { bodyLimitBytes: options.bodyLimitBytes } : {}),
    ...(options.metrics ? { onResult: (result) => options.metrics?.observeWebhookEvent(result) } : {}),
  });
  closers.push(() => r.close());
  return r;
}

async function store(): Promise<Store> {
  db ??= await place.open();
  return db;
}

function envelope(id: string = randomUUID(), data: Record<string, unknown> = { correlationId: 'corr-1', amount: 10 }) {
  return { id, event: 'CHARGE_PAID', createdAt: '2026-11-23T10:00:00.000Z', data };
}

async function post(r: RunningWebhookReceiver, body: string | object, headers: Record<string, string> = {}) {
  const res = await request(r.eventsUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}`, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.body.text();
  return { status: res.statusCode, text };
}

describe('authorization check', () => {
  it('accepts exactly the header the sender sends for each scheme, and nothing else', async () => {
    const basic = authorizationChecker('BASIC', 'user:p@ss');
    const encoded = Buffer.from('user:p@ss').toString('base64');
    expect(basic({ authorization: `Basic ${encoded}` })).toBe(true);
    expect(basic({ authorization: `basic ${encoded}` })).toBe(true);
    expect(basic({ authorization: `Bearer ${encoded}` })).toBe(false);
    expect(basic({ authorization: 'Basic user:p@ss' })).toBe(false);
    expect(basic({})).toBe(false);
    const bearer = authorizationChecker('BEARER', 'tok-123456');
    expect(bearer({ authorization: 'Bearer tok-123456' })).toBe(true);
    expect(bearer({ authorization: 'Bearer tok-123457' })).toBe(false);
    expect(bearer({ authorization: 'Bearer tok-12345' })).toBe(false);
    expect(bearer({ authorization: 'tok-123456' })).toBe(false);
    const named = authorizationChecker('HEADER', 'X-Api-Token: s3cr3t-v4lue');
    expect(named({ 'x-api-token': 's3cr3t-v4lue' })).toBe(true);
    expect(named({ authorization: 's3cr3t-v4lue' })).toBe(false);
    expect(named({ 'x-api-token': 's3cr3t-v4lu' })).toBe(false);
    const raw = authorizationChecker('HEADER', 'Token raw-v4lue');
    expect(raw({ authorization: 'Token raw-v4lue' })).toBe(true);
    expect(raw({ authorization: 'Token raw-v4lueX' })).toBe(false);
  });
});

describe.each(engines)('webhook receiver ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ({ place } = await engine.configured(dir, dir));
  });

  it('stores an event once: a second delivery of the same id is 2xx and changes nothing', async () => {
    const metrics = new Metrics();
    const r = await receiver({ metrics });
    const id = randomUUID();
    const first = await post(r, envelope(id), { 'x-webhook-event-id': id, 'x-webhook-id': 'wh-1' });
    expect(first.status).toBe(200);
    expect(JSON.parse(first.text)).toEqual({ result: 'stored' });
    const again = await post(r, envelope(id, { correlationId: 'other' }), { 'x-webhook-event-id': id });
    expect(again.status).toBe(200);
    expect(JSON.parse(again.text)).toEqual({ result: 'duplicate' });
    expect(await countWebhookEvents(await store())).toEqual({ total: 1, unapplied: 1 });
    const stored = (await getWebhookEvent(await store(), id))!;
    expect(stored).toMatchObject({
      type: 'CHARGE_PAID',
      correlationId: 'corr-1',
      occurredAt: '2026-11-23T10:00:00.000Z',
      webhookId: 'wh-1',
      appliedAt: null,
    });
    expect(JSON.parse(stored.payload)).toEqual(envelope(id));
    const text = await metrics.render();
    expect(text).toContain('remessa_webhook_events_total{result="stored"} 1');
    expect(text).toContain('remessa_webhook_events_total{result="duplicate"} 1');
    expect(text).toContain('remessa_webhook_events_total{result="rejected"} 0');
  });

  it('refuses a wrong or missing authorization with 401 and stores nothing', async () => {
    const metrics = new Metrics();
    const r = await receiver({ metrics });
    for (const headers of [
      { authorization: 'Bearer wrong-token' },
      { authorization: `Basic ${TOKEN}` },
      { authorization: '' },
    ]) {
      const res = await post(r, envelope(), headers);
      expect(res.status).toBe(401);
      expect(res.text).not.toContain(TOKEN);
    }
    expect((await countWebhookEvents(await store())).total).toBe(0);
    expect(await metrics.render()).toContain('remessa_webhook_events_total{result="rejected"} 3');
  });

  it('refuses a body over the limit with 413 and stores nothing', async () => {
    const r = await receiver({ bodyLimitBytes: 1024 });
    const res = await post(r, envelope(randomUUID(), { correlationId: 'big', note: 'x'.repeat(2000) }));
    expect(res.status).toBe(413);
    expect((await countWebhookEvents(await store())).total).toBe(0);
    // Just under the limit is fine.
    expect((await post(r, envelope(randomUUID(), { correlationId: 'small', note: 'x'.repeat(700) }))).status).toBe(200);
  });

  it('refuses what is not an event with 400 saying what was expected, and stores nothing', async () => {
    const r = await receiver();
    const notJson = await post(r, '{"id": ');
    expect(notJson.status).toBe(400);
    expect(notJson.text).toContain('Expected a JSON body');
    const noId = await post(r, { event: 'CHARGE_PAID', data: {} });
    expect(noId.status).toBe(400);
    expect(noId.text).toContain('$.id');
    const mismatch = await post(r, envelope('id-in-body'), { 'x-webhook-event-id': 'id-in-header' });
    expect(mismatch.status).toBe(400);
    expect((await countWebhookEvents(await store())).total).toBe(0);
  });

  it('keeps events with added fields, unknown types, foreign things and in any order', async () => {
    const r = await receiver();
    const later = {
      id: 'e-later',
      event: 'PIX_PAYMENT_UPDATED',
      createdAt: '2026-11-23T10:00:05.000Z',
      data: { id: 'pay-1', endToEndId: 'E123', status: 'SETTLED', brandNewField: { nested: true } },
      extraTopLevel: 1,
    };
    const earlier = {
      id: 'e-earlier',
      event: 'SOMETHING_NEW',
      createdAt: '2026-11-23T10:00:01.000Z',
      data: { correlationId: 42 },
    };
    expect((await post(r, later)).status).toBe(200);
    expect((await post(r, earlier)).status).toBe(200);
    const unapplied = await listUnappliedWebhookEvents(await store());
    expect(unapplied.map((e) => e.id)).toEqual(['e-earlier', 'e-later']);
    expect(unapplied[0]).toMatchObject({ type: 'SOMETHING_NEW', correlationId: '42' });
    expect(unapplied[1]).toMatchObject({ paymentId: 'pay-1', endToEndId: 'E123', correlationId: null });
    expect(JSON.parse(unapplied[1]!.payload)).toEqual(later);
  });

  it('is reached by the sandbox (HEADER scheme) after ensureRegistered, which registers each type once', async () => {
    const apiKey = 'receiver-test-key-0001';
    const sandbox: RunningSandbox = await startSandbox({
      apiKeys: [apiKey],
      webhookAllowLoopbackUrls: true,
      webhookPollIntervalMs: 20,
      webhookBackoffBaseMs: 10,
      webhookBackoffMaxMs: 40,
    });
    closers.push(() => sandbox.close());
    const client = new BankClient({ baseUrl: sandbox.url, apiKey, accountId: '1234567', maxAttempts: 1 });
    closers.push(() => client.close());
    const r = await receiver({ scheme: 'HEADER', authorization: 'X-Receiver-Token: abc-123-def-456' });
    const target = {
      url: r.eventsUrl,
      authorizationScheme: 'HEADER' as const,
      authorization: 'X-Receiver-Token: abc-123-def-456',
      events: ['CHARGE_PAID', 'PIX_RECEIVED', 'CHARGE_EXPIRED'] as const,
    };
    const first = await ensureRegistered(client, target);
    expect(first.map((c) => c.action)).toEqual(['created', 'created', 'created']);
    // Registering again updates in place: still one registration per type.
    const second = await ensureRegistered(client, target);
    expect(second.map((c) => c.action)).toEqual(['updated', 'updated', 'updated']);
    expect(await client.webhooks.list()).toHaveLength(3);

    const correlationId = `corr-${randomUUID().slice(0, 8)}`;
    await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      amountCents: 1_234,
      dueDate: new Date(Date.now() + 5 * 86_400_000).toISOString().slice(0, 10),
      payer: { name: 'Fulano de Tal', document: '52998224725', address: PAYER_ADDRESS },
    });
    const paid = await request(`${sandbox.url}/v1/charges/${correlationId}/pay`, {
      method: 'POST',
      headers: { 'x-service-api-key': apiKey },
    });
    expect(paid.statusCode).toBe(200);
    await paid.body.dump();
    const deadline = Date.now() + 10_000;
    while ((await countWebhookEvents(await store())).total < 1 && Date.now() < deadline)
      await new Promise((x) => setTimeout(x, 20));
    const events = await listUnappliedWebhookEvents(await store());
    expect(events.map((e) => [e.type, e.correlationId])).toEqual([['CHARGE_PAID', correlationId]]);
    expect(events[0]!.ourNumber).toMatch(/^\d+$/);
  });
});
