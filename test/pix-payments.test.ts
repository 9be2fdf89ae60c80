import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { ConflictError, NotFoundError, ValidationError } from '../src/bank/errors.js';
import { buildDynamicBrCode, buildStaticBrCode, isValidEndToEndId } from '../src/formats/index.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import {
  PAYER_ADDRESS,
  PUBLIC_KEY_JSON_HEADERS,
  type RawMethod,
  rawRequest,
  sandboxPerTest,
} from './helpers/sandbox.js';

const sandboxes = sandboxPerTest({ client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let sandbox: RunningSandbox;
let client: BankClient;
let now: Date;

beforeEach(async () => {
  now = new Date('2026-11-22T12:00:00.000Z');
  ({ sandbox, client } = await sandboxes.setup({ now: () => now }));
});

const raw = (method: RawMethod, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawRequest(sandbox, method, path, body, { ...PUBLIC_KEY_JSON_HEADERS, ...headers });

const PAY_PATH = '/baas/api/v2/pix/qrcode/payment';
const init = (payload: string) => client.pixPayments.initialize(payload, randomUUID());

describe('Pix QR code payment of a dynamic QR code made by the sandbox', () => {
  it('initializes, pays once, marks the code CONCLUDED and records PIX_RECEIVED and PIX_PAYMENT_UPDATED', async () => {
    const correlationId = randomUUID();
    const qr = await client.qrCodes.createDynamic({ correlationId, amountCents: 4_990 });
    const initialization = await init(qr.qrCodePayload);
    expect(initialization).toMatchObject({
      type: 'DYNAMIC_IMMEDIATE_PAYMENT',
      initiationType: 'QR_CODE_DYNAMIC',
      allowChangeAmount: false,
      amountCents: 4_990,
      status: 'ACTIVE',
      categoryCode: '0000',
      key: sandbox.ctx.options.beneficiary.pixKey,
    });
    expect(isValidEndToEndId(initialization.endToEndId)).toBe(true);
    expect(initialization.endToEndId).toMatch(/^E38224857202611221200[A-Za-z0-9]{11}$/);
    expect(initialization.transactionId).toMatch(/^[A-Za-z0-9]{26,35}$/);

    const payment = await client.pixPayments.pay(client.pixPayments.toPaymentRequest(initialization), randomUUID());
    expect(payment).toMatchObject({
      endToEndId: initialization.endToEndId,
      status: 'PIX_PROCESSING',
      type: 'PIX_QR_CODE_DYNAMIC',
      amountCents: 4_990,
      transactionNsu: 1,
    });
    const after = await raw('GET', `/baas/api/v1/pix/qrcode/dynamic/${correlationId}`);
    expect(after.json.status).toBe('CONCLUDED');
    const received = sandbox.ctx.events.list({ type: 'PIX_RECEIVED' });
    expect(received.map((e) => e.payload.correlationId)).toEqual([correlationId]);
    const updated = sandbox.ctx.events.list({ type: 'PIX_PAYMENT_UPDATED' });
    expect(updated.map((e) => e.payload.endToEndId)).toEqual([initialization.endToEndId]);
    const fetched = await raw('GET', `${PAY_PATH}/${initialization.endToEndId}`);
    expect(fetched.json).toMatchObject({ id: payment.id, status: 'PIX_EXECUTED' });

    // A new initialization sees the code concluded; paying it is refused.
    const again = await init(qr.qrCodePayload);
    expect(again.status).toBe('CONCLUDED');
    await expect(client.pixPayments.pay(client.pixPayments.toPaymentRequest(again))).rejects.toMatchObject({
      serviceCode: 'QR_CODE_NOT_ACTIVE',
    });
  });

  it('makes the endToEndId single-use: a second payment is 409, the same idempotency key replays', async () => {
    const qr = await client.qrCodes.createDynamic({ correlationId: randomUUID(), amountCents: 100 });
    const initialization = await init(qr.qrCodePayload);
    const body = client.pixPayments.toPaymentRequest(initialization);
    const key = randomUUID();
    const first = await client.pixPayments.pay(body, key);
    const replay = await client.pixPayments.pay(body, key);
    expect(replay.id).toBe(first.id);
    const second = client.pixPayments.pay(body);
    await expect(second).rejects.toBeInstanceOf(ConflictError);
    await expect(second).rejects.toMatchObject({ serviceCode: 'END_TO_END_ID_ALREADY_USED' });
    expect(sandbox.ctx.ledger.count('pix_paid', key)).toBe(1);
  });

  it('expires the endToEndId after the TTL (900 s by default)', async () => {
    const qr = await client.qrCodes.createDynamic({ correlationId: randomUUID(), amountCents: 100 });
    const initialization = await init(qr.qrCodePayload);
    now = new Date(now.getTime() + 900_000);
    const late = client.pixPayments.pay(client.pixPayments.toPaymentRequest(initialization));
    await expect(late).rejects.toMatchObject({ serviceCode: 'END_TO_END_ID_EXPIRED' });
  });

  it('refuses a wrong amount, initiationType or transactionId (400 with the field) and an unknown endToEndId (404)', async () => {
    const qr = await client.qrCodes.createDynamic({ correlationId: randomUUID(), amountCents: 100 });
    const initialization = await init(qr.qrCodePayload);
    const base = {
      amount: 1,
      endToEndId: initialization.endToEndId,
      transactionId: initialization.transactionId,
      initiationType: 'QR_CODE_DYNAMIC',
    };
    const amount = await raw('POST', PAY_PATH, { ...base, amount: 1.5 });
    expect(amount.status).toBe(400);
    expect(amount.json.errors['$.amount'][0]).toMatch(/Expected the QR code's amount 1.00.*got 1.50/);
    const type = await raw('POST', PAY_PATH, { ...base, initiationType: 'QR_CODE_STATIC' });
    expect(type.json.errors['$.initiationType'][0]).toMatch(
      /Expected QR_CODE_DYNAMIC for a DYNAMIC_IMMEDIATE_PAYMENT QR code, got QR_CODE_STATIC/,
    );
    const tx = await raw('POST', PAY_PATH, { ...base, transactionId: 'X'.repeat(32) });
    expect(tx.json.errors['$.transactionId']).toBeDefined();
    const missing = await raw('POST', PAY_PATH, {});
    expect(Object.keys(missing.json.errors).sort()).toEqual([
      '$.amount',
      '$.endToEndId',
      '$.initiationType',
      '$.transactionId',
    ]);
    const unknown = await raw('POST', PAY_PATH, { ...base, endToEndId: 'E38224857202611221200abcdefghijk' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe('END_TO_END_ID_NOT_FOUND');
    // The endToEndId is still usable after refused attempts.
    const ok = await raw('POST', PAY_PATH, base);
    expect(ok.status).toBe(200);
  });
});

describe('static codes, charges and foreign codes', () => {
  it('a static code without amount allows any amount and can be paid many times', async () => {
    const qr = await client.qrCodes.createStatic({ correlationId: 'tips' }, randomUUID());
    for (const cents of [1_000, 2_550]) {
      const initialization = await init(qr.payloadPix);
      expect(initialization).toMatchObject({ type: 'QR_CODE_STATIC', allowChangeAmount: true, status: 'ACTIVE' });
      expect(initialization.transactionId).toBe(qr.transactionId);
      const payment = await client.pixPayments.pay(
        client.pixPayments.toPaymentRequest(initialization, { amountCents: cents }),
        randomUUID(),
      );
      expect(payment).toMatchObject({ type: 'PIX_QR_CODE_STATIC', amountCents: cents });
    }
    expect(sandbox.ctx.events.list({ type: 'PIX_RECEIVED' })).toHaveLength(2);
  });

  it('a static code with an amount does not allow a change', async () => {
    const qr = await client.qrCodes.createStatic({ correlationId: 'fixed', amountCents: 777 }, randomUUID());
    const initialization = await init(qr.payloadPix);
    expect(initialization).toMatchObject({
      allowChangeAmount: false,
      amountCents: 777,
      initiationType: 'QR_CODE_STATIC',
    });
    const wrong = await raw('POST', PAY_PATH, {
      amount: 7.78,
      endToEndId: initialization.endToEndId,
      transactionId: initialization.transactionId,
      initiationType: 'QR_CODE_STATIC',
    });
    expect(wrong.status).toBe(400);
  });

  it('paying a PIX_DYNAMIC charge pays the charge (CHARGE_PAID, PIX_RECEIVED); BANKSLIP_PIX is WITH_EXPIRATION', async () => {
    const correlationId = randomUUID();
    const charge = await client.charges.create({ type: 'PIX_DYNAMIC', correlationId, amountCents: 3_000 });
    const qrCode = (charge as { qrCode?: string }).qrCode!;
    const initialization = await init(qrCode);
    expect(initialization.type).toBe('DYNAMIC_IMMEDIATE_PAYMENT');
    await client.pixPayments.pay(client.pixPayments.toPaymentRequest(initialization), randomUUID());
    expect((await raw('GET', `/v1/charges/${correlationId}`)).json.status).toBe('Paid');
    expect(sandbox.ctx.events.list({ type: 'CHARGE_PAID' }).map((e) => e.payload.correlationId)).toEqual([
      correlationId,
    ]);
    expect(sandbox.ctx.events.list({ type: 'PIX_RECEIVED' })).toHaveLength(1);
    expect((await init(qrCode)).status).toBe('CONCLUDED');

    const slip = await client.charges.create({
      type: 'BANKSLIP_PIX',
      correlationId: randomUUID(),
      dueDate: '2026-12-01',
      amountCents: 9_900,
      payer: { name: 'Maria Silva', document: '52998224725', address: PAYER_ADDRESS },
    });
    const slipInit = await init((slip as { qrCode?: string }).qrCode!);
    expect(slipInit).toMatchObject({ type: 'DYNAMIC_PAYMENT_WITH_EXPIRATION', initiationType: 'QR_CODE_DYNAMIC' });
  });

  it('a foreign static code is payable; a foreign dynamic code is 404; a broken payload is 400', async () => {
    const foreign = buildStaticBrCode({
      key: 'joao@example.com',
      amountCents: 1_234,
      merchantName: 'Joao Padaria',
      merchantCity: 'Recife',
      txid: 'PEDIDO123',
    });
    const initialization = await init(foreign);
    expect(initialization).toMatchObject({
      key: 'joao@example.com',
      transactionId: 'PEDIDO123',
      amountCents: 1_234,
      type: 'QR_CODE_STATIC',
    });
    expect(initialization.beneficiary?.holder?.name).toBe('Joao Padaria');
    const payment = await client.pixPayments.pay(client.pixPayments.toPaymentRequest(initialization));
    expect(payment.amountCents).toBe(1_234);
    expect(sandbox.ctx.events.list({ type: 'PIX_RECEIVED' })).toHaveLength(0);

    const dynamic = buildDynamicBrCode({
      locationUrl: 'pix.example.com/qr/v2/abc',
      merchantName: 'X',
      merchantCity: 'Y',
      txid: 'a'.repeat(30),
    });
    await expect(init(dynamic)).rejects.toBeInstanceOf(NotFoundError);
    const broken = `${foreign.slice(0, -4)}0000`;
    const bad = init(broken);
    await expect(bad).rejects.toBeInstanceOf(ValidationError);
    await expect(bad).rejects.toMatchObject({ fieldErrors: { '$.payload': [expect.stringMatching(/CRC/)] } });
    const noKey = await raw('POST', '/baas/api/v2/pix/qrcode/payment-initialization', { payload: foreign });
    expect(noKey.status).toBe(400);
  });
});

describe('garbage in (property, over HTTP)', () => {
  it('an initialization of any string answers 200, 400 or 404, never a 500', async () => {
    const valid = buildStaticBrCode({ key: 'a@b.co', merchantName: 'N', merchantCity: 'C' });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.string({ maxLength: 120 }),
          fc.integer({ min: 0, max: valid.length - 1 }).map((i) => valid.slice(0, i) + 'x' + valid.slice(i + 1)),
          fc.constant(valid),
        ),
        async (payload) => {
          const res = await raw(
            'POST',
            '/baas/api/v2/pix/qrcode/payment-initialization',
            { payload },
            {
              IdempotencyKey: randomUUID(),
            },
          );
          expect([200, 400, 404]).toContain(res.status);
        },
      ),
      { numRuns: 60 },
    );
  });
});
