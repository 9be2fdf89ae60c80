import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BankClient, type BankClientOptions } from '../src/bank/client.js';
import { RateLimitedError, ServerError, ServiceConnectionError, ServiceTimeoutError } from '../src/bank/errors.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { createFaultInjector, FAULTS_ADMIN_PREFIX, type FaultRuleInput, routeMatches } from '../src/sandbox/faults.js';
import { SANDBOX_ADMIN_PREFIX, type SandboxOptionsInput } from '../src/sandbox/options.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

const PAY = 'POST /baas/api/v1/bill-payments';
const LOOKUP = 'GET /baas/api/v1/bill-payments/:paymentIdentifier';
const LINE = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.digitableLine;

let sandbox: RunningSandbox | undefined;
const clients: BankClient[] = [];

async function start(options: SandboxOptionsInput = {}): Promise<RunningSandbox> {
  sandbox = await startSandbox({ now: () => new Date('2026-11-22T12:00:00.000Z'), ...options });
  return sandbox;
}

function clientFor(s: RunningSandbox, options: Partial<BankClientOptions> = {}): BankClient {
  const c = new BankClient({
    baseUrl: s.url,
    apiKey: SANDBOX_PUBLIC_API_KEY,
    maxAttempts: 1,
    sleep: async () => {},
    ...options,
  });
  clients.push(c);
  return c;
}

async function setFaults(s: RunningSandbox, rules: FaultRuleInput[], seed?: number) {
  const res = await request(`${s.url}/__sandbox/faults`, {
    method: 'PUT',
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify(seed === undefined ? { rules } : { rules, seed }),
  });
  return { status: res.statusCode, json: (await res.body.json()) as Record<string, unknown> };
}

beforeEach(() => {
  sandbox = undefined;
});
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  await sandbox?.close();
});

describe('fault decisions', () => {
  it('are replayable: the same seed and requests give the same faults', () => {
    const rules: FaultRuleInput[] = [{ route: '*', errorRate: 0.3, rateLimitRate: 0.2, resetRate: 0.1 }];
    const run = (seed: number) => {
      const injector = createFaultInjector(rules, seed);
      return Array.from({ length: 200 }, () => {
        const d = injector.decide('GET', '/x', '/x');
        return `${d?.kind ?? 'none'}${d?.errorStatus ?? ''}`;
      });
    };
    expect(run(42)).toEqual(run(42));
    expect(run(42)).not.toEqual(run(43));
    const kinds = new Set(run(42));
    for (const k of ['none', 'error500', 'error503', 'rateLimit', 'reset']) expect(kinds).toContain(k);
  });

  it('use the admin prefix of the options', () => {
    expect(FAULTS_ADMIN_PREFIX).toBe(SANDBOX_ADMIN_PREFIX);
  });

  it('match routes by pattern and method, and `times` spends a rule', () => {
    expect(routeMatches('*', 'GET', undefined, '/a')).toBe(true);
    expect(routeMatches(PAY, 'POST', '/baas/api/v1/bill-payments', '/baas/api/v1/bill-payments')).toBe(true);
    expect(routeMatches(PAY, 'GET', '/baas/api/v1/bill-payments', '/baas/api/v1/bill-payments')).toBe(false);
    expect(routeMatches('/baas/api/v1/bill-payments/:paymentIdentifier', 'GET', LOOKUP.slice(4), '/x')).toBe(true);
    const injector = createFaultInjector([{ route: '*', errorRate: 1, times: 2 }]);
    expect(injector.decide('GET', '/a', '/a')?.kind).toBe('error');
    expect(injector.decide('GET', '/a', '/a')?.kind).toBe('error');
    expect(injector.decide('GET', '/a', '/a')).toBeUndefined();
  });
});

describe('each fault as the client sees it', () => {
  it('500 and 503 are ServerError; nothing was done', async () => {
    const s = await start({ faults: [{ route: LOOKUP, errorRate: 1, errorStatuses: [503] }] });
    const err = await clientFor(s)
      .billPayments.lookup(LINE)
      .catch((e) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect(err.status).toBe(503);
    await setFaults(s, [{ route: LOOKUP, errorRate: 1, errorStatuses: [500] }]);
    await expect(clientFor(s).billPayments.lookup(LINE)).rejects.toMatchObject({ status: 500 });
  });

  it('429 is RateLimitedError with retryAfterMs from Retry-After', async () => {
    const s = await start({ faults: [{ route: '*', rateLimitRate: 1, retryAfterSeconds: 7 }] });
    const err = await clientFor(s)
      .billPayments.lookup(LINE)
      .catch((e) => e);
    expect(err).toBeInstanceOf(RateLimitedError);
    expect(err.retryAfterMs).toBe(7_000);
  });

  it('a reset before processing is ServiceConnectionError and nothing happened', async () => {
    const s = await start({ faults: [{ route: PAY, resetRate: 1 }] });
    const c = clientFor(s);
    const bill = await c.billPayments.lookup(LINE);
    const key = randomUUID();
    const err = await c.billPayments.pay(bill, { amountCents: 15_000, idempotencyKey: key }).catch((e) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect(err.mayHaveReachedServer).toBe(true);
    expect(s.ctx.ledger.count('bill_paid', key)).toBe(0);
  });

  it('a drop after commit is ServiceConnectionError(mayHaveReachedServer); the retry with the same key replays', async () => {
    const s = await start({ faults: [{ route: PAY, dropAfterCommitRate: 1, times: 1 }] });
    const once = clientFor(s);
    const bill = await once.billPayments.lookup(LINE);
    const key = randomUUID();
    const err = await once.billPayments.pay(bill, { amountCents: 15_000, idempotencyKey: key }).catch((e) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect(err.mayHaveReachedServer).toBe(true);
    expect(s.ctx.ledger.count('bill_paid', key)).toBe(1);
    // The client never heard, so it retries with the same key: the sandbox replays the stored answer.
    const paid = await clientFor(s, { maxAttempts: 3 }).billPayments.pay(bill, {
      amountCents: 15_000,
      idempotencyKey: key,
    });
    expect(paid.status).toBe('PAID');
    expect(s.ctx.ledger.count('bill_paid', key)).toBe(1);
  });

  it('the client retries transient faults with the same key and the effect happens exactly once', async () => {
    const s = await start({
      faults: [{ route: PAY, errorRate: 0.3, rateLimitRate: 0.2, dropAfterCommitRate: 0.3, retryAfterSeconds: 0 }],
      faultSeed: 7,
    });
    const c = clientFor(s, { maxAttempts: 20 });
    const bill = await c.billPayments.lookup(LINE);
    const key = randomUUID();
    const paid = await c.billPayments.pay(bill, { amountCents: 15_000, idempotencyKey: key });
    expect(paid.status).toBe('PAID');
    expect(s.ctx.ledger.count('bill_paid', key)).toBe(1);
  });

  it('a hang is a ServiceTimeoutError; close() still ends the hung connection', async () => {
    const s = await start({ faults: [{ route: LOOKUP, hangRate: 1 }] });
    const err = await clientFor(s, { headersTimeoutMs: 300 })
      .billPayments.lookup(LINE)
      .catch((e) => e);
    expect(err).toBeInstanceOf(ServiceTimeoutError);
    expect(err.mayHaveReachedServer).toBe(true);
  });

  it('latency delays without failing; a duplicate sent while the answer is held gets that committed answer', async () => {
    const s = await start({ faults: [{ route: PAY, latencyMs: 20, responseLatencyMs: 400 }] });
    const key = randomUUID();
    const send = () =>
      request(`${s.url}/baas/api/v1/bill-payments`, {
        method: 'POST',
        headers: {
          'x-service-api-key': SANDBOX_PUBLIC_API_KEY,
          'content-type': 'application/json',
          IdempotencyKey: key,
        },
        body: JSON.stringify({ amount: 150, digitableLine: LINE }),
      });
    const first = send();
    await new Promise((r) => setTimeout(r, 150));
    const second = await send();
    // The payment and its key's answer committed together (src/sandbox/idempotency.ts): the duplicate is answered
    // with the first outcome at once, not told to wait, and nothing is paid twice.
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    const replayed = await second.body.text();
    const answered = await first;
    expect(answered.statusCode).toBe(200);
    expect(await answered.body.text()).toBe(replayed);
  });
});

describe('admin route', () => {
  it('sets, reports, validates and clears rules; admin routes are never faulted', async () => {
    const s = await start();
    const set = await setFaults(s, [{ route: '*', errorRate: 1, times: 3 }], 99);
    expect(set.status).toBe(200);
    expect(set.json).toMatchObject({ seed: 99, rules: [{ route: '*', errorRate: 1, times: 3, remaining: 3 }] });
    await expect(clientFor(s).billPayments.lookup(LINE)).rejects.toBeInstanceOf(ServerError);
    const state = await request(`${s.url}/__sandbox/faults`, {
      headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
    });
    expect(((await state.body.json()) as { rules: Array<{ remaining: number }> }).rules[0]!.remaining).toBe(2);
    const bad = await setFaults(s, [{ route: '*', errorRate: 0.8, hangRate: 0.5 }]);
    expect(bad.status).toBe(400);
    const cleared = await request(`${s.url}/__sandbox/faults`, {
      method: 'DELETE',
      headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
    });
    expect(((await cleared.body.json()) as { rules: unknown[] }).rules).toEqual([]);
    expect((await clientFor(s).billPayments.lookup(LINE)).status).toBe('PENDING_PAYMENT');
  });
});
