/**
 * Provider profiles (issue 12 §1): the client speaks the dialect of its profile, the sandbox serves either one with
 * the same rules, and a client of the wrong dialect is refused as a bank would refuse it (401 for its API key header,
 * 404 for its paths). What the client puts on the wire is checked on a bare HTTP server; what the sandbox does with
 * it over real HTTP on port 0.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BankClient, type BankClientOptions } from '../src/bank/client.js';
import { AuthenticationError, NotFoundError, UnexpectedResponseError } from '../src/bank/errors.js';
import { parseBody } from '../src/bank/http.js';
import {
  billPaymentSchema,
  dynamicQrSchema,
  paymentCalculationSchema,
  pixInitializationSchema,
  pixPaymentSchema,
  staticQrSchema,
} from '../src/bank/schemas.js';
import { parseBrCode } from '../src/formats/brcode.js';
import { BANK_PROFILE_DEFINITIONS, BANK_PROFILES, type BankProfileName } from '../src/formats/profiles.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { rewriteUrlFor } from '../src/sandbox/profiles.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { PAYER_ADDRESS, rawRequest } from './helpers/sandbox.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function sandboxOf(profile: BankProfileName): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ profile, webhookAllowLoopbackUrls: true });
  cleanups.push(() => sandbox.close());
  return sandbox;
}

function clientOf(baseUrl: string, options: Partial<BankClientOptions> = {}): BankClient {
  const client = new BankClient({
    baseUrl,
    apiKey: SANDBOX_PUBLIC_API_KEY,
    accountId: '1234567',
    maxAttempts: 1,
    ...options,
  });
  cleanups.push(() => client.close());
  return client;
}

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A bare HTTP server that records every request and answers `answer(url)` as JSON. */
async function recorder(answer: (url: string) => unknown): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => {
      body += c.toString('utf8');
    });
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer(req.url ?? '')));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(
    () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const PIX_REQUEST = {
  amountCents: 1050,
  endToEndId: 'E3822485720260101000000000000001',
  transactionId: 'tx1',
  initiationType: 'QR_CODE_DYNAMIC' as const,
};

describe('what the client sends, per profile', () => {
  it('delbank: its header names on every request, its paths, the payment as a transfer, no key where its clients send none', async () => {
    const { url, seen } = await recorder((u) => {
      if (u.includes('payment-initialization')) {
        return {
          endToEndId: 'E1',
          transactionId: 't',
          allowChangeAmount: false,
          type: 'QR_CODE_STATIC',
          status: 'ACTIVE',
          expirationTime: '2030-01-01T00:00:00.000Z',
        };
      }
      if (u.includes('/transfers')) return { id: 'p1', status: 'PIX_PROCESSING' };
      if (u.includes('/dynamic')) return { payloadPix: '000201...', transactionId: 'txid1' };
      if (u.includes('/static')) return { payloadPix: '000201...' };
      return { correlationId: 'c', status: 'Pending', amount: 1, barCode: 'b', digitableLine: 'd', ourNumber: '1' };
    });
    const client = clientOf(url, { profile: 'delbank' });
    const key = randomUUID();
    const init = await client.pixPayments.initialize('payload', key);
    expect(init.expiresAt).toBe('2030-01-01T00:00:00.000Z');
    await client.pixPayments.pay(PIX_REQUEST, key);
    await client.qrCodes.createDynamic({
      correlationId: randomUUID(),
      amountCents: 100,
      expiresInSeconds: 86_400,
      city: { name: 'Campinas', zipCode: '13010000' },
    });
    await client.qrCodes.createStatic({ correlationId: 'abc', additionalInformation: 'Obrigado' }, key);
    await client.charges.get('order-1');

    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /baas/api/v2/pix/qrcode/payment-initialization',
      'POST /baas/api/v2/transfers',
      'POST /baas/api/v2/pix/qrcode/dynamic',
      'POST /baas/api/v2/pix/qrcode/static',
      'GET /baas/v1/charges/order-1',
    ]);
    for (const s of seen) {
      expect(s.headers['x-delbank-api-key']).toBe(SANDBOX_PUBLIC_API_KEY);
      expect(s.headers['x-delfinance-account-id']).toBe('1234567');
      expect(s.headers['x-service-api-key']).toBeUndefined();
      expect(s.headers['x-service-account-id']).toBeUndefined();
    }
    // Keys: none on the initialization and the static QR (as the provider's clients), the caller's on the transfer.
    expect(seen.map((s) => s.headers.idempotencykey)).toEqual([undefined, key, undefined, undefined, undefined]);
    expect(JSON.parse(seen[1]!.body)).toEqual({
      amount: 10.5,
      endToEndId: PIX_REQUEST.endToEndId,
      transactionId: 'tx1',
      initiationType: 'QR_CODE_DYNAMIC',
      type: 'Pix',
      saveFavorite: false,
      tags: [],
      splitInstructions: [],
    });
    expect(JSON.parse(seen[2]!.body)).toMatchObject({
      expiresIn: '86400',
      address: { cityName: 'Campinas', zipCode: '13010000' },
    });
    expect(JSON.parse(seen[2]!.body).city).toBeUndefined();
    // The static QR as the clients send it: the payer's text as additionalInfo, and source.
    expect(JSON.parse(seen[3]!.body)).toEqual({
      type: 'PIX_STATIC',
      correlationId: 'abc',
      additionalInfo: 'Obrigado',
      source: 'QR_CODE_API',
    });
  });

  it('a dynamic QR code without expiresIn: delbank sends its clients\' default "86400", interface leaves it to the bank', async () => {
    const { url, seen } = await recorder(() => ({ payloadPix: '000201...', qrCodePayload: '000201...' }));
    await clientOf(url, { profile: 'delbank' }).qrCodes.createDynamic({
      correlationId: randomUUID(),
      amountCents: 100,
    });
    await clientOf(url).qrCodes.createDynamic({ correlationId: randomUUID(), amountCents: 100 });
    expect(JSON.parse(seen[0]!.body).expiresIn).toBe('86400');
    expect(JSON.parse(seen[1]!.body).expiresIn).toBeUndefined();
  });

  it('interface: the spec names and paths, the account id on webhooks only, keys where the spec asks', async () => {
    const { url, seen } = await recorder((u) =>
      u.includes('/webhooks') ? [] : { id: 'p1', status: 'PIX_PROCESSING', endToEndId: 'E', amount: 10.5 },
    );
    const client = clientOf(url);
    const key = randomUUID();
    await client.pixPayments.pay(PIX_REQUEST, key);
    await client.webhooks.list();
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      'POST /baas/api/v2/pix/qrcode/payment',
      'GET /baas/api/v1/webhooks',
    ]);
    expect(seen[0]!.headers['x-service-api-key']).toBe(SANDBOX_PUBLIC_API_KEY);
    expect(seen[0]!.headers['x-service-account-id']).toBeUndefined();
    expect(seen[0]!.headers.idempotencykey).toBe(key);
    expect(Object.keys(JSON.parse(seen[0]!.body)).sort()).toEqual([
      'amount',
      'endToEndId',
      'initiationType',
      'transactionId',
    ]);
    expect(seen[1]!.headers['x-service-account-id']).toBe('1234567');
  });

  it('every path and header of a profile can be overridden one by one; the rest stay the profile', async () => {
    const { url, seen } = await recorder(() => ({ id: 'p1', status: 'PIX_PROCESSING' }));
    const client = clientOf(`${url}/gw`, {
      profile: 'delbank',
      paths: { pixPayment: '/v9/pay', charge: '/c/{id}/x' },
      apiKeyHeader: 'x-my-key',
    });
    await client.pixPayments.pay(PIX_REQUEST, randomUUID());
    await client.charges.get('a/b').catch(() => undefined);
    await client.billPayments.lookup('123').catch(() => undefined);
    expect(seen.map((s) => s.url)).toEqual(['/gw/v9/pay', '/gw/c/a%2Fb/x', '/gw/baas/api/v1/bill-payments/123']);
    expect(seen[0]!.headers['x-my-key']).toBe(SANDBOX_PUBLIC_API_KEY);
    expect(seen[0]!.headers['x-delbank-api-key']).toBeUndefined();
    expect(seen[0]!.headers['x-delfinance-account-id']).toBe('1234567');
    expect(client.profile.paths.dynamicQr).toBe('/baas/api/v2/pix/qrcode/dynamic');
    expect(() => clientOf(url, { paths: { charge: 'no-slash' } })).toThrow(/starting with "\/"/);
  });
});

describe('response schemas read both spellings, and never fail an acted-on row for a field it did not need', () => {
  const res = (body: unknown) => ({
    status: 200,
    headers: {},
    contentType: 'application/json',
    body: JSON.stringify(body),
  });
  const where = { method: 'POST', path: '/x' };

  it('qrCodePayload / payloadPix, expiresAt / expirationTime, interesetAmount / interestAmount', () => {
    expect(parseBody(res({ qrCodePayload: 'P1', expiresAt: 'E1' }), dynamicQrSchema, where)).toMatchObject({
      qrCodePayload: 'P1',
      expiresAt: 'E1',
    });
    expect(
      parseBody(
        res({ payloadPix: 'P2', expirationTime: 'E2', transactionId: 'T', payloadJws: 'J' }),
        dynamicQrSchema,
        where,
      ),
    ).toMatchObject({ qrCodePayload: 'P2', expiresAt: 'E2', transactionId: 'T', payloadJws: 'J' });
    expect(parseBody(res({ qrCodePayload: 'P3' }), staticQrSchema, where).payloadPix).toBe('P3');
    const init = {
      endToEndId: 'E',
      transactionId: 'T',
      allowChangeAmount: false,
      type: 'QR_CODE_STATIC',
      status: 'ACTIVE',
    };
    expect(parseBody(res({ ...init, expirationTime: 'X' }), pixInitializationSchema, where).expiresAt).toBe('X');
    expect(parseBody(res({ ...init, expiresAt: 'Y' }), pixInitializationSchema, where).expiresAt).toBe('Y');
    expect(paymentCalculationSchema.parse({ chargedAmount: 1, interesetAmount: 0.5 }).interestAmountCents).toBe(50);
    expect(paymentCalculationSchema.parse({ chargedAmount: 1, interestAmount: 0.25 }).interestAmountCents).toBe(25);
  });

  it('a charge creation answered without status, amount or correlationId still reads; without its bar code it does not', async () => {
    let answer: unknown = {
      barCode: '1'.repeat(44),
      digitableLine: '2'.repeat(47),
      ourNumber: '9',
      amount: 'x',
      payments: 3,
    };
    const { url } = await recorder(() => answer);
    const client = clientOf(url);
    const input = {
      type: 'BANKSLIP' as const,
      correlationId: 'order-7',
      dueDate: '2030-01-10',
      amountCents: 100,
      payer: { name: 'Maria', document: '52998224725', address: PAYER_ADDRESS },
    };
    const created = await client.charges.create(input);
    expect(created).toMatchObject({ correlationId: 'order-7', ourNumber: '9', barCode: '1'.repeat(44) });
    expect(created.status).toBeUndefined();
    expect(created.amountCents).toBeUndefined();
    answer = { correlationId: 'order-7', status: 'Pending', amount: 1, ourNumber: '9' };
    await expect(client.charges.create(input)).rejects.toMatchObject({ fieldPath: '$.barCode' });
  });

  it('a payment answer with odd or missing fields it does not need still parses; without its id it does not', () => {
    const odd = {
      id: 'p1',
      status: 'PIX_PROCESSING',
      amount: 'ten',
      endToEndId: null,
      transactionNsu: 'n/a',
      payer: 'someone',
    };
    expect(parseBody(res(odd), pixPaymentSchema, where)).toEqual({ id: 'p1', status: 'PIX_PROCESSING' });
    expect(
      parseBody(
        res({ id: 7, status: 'PAID', paidAmount: 'x', beneficiary: [], paymentCalculation: {} }),
        billPaymentSchema,
        where,
      ),
    ).toEqual({ id: '7', status: 'PAID' });
    expect(parseBody(res({ payloadPix: 'P', amount: 'free', correlationId: 5 }), staticQrSchema, where)).toEqual({
      payloadPix: 'P',
    });
    expect(() => parseBody(res({ status: 'PIX_PROCESSING' }), pixPaymentSchema, where)).toThrow(
      UnexpectedResponseError,
    );
    expect(() => parseBody(res({ status: 'PENDING' }), dynamicQrSchema, where)).toThrow(/qrCodePayload or payloadPix/);
  });
});

describe.each(BANK_PROFILES)('the sandbox serving the %s profile', (profile) => {
  it('its own client gets through every area with the same rules (charge, bill, Pix payment, QR codes, webhooks)', async () => {
    const sandbox = await sandboxOf(profile);
    const client = clientOf(sandbox.url, { profile });
    const correlationId = randomUUID();
    const charge = await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      dueDate: '2030-01-10',
      amountCents: 12_345,
      payer: { name: 'Maria', document: '52998224725', address: PAYER_ADDRESS },
    });
    expect(charge.barCode).toMatch(/^\d{44}$/);
    expect((await client.charges.get(correlationId)).amountCents).toBe(12_345);

    const bill = await client.billPayments.lookup(SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.digitableLine);
    const paid = await client.billPayments.pay(bill, {
      amountCents: bill.chargedAmountCents,
      idempotencyKey: randomUUID(),
    });
    expect(paid.status).toBe('PAID');

    // delbank sends expiresIn as the string "3600"; the sandbox's edge reads it as the number.
    const dynamic = await client.qrCodes.createDynamic({
      correlationId: randomUUID(),
      amountCents: 990,
      expiresInSeconds: 3600,
    });
    expect(dynamic.qrCodePayload).toMatch(/^000201/);
    expect(dynamic.expiresIn).toBe(3600);
    if (profile === 'delbank') expect(dynamic.transactionId).toMatch(/^[0-9a-f]{32}$/);
    const found = await client.qrCodes.getDynamic(dynamic.correlationId!);
    expect(found.qrCodePayload).toBe(dynamic.qrCodePayload);

    const init = await client.pixPayments.initialize(dynamic.qrCodePayload, randomUUID());
    expect(init.expiresAt).toBeDefined();
    const payKey = randomUUID();
    const payment = await client.pixPayments.pay(client.pixPayments.toPaymentRequest(init), payKey);
    expect(payment.amountCents).toBe(990);
    // A resend with the same key is answered with the first outcome: one payment.
    const again = await client.pixPayments.pay(client.pixPayments.toPaymentRequest(init), payKey);
    expect(again.id).toBe(payment.id);
    const effects = (await rawRequest(sandbox, 'GET', '/__sandbox/effects?kind=pix_paid', undefined, {
      [BANK_PROFILE_DEFINITIONS[profile].headers.apiKey]: SANDBOX_PUBLIC_API_KEY,
    })) as { json: Array<{ count: number }> };
    expect(effects.json.map((e) => e.count)).toEqual([1]);

    const staticInput = { correlationId: `st-${randomUUID().slice(0, 8)}`, formatResponse: 'ONLY_PAYLOAD' as const };
    const staticKey = randomUUID();
    const created = await client.qrCodes.createStatic(staticInput, staticKey);
    // After an unknown outcome: replayed (interface, same key) or looked up by correlationId (delbank, no key).
    const recovered = await client.qrCodes.recoverStatic(staticInput, staticKey);
    expect(recovered?.payloadPix).toBe(created.payloadPix);
    if (profile === 'delbank') {
      // Certainly absent: undefined, so the step creates it.
      expect(await client.qrCodes.recoverStatic({ correlationId: 'never-made' }, randomUUID())).toBeUndefined();
      // The provider's clients read a static code back by its transactionIdentifier.
      expect((await client.qrCodes.getStatic(created.transactionId!)).payloadPix).toBe(created.payloadPix);
    }
    expect(await client.webhooks.list()).toEqual([]);
  });

  it('a static QR code carries the text for the payer under the name the dialect reads (additionalInfo in delbank)', async () => {
    const sandbox = await sandboxOf(profile);
    const client = clientOf(sandbox.url, { profile });
    const created = await client.qrCodes.createStatic(
      { correlationId: `msg-${randomUUID().slice(0, 8)}`, amountCents: 1500, additionalInformation: 'Obrigado' },
      randomUUID(),
    );
    expect(created.additionalInfo).toBe('Obrigado');
    expect(parseBrCode(created.payloadPix).description).toBe('Obrigado');
  });

  it("a dynamic QR code carries the row's city under the name the dialect reads (address.cityName in delbank)", async () => {
    const sandbox = await sandboxOf(profile);
    const client = clientOf(sandbox.url, { profile });
    const created = await client.qrCodes.createDynamic({
      correlationId: randomUUID(),
      amountCents: 300,
      city: { name: 'Campinas', zipCode: '13010-000' },
    });
    expect(parseBrCode(created.qrCodePayload).merchantCity).toBe('Campinas');
  });

  it("a static QR code's payments are listed at .../static/{id}/payments, with the dialect's time field", async () => {
    const sandbox = await sandboxOf(profile);
    const client = clientOf(sandbox.url, { profile });
    const correlationId = `pay-${randomUUID().slice(0, 8)}`;
    const created = await client.qrCodes.createStatic({ correlationId, amountCents: 700 }, randomUUID());
    const init = await client.pixPayments.initialize(created.payloadPix, randomUUID());
    const payment = await client.pixPayments.pay(client.pixPayments.toPaymentRequest(init), randomUUID());
    const headers = { [BANK_PROFILE_DEFINITIONS[profile].headers.apiKey]: SANDBOX_PUBLIC_API_KEY };
    const list = await rawRequest(
      sandbox,
      'GET',
      `/baas/api/v2/pix/qrcode/static/${created.transactionId}/payments`,
      undefined,
      headers,
    );
    expect(list.status).toBe(200);
    const time = profile === 'delbank' ? 'createdAt' : 'receivedAt';
    expect(list.json).toEqual([
      { endToEndId: payment.endToEndId, correlationId, amount: 7, [time]: expect.any(String) },
    ]);
  });

  it('refuses a client of the other dialect as a bank would: 401 for its API key header, 404 for its paths', async () => {
    const sandbox = await sandboxOf(profile);
    const other: BankProfileName = profile === 'interface' ? 'delbank' : 'interface';
    const wrong = clientOf(sandbox.url, { profile: other });
    await expect(wrong.charges.get('x')).rejects.toBeInstanceOf(AuthenticationError);
    await expect(wrong.webhooks.list()).rejects.toMatchObject({ status: 401 });
    // Right header name, wrong paths: the charges and the dynamic QR codes live elsewhere in this dialect.
    const renamed = clientOf(sandbox.url, {
      profile: other,
      apiKeyHeader: BANK_PROFILE_DEFINITIONS[profile].headers.apiKey,
    });
    const correlationId = randomUUID();
    await expect(renamed.qrCodes.createDynamic({ correlationId, amountCents: 100 })).rejects.toBeInstanceOf(
      NotFoundError,
    );
    await expect(renamed.charges.list({ startDate: '2030-01-01', endDate: '2030-01-02' })).rejects.toMatchObject({
      status: 404,
    });
    // Nothing was created by the refused calls.
    const own = clientOf(sandbox.url, { profile });
    await expect(own.qrCodes.getDynamic(correlationId)).rejects.toBeInstanceOf(NotFoundError);
  });
});

describe('the sandbox edge', () => {
  it('rewrites delbank paths onto the one implementation and hides the interface-only ones', () => {
    const rewrite = rewriteUrlFor('delbank', '/baas/api/v2/pix/qrcode/payment');
    expect(rewrite('/baas/v1/charges/abc/void?x=1')).toBe('/v1/charges/abc/void?x=1');
    expect(rewrite('/baas/api/v2/pix/qrcode/dynamic/abc')).toBe('/baas/api/v1/pix/qrcode/dynamic/abc');
    expect(rewrite('/baas/api/v2/transfers')).toBe('/baas/api/v2/pix/qrcode/payment');
    expect(rewrite('/baas/api/v2/transfers/9')).toBe('/baas/api/v2/pix/qrcode/payment/9');
    expect(rewrite('/baas/api/v1/bill-payments/1')).toBe('/baas/api/v1/bill-payments/1');
    expect(rewrite('/v1/charges')).not.toBe('/v1/charges');
    expect(rewrite('/baas/api/v2/pix/qrcode/payment')).not.toBe('/baas/api/v2/pix/qrcode/payment');
    expect(rewrite('/v1/chargesX')).toBe('/v1/chargesX');
    expect(rewriteUrlFor('interface', '/p')('/baas/v1/charges')).toBe('/baas/v1/charges');
  });

  it('delbank: a static QR and an initialization without key are served; the spec account header is ignored', async () => {
    const sandbox = await sandboxOf('delbank');
    const headers = { 'x-delbank-api-key': SANDBOX_PUBLIC_API_KEY };
    const st = await rawRequest(
      sandbox,
      'POST',
      '/baas/api/v2/pix/qrcode/static',
      { correlationId: 'k1', source: 'QR_CODE_API' },
      headers,
    );
    expect(st.status).toBe(200);
    const init = await rawRequest(
      sandbox,
      'POST',
      '/baas/api/v2/pix/qrcode/payment-initialization',
      { payload: st.json.payloadPix },
      headers,
    );
    expect(init.status).toBe(200);
    expect(init.json.expirationTime).toBeDefined();
    expect(init.json.expiresAt).toBeUndefined();
    const hook = { eventType: 'CHARGE_PAID', url: 'https://hooks.example.com/x' };
    const ownKey = { 'x-delbank-api-key': 'a-private-key-1' };
    const sandbox2 = await startSandbox({ profile: 'delbank', apiKeys: ['a-private-key-1'] });
    cleanups.push(() => sandbox2.close());
    const refused = await rawRequest(sandbox2, 'POST', '/baas/api/v1/webhooks', hook, {
      ...ownKey,
      'x-service-account-id': '1',
    });
    expect(refused.status).toBe(400);
    const accepted = await rawRequest(sandbox2, 'POST', '/baas/api/v1/webhooks', hook, {
      ...ownKey,
      'x-delfinance-account-id': '1',
    });
    expect(accepted.status).toBeLessThan(300);
  });
});
