/**
 * "Exactly once" through faults: the real client against the sandbox with its fault injector. A keyed request whose
 * answer is lost is resent with the same key and the bank acts once; a keyless one is never resent blind.
 * The sandbox's effects ledger counts what the bank did.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { ServiceConnectionError } from '../src/bank/errors.js';
import type { FaultRuleInput } from '../src/sandbox/faults.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

let sandbox: RunningSandbox;
let client: BankClient;
const sleeps: number[] = [];

async function setFaults(rules: FaultRuleInput[]): Promise<void> {
  const res = await fetch(`${sandbox.url}/__sandbox/faults`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json', 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
    body: JSON.stringify({ rules, seed: 7 }),
  });
  expect(res.status).toBe(200);
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  client = new BankClient({
    baseUrl: sandbox.url,
    apiKey: SANDBOX_PUBLIC_API_KEY,
    maxAttempts: 3,
    // Short enough for the hang fault to end fast, long enough for a loaded test machine.
    headersTimeoutMs: 2_000,
    // No real waiting between attempts: the decision is what is under test, not the clock.
    sleep: async (ms) => {
      sleeps.push(ms);
    },
  });
});

afterEach(async () => {
  sleeps.length = 0;
  await setFaults([]);
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
});

const STATIC = 'POST /baas/api/v2/pix/qrcode/static';
const DYNAMIC = 'POST /baas/api/v1/pix/qrcode/dynamic';

describe('keyed requests: resent with the same key, the bank acts once', () => {
  it('static QR: the answer is lost after the commit, the retry gets the stored answer', async () => {
    await setFaults([{ route: STATIC, dropAfterCommitRate: 1, times: 1 }]);
    const key = randomUUID();
    const qr = await client.qrCodes.createStatic({ correlationId: randomUUID(), amountCents: 1_990 }, key);
    expect(qr.payloadPix).toMatch(/^000201/);
    expect(qr.amountCents).toBe(1_990);
    expect(sleeps).toHaveLength(1);
    expect(sandbox.ctx.ledger.count('qr_created', key)).toBe(1);
  });

  it('static QR: a reset, a 503 and a hang are each resent; one creation', async () => {
    for (const rule of [
      { route: STATIC, resetRate: 1, times: 1 },
      { route: STATIC, errorRate: 1, errorStatuses: [503 as const], times: 1 },
      { route: STATIC, hangRate: 1, times: 1 },
    ]) {
      await setFaults([rule]);
      const key = randomUUID();
      await client.qrCodes.createStatic({ correlationId: randomUUID(), amountCents: 500 }, key);
      expect(sandbox.ctx.ledger.count('qr_created', key)).toBe(1);
    }
  });

  it('bill payment of a sandbox slip: the answer is lost, the retry replays it, the slip is paid once', async () => {
    const correlationId = `eo-${Date.now().toString(36)}`;
    const due = new Date(Date.now() + 10 * 86_400_000).toISOString().slice(0, 10);
    const charge = await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      dueDate: due,
      amountCents: 25_000,
      payer: {
        name: 'Ana Lima',
        document: '52998224725',
        address: { zipCode: '01310100', publicPlace: 'Av Paulista', city: 'São Paulo', state: 'SP' },
      },
    });
    const bill = await client.billPayments.lookup(charge.digitableLine);
    expect(bill.status).toBe('PENDING_PAYMENT');
    expect(bill.amountCents).toBe(25_000);
    await setFaults([{ route: 'POST /baas/api/v1/bill-payments', dropAfterCommitRate: 1, times: 1 }]);
    const key = randomUUID();
    const paid = await client.billPayments.pay(bill, { amountCents: bill.chargedAmountCents, idempotencyKey: key });
    expect(paid.id).toBeTruthy();
    expect(sleeps).toHaveLength(1);
    expect(sandbox.ctx.ledger.count('bill_paid', key)).toBe(1);
    const after = await client.charges.get(correlationId);
    expect(after.status).toMatch(/paid/i);
    expect(after.payments).toHaveLength(1);
  });
});

describe('keyless requests: never resent when the outcome is unknown', () => {
  it('dynamic QR: the answer is lost after the commit; the client reports it may have happened', async () => {
    await setFaults([{ route: DYNAMIC, dropAfterCommitRate: 1, times: 1 }]);
    const correlationId = randomUUID();
    const err = await client.qrCodes.createDynamic({ correlationId, amountCents: 1_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServiceConnectionError);
    expect((err as ServiceConnectionError).mayHaveReachedServer).toBe(true);
    expect(sleeps).toHaveLength(0);
    // The bank did act, once: the caller recovers by correlationId instead of resending.
    expect(sandbox.ctx.ledger.count('qr_created', correlationId)).toBe(1);
  });

  it('dynamic QR: a 429 is resent after Retry-After (nothing was processed); one creation', async () => {
    await setFaults([{ route: DYNAMIC, rateLimitRate: 1, retryAfterSeconds: 2, times: 1 }]);
    const correlationId = randomUUID();
    const qr = await client.qrCodes.createDynamic({ correlationId, amountCents: 1_000 });
    expect(qr.qrCodePayload).toMatch(/^000201/);
    expect(sleeps).toEqual([2000]);
    expect(sandbox.ctx.ledger.count('qr_created', correlationId)).toBe(1);
  });

  it('dynamic QR: a 503 is not resent (the outcome is unknown to the client)', async () => {
    await setFaults([{ route: DYNAMIC, errorRate: 1, errorStatuses: [503], times: 1 }]);
    const correlationId = randomUUID();
    await expect(client.qrCodes.createDynamic({ correlationId, amountCents: 1_000 })).rejects.toMatchObject({
      code: 'SERVICE_SERVER_ERROR',
      status: 503,
    });
    expect(sleeps).toHaveLength(0);
  });
});
