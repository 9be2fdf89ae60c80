/**
 * A charge changed by a `charge-updates` row (its Seu número, its payer) is reported in the retorno as the bank now
 * holds it: the clerk who changed NF-10 to NF-10A finds the payment under NF-10A, paid by the payer the slip now
 * names. A line already written keeps what it said when it was written (rule 4 of src/store/things.ts). A real store,
 * the sandbox over HTTP on a clock of the test's.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import type { StepOutput } from '../src/batches/kind.js';
import { createLogger } from '../src/log.js';
import { retornoPass } from '../src/runner/retorno.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { openStore, type Store } from '../src/store/index.js';
import { Things } from '../src/store/things.js';
import { insertWebhookEvent } from '../src/store/webhook-events.js';
import type { KindName } from '../src/types.js';

const silent = createLogger({ level: 'silent' });
let dir: string;
let store: Store;
let sandbox: RunningSandbox;
let client: BankClient;
let clock: Date;

beforeEach(async () => {
  clock = new Date('2026-11-23T12:00:00.000Z');
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-retorno-updates-'));
  sandbox = await startSandbox({ port: 0, now: () => clock, claimFixtures: false });
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 });
  store = await openStore(path.join(dir, 'store.sqlite'), { now: () => clock });
});

afterEach(async () => {
  await store.close();
  await client.close();
  await sandbox.close();
  await fs.rm(dir, { recursive: true, force: true });
});

/** One succeeded row of `kind`, as the engine stores it. */
async function succeeded(kind: KindName, parsed: unknown, outputs: StepOutput, amountCents = 10_000): Promise<void> {
  const batchId = `b-${randomUUID()}`;
  await store.createBatch({
    id: batchId,
    kind,
    fileName: `${kind}.csv`,
    dialect: { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false, lineEnding: '\n' },
    header: ['x'],
  });
  await store.ingest(batchId, [
    {
      line: 2,
      record: { x: '1' },
      valid: true as const,
      parsed,
      naturalKey: randomUUID(),
      idempotencyKey: randomUUID(),
      amountCents,
    },
  ]);
  await store.finishIngest(batchId, 'send-valid');
  await store.recordIntent(batchId, 2, 'step');
  await store.recordStepDone(batchId, 2, 'step', outputs, true);
}

async function staging(route: string, body: unknown = {}): Promise<void> {
  const res = await fetch(`${sandbox.url}${route}`, {
    method: route.endsWith('/expire') ? 'PUT' : 'POST',
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status, await res.text()).toBe(200);
}

const pass = () =>
  retornoPass({
    store,
    client,
    outboxDir: path.join(dir, 'outbox'),
    logger: silent,
    reconcile: true,
    now: () => clock,
  });

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
  const created = await client.charges.create(input);
  await succeeded('charges', { input }, { chargeStatus: 'Pending', ourNumber: created.ourNumber ?? null });
  // Expired on its date: a line under the Seu número and payer of the day.
  clock = new Date('2026-11-26T12:00:00.000Z');
  await staging('/v1/charges/UPD-1/expire');
  expect((await pass()).changes).toBe(1);

  // The clerk gives it a new due date, Seu número and payer; the bank holds them.
  clock = new Date('2026-11-27T12:00:00.000Z');
  const patch = {
    dueDate: '2026-12-10',
    amountCents: 12_000,
    yourNumber: 'NF-10A',
    payer: { name: 'Padaria Pão de Ló', document: '11222333000181' },
  };
  await client.charges.patch('UPD-1', patch);
  await succeeded('charge-updates', { correlationId: 'UPD-1', patch }, { chargeStatus: 'Pending' });
  clock = new Date('2026-11-28T12:00:00.000Z');
  // Paid in part: 50,00 of the 120,00 it now asks.
  await staging('/v1/charges/UPD-1/pay', { amount: 50 });
  await pass();

  const things = new Things(store, { now: () => clock });
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
  const file = await fs.readFile(path.join(dir, 'outbox', 'retorno', '2026-11-28.csv'), 'utf8');
  const [header, , paid] = file
    .trim()
    .split('\n')
    .map((l) => l.split(','));
  expect(paid![header!.indexOf('amount')]).toBe('120.00');
  expect(paid![header!.indexOf('paidAmount')]).toBe('50.00');
});

it('a CHARGE_PAID whose payment gives no amount leaves paidAmount empty, not the charge`s amount', async () => {
  const input = { type: 'PIX_DYNAMIC' as const, correlationId: 'UPD-2', amountCents: 60_000, expiresInSeconds: 86_400 };
  await client.charges.create(input);
  await succeeded('charges', { input }, { chargeStatus: 'Created' }, 60_000);
  await pass();
  // The charge's `amount` is what it asked (600,00); its payment, of a bank that did not say how much, 250,50.
  const payload = {
    id: 'ev-no-amount',
    event: 'CHARGE_PAID',
    createdAt: '2026-11-23T12:30:00.000Z',
    data: { correlationId: 'UPD-2', status: 'Paid', amount: 600, payment: { paidAt: '2026-11-23T12:30:00.000Z' } },
  };
  await insertWebhookEvent(store, {
    id: payload.id,
    type: payload.event,
    correlationId: 'UPD-2',
    occurredAt: payload.createdAt,
    receivedAt: clock.toISOString(),
    payload: JSON.stringify(payload),
  });
  await retornoPass({ store, outboxDir: path.join(dir, 'outbox'), logger: silent, now: () => clock });
  const [line] = await new Things(store, { now: () => clock }).changesOfDay('2026-11-23');
  expect([line?.newStatus, line?.amountCents, line?.paidCents]).toEqual(['Paid', 60_000, undefined]);
});
