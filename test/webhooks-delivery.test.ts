/**
 * Webhook delivery to a real local receiver (node:http on port 0): each authorization scheme, the envelope and its
 * stable event id, retries while the receiver fails, give-up after the maximum, no repeat and no loss across a
 * restart with a data file, and secrets kept out of the logs.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { createLogger } from '../src/log.js';
import type { SandboxOptionsInput } from '../src/sandbox/options.js';
import { type RunningSandbox, startSandbox } from '../src/sandbox/server.js';
import type { WebhookEnvelope } from '../src/sandbox/webhook-delivery.js';

const API_KEY = 'delivery-test-key-0001';

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: WebhookEnvelope;
}

/** A receiver that records every request and answers what `respond` says ('drop' destroys the socket). */
class Receiver {
  readonly received: Received[] = [];
  respond: (r: Received) => number | 'drop' = () => 200;
  #server: Server;
  port = 0;

  constructor() {
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const r: Received = {
          path: req.url ?? '',
          headers: req.headers,
          body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as WebhookEnvelope,
        };
        this.received.push(r);
        const answer = this.respond(r);
        if (answer === 'drop') {
          req.socket.destroy();
          return;
        }
        res.writeHead(answer, { 'content-type': 'text/plain' }).end('ok');
      });
    });
  }

  async listen(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.port = (this.#server.address() as AddressInfo).port;
    return this;
  }

  url(path: string): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

let dir: string;
const running: RunningSandbox[] = [];
const receivers: Receiver[] = [];
const clients: BankClient[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'remessa-webhooks-'));
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of running.splice(0)) await s.close();
  for (const r of receivers.splice(0)) await r.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Fast settings: short poll and backoff, so retries happen within milliseconds. */
const FAST: SandboxOptionsInput = {
  apiKeys: [API_KEY],
  webhookAllowLoopbackUrls: true,
  webhookPollIntervalMs: 20,
  webhookBackoffBaseMs: 10,
  webhookBackoffMaxMs: 40,
  webhookMaxAttempts: 6,
};

async function sandboxWith(options: SandboxOptionsInput = {}): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ ...FAST, ...options });
  running.push(sandbox);
  return sandbox;
}

async function receiver(): Promise<Receiver> {
  const r = await new Receiver().listen();
  receivers.push(r);
  return r;
}

function clientFor(sandbox: RunningSandbox): BankClient {
  const client = new BankClient({ baseUrl: sandbox.url, apiKey: API_KEY, accountId: '1234567', maxAttempts: 1 });
  clients.push(client);
  return client;
}

async function register(sandbox: RunningSandbox, body: Record<string, unknown>): Promise<string> {
  const res = await request(`${sandbox.url}/baas/api/v1/webhooks`, {
    method: 'POST',
    headers: { 'x-service-api-key': API_KEY, 'x-service-account-id': '1234567', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const json = (await res.body.json()) as { id: string };
  expect(res.statusCode).toBe(200);
  return json.id;
}

/** Waits until `check` holds (no timing assertion: only a generous upper bound so a bug fails instead of hanging). */
async function until(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > timeoutMs) throw new Error(`Timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

function recordPaid(sandbox: RunningSandbox, correlationId: string = randomUUID()) {
  return sandbox.ctx.events.record('CHARGE_PAID', { correlationId, amount: 12.34, status: 'Paid' });
}

describe('webhook delivery', () => {
  it('sends each authorization scheme, the envelope and a stable event id', async () => {
    const sandbox = await sandboxWith();
    const rx = await receiver();
    const schemes: Array<[string, Record<string, unknown>, string, string]> = [
      [
        '/basic-plain',
        { authorizationScheme: 'BASIC', authorization: 'user:p@ss' },
        'authorization',
        `Basic ${Buffer.from('user:p@ss').toString('base64')}`,
      ],
      [
        '/basic-encoded',
        { authorizationScheme: 'BASIC', authorization: 'dXNlcjpwYXNz' },
        'authorization',
        'Basic dXNlcjpwYXNz',
      ],
      [
        '/bearer',
        { authorizationScheme: 'BEARER', authorization: 'token-123456' },
        'authorization',
        'Bearer token-123456',
      ],
      [
        '/header-named',
        { authorizationScheme: 'HEADER', authorization: 'X-Api-Token: s3cr3t-v4lue' },
        'x-api-token',
        's3cr3t-v4lue',
      ],
      [
        '/header-raw',
        { authorizationScheme: 'HEADER', authorization: 'Token raw-v4lue' },
        'authorization',
        'Token raw-v4lue',
      ],
      ['/none', {}, 'authorization', ''],
    ];
    const ids: Record<string, string> = {};
    for (const [path, auth] of schemes) {
      ids[path] = await register(sandbox, { eventType: 'CHARGE_PAID', url: rx.url(path), ...auth });
    }
    const event = recordPaid(sandbox, 'corr-1');
    // The receiver sees a request before the sandbox has read the answer: wait for the recorded state instead.
    await until(
      () => sandbox.app.webhookDelivery.list({ eventId: event.id }).filter((d) => d.state === 'delivered').length === 6,
      'one delivery per webhook',
    );
    expect(rx.received).toHaveLength(schemes.length);

    for (const [path, , header, value] of schemes) {
      const got = rx.received.find((r) => r.path === path);
      expect(got, path).toBeDefined();
      expect(got!.headers[header] ?? '').toBe(value);
      expect(got!.headers['content-type']).toBe('application/json');
      expect(got!.headers['x-webhook-event-id']).toBe(event.id);
      expect(got!.headers['x-webhook-event-type']).toBe('CHARGE_PAID');
      expect(got!.headers['x-webhook-id']).toBe(ids[path]);
      expect(got!.headers['x-webhook-attempt']).toBe('1');
      expect(got!.body).toEqual({
        id: event.id,
        event: 'CHARGE_PAID',
        createdAt: event.occurredAt,
        data: { correlationId: 'corr-1', amount: 12.34, status: 'Paid' },
      });
    }
    const deliveries = sandbox.app.webhookDelivery.list({ eventId: event.id });
    expect(deliveries.map((d) => d.state)).toEqual(Array(schemes.length).fill('delivered'));
  });

  it('reaches a real domain name through webhookHostAddresses (strict url rules stay on)', async () => {
    const rx = await receiver();
    const sandbox = await sandboxWith({
      webhookAllowLoopbackUrls: false,
      webhookHostAddresses: { 'hooks.remessa.test': '127.0.0.1' },
    });
    await register(sandbox, { eventType: 'CHARGE_PAID', url: `http://hooks.remessa.test:${rx.port}/paid` });
    recordPaid(sandbox);
    await until(() => rx.received.length === 1, 'delivery by host override');
    expect(rx.received[0]!.headers.host).toBe(`hooks.remessa.test:${rx.port}`);
  });

  it('delivers only events of the webhook type recorded after its registration', async () => {
    const sandbox = await sandboxWith();
    const rx = await receiver();
    recordPaid(sandbox, 'before');
    await register(sandbox, { eventType: 'CHARGE_PAID', url: rx.url('/paid') });
    await register(sandbox, { eventType: 'PIX_RECEIVED', url: rx.url('/pix') });
    sandbox.ctx.events.record('CHARGE_EXPIRED', { correlationId: 'expired' });
    recordPaid(sandbox, 'after');
    await until(() => rx.received.length >= 1, 'the later event');
    await sandbox.app.webhookDelivery.runOnce();
    expect(rx.received.map((r) => [r.path, r.body.data.correlationId])).toEqual([['/paid', 'after']]);
  });

  it('delivers CHARGE_PAID and PIX_RECEIVED caused by the staging pay route', async () => {
    const sandbox = await sandboxWith();
    const rx = await receiver();
    await register(sandbox, { eventType: 'CHARGE_PAID', url: rx.url('/paid') });
    await register(sandbox, { eventType: 'PIX_RECEIVED', url: rx.url('/pix') });
    const correlationId = randomUUID();
    const res = await request(`${sandbox.url}/v1/charges`, {
      method: 'POST',
      headers: { 'x-service-api-key': API_KEY, 'content-type': 'application/json' },
      body: JSON.stringify({ type: 'PIX_STATIC', correlationId, amount: 10.5, description: 'webhook test' }),
    });
    expect(res.statusCode).toBe(200);
    await res.body.dump();
    const paid = await request(`${sandbox.url}/v1/charges/${correlationId}/pay`, {
      method: 'POST',
      headers: { 'x-service-api-key': API_KEY },
    });
    expect(paid.statusCode).toBe(200);
    await paid.body.dump();
    await until(() => rx.received.length === 2, 'both events');
    const byPath = Object.fromEntries(rx.received.map((r) => [r.path, r.body]));
    expect(byPath['/paid']?.event).toBe('CHARGE_PAID');
    expect(byPath['/pix']?.event).toBe('PIX_RECEIVED');
    expect(byPath['/paid']?.data.correlationId).toBe(correlationId);
    expect(byPath['/pix']?.data.correlationId).toBe(correlationId);
  });

  it('retries while the receiver fails (5xx, 404, dropped connection), then succeeds with the same event id', async () => {
    const sandbox = await sandboxWith();
    const rx = await receiver();
    const answers: Array<number | 'drop'> = [500, 'drop', 404, 503];
    rx.respond = () => answers.shift() ?? 200;
    const webhookId = await register(sandbox, { eventType: 'CHARGE_PAID', url: rx.url('/flaky') });
    const event = recordPaid(sandbox);
    await until(
      () => sandbox.app.webhookDelivery.list({ eventId: event.id })[0]?.state === 'delivered',
      'delivery after retries',
    );
    expect(rx.received.map((r) => r.headers['x-webhook-attempt'])).toEqual(['1', '2', '3', '4', '5']);
    expect(new Set(rx.received.map((r) => r.headers['x-webhook-event-id']))).toEqual(new Set([event.id]));
    expect(new Set(rx.received.map((r) => r.body.id))).toEqual(new Set([event.id]));
    const [delivery] = sandbox.app.webhookDelivery.list({ webhookId });
    expect(delivery).toMatchObject({ state: 'delivered', attempts: 5, lastStatus: 200, lastError: null });
  });

  it('gives up after webhookMaxAttempts and says so on the admin route', async () => {
    const sandbox = await sandboxWith({ webhookMaxAttempts: 3 });
    const rx = await receiver();
    rx.respond = () => 500;
    await register(sandbox, { eventType: 'CHARGE_PAID', url: rx.url('/down') });
    const event = recordPaid(sandbox);
    await until(
      () => sandbox.app.webhookDelivery.list({ eventId: event.id })[0]?.state === 'failed',
      'the delivery to fail for good',
    );
    await sandbox.app.webhookDelivery.runOnce();
    expect(rx.received).toHaveLength(3);
    const res = await request(`${sandbox.url}/__sandbox/webhook-deliveries?state=failed`, {
      headers: { 'x-service-api-key': API_KEY },
    });
    const listed = (await res.body.json()) as Array<{ eventId: string; attempts: number; lastStatus: number }>;
    expect(listed).toEqual([expect.objectContaining({ eventId: event.id, attempts: 3, lastStatus: 500 })]);
  });

  it('neither repeats a delivered event nor loses a pending one across a restart with a data file', async () => {
    const dataFile = join(dir, 'sandbox.db');
    const rx = await receiver();
    // A long backoff: after its first failure the pending delivery waits, so nothing is in flight at close.
    const slow = { dataFile, webhookBackoffBaseMs: 600_000, webhookBackoffMaxMs: 600_000 };
    const first = await sandboxWith(slow);
    await register(first, { eventType: 'CHARGE_PAID', url: rx.url('/hook') });
    const delivered = recordPaid(first, 'delivered-before-restart');
    await until(() => rx.received.length === 1, 'first delivery');

    rx.respond = () => 503;
    const pending = recordPaid(first, 'pending-at-restart');
    await until(
      () => first.app.webhookDelivery.list({ eventId: pending.id })[0]?.attempts === 1,
      'the failed first attempt',
    );
    await first.close();
    running.splice(running.indexOf(first), 1);
    expect(rx.received).toHaveLength(2);

    rx.respond = () => 200;
    const second = await sandboxWith(slow);
    // The schedule survived: nothing is due yet, and the delivered event is not sent again.
    expect(await second.app.webhookDelivery.runOnce()).toBe(0);
    expect(second.app.webhookDelivery.list({ eventId: pending.id })[0]).toMatchObject({
      state: 'pending',
      attempts: 1,
    });
    // "Retry now" through the admin route.
    const run = await request(`${second.url}/__sandbox/webhook-deliveries/run?ignoreBackoff=true`, {
      method: 'POST',
      headers: { 'x-service-api-key': API_KEY },
    });
    expect(await run.body.json()).toEqual({ attempts: 1 });
    expect(second.app.webhookDelivery.list({ eventId: pending.id })[0]).toMatchObject({
      state: 'delivered',
      attempts: 2,
    });

    const afterRestart = recordPaid(second, 'after-restart');
    await until(() => rx.received.some((r) => r.body.id === afterRestart.id), 'a new event after restart');
    await second.app.webhookDelivery.runOnce({ ignoreBackoff: true });
    const ids = rx.received.map((r) => r.body.id);
    expect(ids).toEqual([delivered.id, pending.id, pending.id, afterRestart.id]);
    expect(rx.received[2]?.headers['x-webhook-attempt']).toBe('2');
  });

  it('stops delivering to a deleted webhook', async () => {
    const sandbox = await sandboxWith({ webhookBackoffBaseMs: 60_000, webhookBackoffMaxMs: 60_000 });
    const rx = await receiver();
    rx.respond = () => 500;
    const id = await register(sandbox, { eventType: 'CHARGE_PAID', url: rx.url('/gone') });
    recordPaid(sandbox);
    await until(() => rx.received.length === 1, 'the first attempt');
    await clientFor(sandbox).webhooks.delete(id);
    expect(sandbox.app.webhookDelivery.list({ webhookId: id })).toEqual([]);
    await sandbox.app.webhookDelivery.runOnce();
    expect(rx.received).toHaveLength(1);
  });

  it('keeps authorization values out of the logs', async () => {
    const lines: string[] = [];
    const destination = new Writable({
      write(chunk, _enc, cb) {
        lines.push(String(chunk));
        cb();
      },
    });
    const logger = createLogger({ level: 'debug', destination });
    const sandbox = await sandboxWith({ logger, webhookMaxAttempts: 2 });
    const rx = await receiver();
    rx.respond = (r) => (r.headers['x-webhook-attempt'] === '1' ? 500 : 200);
    const secret = 'very-secret-bearer-value-42';
    await register(sandbox, {
      eventType: 'CHARGE_PAID',
      url: rx.url('/log'),
      authorizationScheme: 'BEARER',
      authorization: secret,
    });
    const event = recordPaid(sandbox);
    await until(
      () => sandbox.app.webhookDelivery.list({ eventId: event.id })[0]?.state === 'delivered',
      'delivery with one retry',
    );
    expect(rx.received[1]?.headers.authorization).toBe(`Bearer ${secret}`);
    const text = lines.join('');
    expect(text).toContain('webhook delivery failed; will retry');
    expect(text).not.toContain(secret);
  });
});
