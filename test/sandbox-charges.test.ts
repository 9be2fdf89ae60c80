/**
 * The sandbox's charges routes (spec 4.1) over real HTTP: every route, every error path, restart with a data file.
 * Bar codes, lines and BR Codes are checked with an independent library (@brazilian-utils), not our generator.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getBoletoInfo, isValidBoleto, isValidPixPayload } from '@brazilian-utils/brazilian-utils';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addDays, bankSlipBarCodeToLine, parseBrCode } from '../src/formats/index.js';
import { createCharge, findChargeByBarCode, findChargeByTxid, markChargePaid } from '../src/sandbox/charges-store.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

const KEY = 'test-key-0123456789';
const START = new Date('2026-11-22T12:00:00.000Z');
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const PAYER = {
  name: 'Maria da Silva',
  document: '529.982.247-25',
  email: 'maria@example.com',
  phone: { prefix: '11', number: '987654321' },
  address: {
    zipCode: '01310-100',
    publicPlace: 'Avenida Paulista',
    number: '1000',
    complement: 'Sala 1',
    neighborhood: 'Bela Vista',
    city: 'São Paulo',
    state: 'SP',
  },
};

function slip(correlationId: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    type: 'BANKSLIP',
    correlationId,
    yourNumber: 'NF-1',
    dueDate: '2026-12-10',
    Amount: 150.75,
    payer: PAYER,
    ...extra,
  };
}

let sandbox: RunningSandbox;
let now: Date;
let dir: string;

interface Reply {
  status: number;
  contentType: string;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON of the service, checked field by field
  json: any;
}

async function call(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const res = await fetch(sandbox.url + path, {
    method,
    headers: {
      'x-service-api-key': KEY,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text, json };
}

async function create(body: Record<string, unknown>): Promise<Reply> {
  const r = await call('POST', '/v1/charges', body);
  if (r.status !== 200) throw new Error(`create failed: ${r.status} ${r.text}`);
  return r;
}

beforeEach(async () => {
  now = new Date(START);
  dir = mkdtempSync(join(tmpdir(), 'remessa-sandbox-charges-'));
  sandbox = await startSandbox({ apiKeys: [KEY], now: () => now });
});

afterEach(async () => {
  await sandbox.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('authentication', () => {
  it('refuses a missing or unknown key with a 401 problem, accepts configured and public keys', async () => {
    const missing = await fetch(`${sandbox.url}/v1/charges/x`);
    expect(missing.status).toBe(401);
    const body = (await missing.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ title: 'Unauthorized', status: 401 });
    expect(body.traceId).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect((await call('GET', '/v1/charges/x', undefined, { 'x-service-api-key': 'wrong' })).status).toBe(401);
    expect((await call('GET', '/v1/charges/x')).status).toBe(404);
    const pub = await call('GET', '/v1/charges/x', undefined, { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY });
    expect(pub.status).toBe(404);
    const admin = await fetch(`${sandbox.url}/__sandbox/effects`);
    expect(admin.status).toBe(401);
  });

  it('can turn the public key off', async () => {
    await sandbox.close();
    sandbox = await startSandbox({ apiKeys: [KEY], allowPublicKey: false });
    const pub = await call('GET', '/v1/charges/x', undefined, { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY });
    expect(pub.status).toBe(401);
  });
});

describe('create bank slips', () => {
  it('normal charge: wallet 112, assigned our number, valid bar code and line (independent check)', async () => {
    const { json } = await create(slip('n-1'));
    expect(json).toMatchObject({
      type: 'BANKSLIP',
      amount: 150.75,
      yourNumber: 'NF-1',
      ourNumber: '00000000001',
      correlationId: 'n-1',
      dueDate: '2026-12-10',
      status: 'Pending',
      payer: PAYER,
    });
    expect(json.createdAt).toMatch(TIMESTAMP);
    expect(json.updatedAt).toBe(json.createdAt);
    expect(json.createdAt).toBe(START.toISOString());
    expect(json.barCode).toMatch(/^435\d{41}$/);
    expect(json.digitableLine).toMatch(/^\d{47}$/);
    // Free field: agency 0001 + wallet 112 + account 1234567 + our number.
    expect(json.barCode.slice(19)).toBe('0001112123456700000000001');
    expect(bankSlipBarCodeToLine(json.barCode)).toBe(json.digitableLine);
    expect(isValidBoleto(json.digitableLine)).toBe(true);
    const info = getBoletoInfo(json.digitableLine, { referenceDate: START });
    expect(info?.amount).toBe(15075);
    expect(info?.bankCode).toBe('435');
    expect(info?.expirationDate?.toISOString().slice(0, 10)).toBe('2026-12-10');

    const second = await create(slip('n-2'));
    expect(second.json.ourNumber).toBe('00000000002');
  });

  it('express charge: wallet 121 with the client our number, padded to 11 digits; a reused our number is refused', async () => {
    const { json } = await create(slip('e-1', { ourNumber: '520637' }));
    expect(json.ourNumber).toBe('00000520637');
    expect(json.barCode.slice(19)).toBe('0001121123456700000520637');
    expect(isValidBoleto(json.digitableLine)).toBe(true);
    const again = await call('POST', '/v1/charges', slip('e-2', { ourNumber: '520637' }));
    expect(again.status).toBe(400);
    expect(Object.keys(again.json.errors)).toEqual(['$.ourNumber']);
    const bad = await call('POST', '/v1/charges', slip('e-3', { ourNumber: '12AB' }));
    expect(bad.json.errors['$.ourNumber']).toBeDefined();
  });

  it('accepts amount in lower case too, and refuses two different spellings', async () => {
    const body = slip('lc-1');
    delete body.Amount;
    const { json } = await create({ ...body, amount: 10 });
    expect(json.amount).toBe(10);
    const both = await call('POST', '/v1/charges', slip('lc-2', { amount: 11 }));
    expect(both.status).toBe(400);
    expect(both.json.errors['$.amount']).toBeDefined();
  });

  it('echoes finalBeneficiary, discount, lateFine and latePayment', async () => {
    const extra = {
      finalBeneficiary: { name: 'Avalista SA', document: '11.222.333/0001-81', address: PAYER.address },
      lateFine: { type: 'Percentage', date: '2026-12-11', amount: 2 },
      latePayment: { type: 'Fixed', date: '2026-12-11', amount: 0.5 },
    };
    const { json } = await create(slip('fb-1', extra));
    expect(json).toMatchObject(extra);
  });

  it('BANKSLIP_PIX: wallet 112, a bar code and a dynamic BR Code, Pix record fields', async () => {
    const discount = {
      type: 'Fixed',
      items: [
        { date: '2026-12-01', amount: 5 },
        { date: '2026-12-05', amount: 3 },
        { date: '2026-12-08', amount: 1 },
      ],
    };
    const { json } = await create({ ...slip('bp-1'), type: 'BANKSLIP_PIX', Amount: 99, discount });
    expect(json).toMatchObject({ type: 'BANKSLIP_PIX', status: 'Created', payments: [], discount, amount: 99 });
    expect(json.barCode.slice(23, 26)).toBe('112');
    expect(isValidBoleto(json.digitableLine)).toBe(true);
    expect(isValidPixPayload(json.qrCode)).toBe(true);
    const br = parseBrCode(json.qrCode);
    expect(br.kind).toBe('DYNAMIC');
    expect(br.amountCents).toBe(9900);
    expect(br.url).toMatch(/^pix\.sandbox\.remessa\.dev\//);
    expect(br.txid).toMatch(/^[A-Za-z0-9]{32}$/);
    const ours = await call('POST', '/v1/charges', { ...slip('bp-2'), type: 'BANKSLIP_PIX', ourNumber: '1' });
    expect(ours.json.errors['$.ourNumber']).toBeDefined();
  });
});

describe('create Pix charges', () => {
  it('PIX_STATIC without payer: static BR Code with the Pix key, status Created, payments []', async () => {
    const { json } = await create({
      type: 'PIX_STATIC',
      correlationId: 'ps-1',
      amount: 66.66,
      description: 'Pedido 42',
      additionalInfo: [{ key: 'pedido', value: 'x'.repeat(37) }],
    });
    expect(json).toMatchObject({ type: 'PIX_STATIC', status: 'Created', payments: [], amount: 66.66 });
    expect(json.payer).toBeUndefined();
    expect(isValidPixPayload(json.qrCode)).toBe(true);
    const br = parseBrCode(json.qrCode);
    expect(br.kind).toBe('STATIC');
    expect(br.key).toBe('6f0b8e9e-5d1c-4a3b-9a43-5b1f2f7c1a2e');
    expect(br.amountCents).toBe(6666);
    expect(json.createdAt).toMatch(TIMESTAMP);
  });

  it('PIX_DYNAMIC: location URL, expiresIn default 86400, reads Expired once the time has passed', async () => {
    const { json } = await create({
      type: 'PIX_DYNAMIC',
      correlationId: 'pd-1',
      amount: 10,
      payer: { name: 'Empresa X', document: '11222333000181' },
    });
    expect(json).toMatchObject({ status: 'Created', expiresIn: 86400, payer: { name: 'Empresa X' } });
    expect(json.expiresAt).toBe(new Date(START.getTime() + 86_400_000).toISOString());
    expect(isValidPixPayload(json.qrCode)).toBe(true);
    expect(parseBrCode(json.qrCode).kind).toBe('DYNAMIC');
    now = new Date(START.getTime() + 86_400_000);
    expect((await call('GET', '/v1/charges/pd-1')).json.status).toBe('Expired');
    const pay = await call('POST', '/v1/charges/pd-1/pay');
    expect(pay.status).toBe(409);
  });

  it('Pix rules use the {errors, errorMessage} shape: amount > 0, additionalInfo value <= 37 for PIX_STATIC', async () => {
    for (const amount of [0, -1, undefined]) {
      const r = await call('POST', '/v1/charges', { type: 'PIX_STATIC', correlationId: 'r-1', amount });
      expect(r.status).toBe(400);
      expect(r.json).toEqual({ errors: [expect.stringMatching(/amount/)], errorMessage: expect.any(String) });
    }
    const long = await call('POST', '/v1/charges', {
      type: 'PIX_STATIC',
      correlationId: 'r-2',
      amount: 1,
      additionalInfo: [{ key: 'k', value: 'x'.repeat(38) }],
    });
    expect(long.status).toBe(400);
    expect(long.json.errors).toHaveLength(1);
    expect(long.json.errorMessage).toMatch(/37/);
    // The 37-character limit is PIX_STATIC's only.
    const dyn = await call('POST', '/v1/charges', {
      type: 'PIX_DYNAMIC',
      correlationId: 'r-3',
      amount: 1,
      additionalInfo: [{ key: 'k', value: 'x'.repeat(38) }],
    });
    expect(dyn.status).toBe(200);
  });
});

describe('create: validation problems', () => {
  it('unparsable dueDate gives 400 with errors["$.dueDate"]', async () => {
    for (const dueDate of ['2026-13-45', 'tomorrow', '10/12/2026', 20261210]) {
      const r = await call('POST', '/v1/charges', slip('v-1', { dueDate }));
      expect(r.status).toBe(400);
      expect(r.json).toMatchObject({ title: 'One or more validation errors occurred.', status: 400 });
      expect(r.json.type).toMatch(/^https:\/\//);
      expect(r.json.traceId).toMatch(/^00-/);
      expect(Object.keys(r.json.errors)).toEqual(['$.dueDate']);
    }
    const past = await call('POST', '/v1/charges', slip('v-2', { dueDate: '2026-11-21' }));
    expect(past.json.errors['$.dueDate'][0]).toMatch(/on or after today/);
  });

  it('payer rules for bank slips: required fields, CPF/CNPJ check digits, zip code, state', async () => {
    const missing = await call('POST', '/v1/charges', slip('v-3', { payer: undefined }));
    expect(missing.json.errors['$.payer']).toBeDefined();
    const bad = await call(
      'POST',
      '/v1/charges',
      slip('v-4', {
        payer: {
          ...PAYER,
          document: '52998224724',
          email: 'nope',
          phone: { prefix: '1', number: '12' },
          address: { ...PAYER.address, zipCode: '123', state: 'XX', city: '' },
        },
      }),
    );
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.json.errors).sort()).toEqual(
      [
        '$.payer.address.city',
        '$.payer.address.state',
        '$.payer.address.zipCode',
        '$.payer.document',
        '$.payer.email',
        '$.payer.phone.number',
        '$.payer.phone.prefix',
      ].sort(),
    );
  });

  it('type, correlationId, Amount and body shape', async () => {
    const r = await call('POST', '/v1/charges', { type: 'CHEQUE', correlationId: 'a/b' });
    expect(Object.keys(r.json.errors).sort()).toEqual(['$.correlationId', '$.type']);
    const noAmount = await call('POST', '/v1/charges', slip('v-5', { Amount: undefined }));
    expect(noAmount.json.errors['$.Amount']).toBeDefined();
    const cents = await call('POST', '/v1/charges', slip('v-6', { Amount: 1.005 }));
    expect(cents.json.errors['$.Amount'][0]).toMatch(/2 decimal/);
    const notJson = await call('POST', '/v1/charges', '{"type":');
    expect(notJson.status).toBe(400);
    expect(notJson.json.errors.$).toBeDefined();
    const array = await call('POST', '/v1/charges', [1]);
    expect(array.status).toBe(400);
  });

  it('a second create with an existing correlationId is refused with 409 and changes nothing', async () => {
    await create(slip('dup-1'));
    const again = await call('POST', '/v1/charges', slip('dup-1', { Amount: 1 }));
    expect(again.status).toBe(409);
    expect(again.json).toMatchObject({ title: 'Conflict', status: 409 });
    expect((await call('GET', '/v1/charges/dup-1')).json.amount).toBe(150.75);
    const effects = await call('GET', '/__sandbox/effects?kind=charge_created&key=dup-1');
    expect(effects.json).toEqual([{ kind: 'charge_created', key: 'dup-1', count: 1 }]);
  });
});

describe('unknown correlation id', () => {
  it('gives the 404 problem on get, patch, void, stream, pay and expire', async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['GET', '/v1/charges/nope'],
      ['PATCH', '/v1/charges/nope', { dueDate: '2026-12-30' }],
      ['POST', '/v1/charges/nope/void'],
      ['GET', '/v1/charges/nope/stream'],
      ['POST', '/v1/charges/nope/pay'],
      ['PUT', '/v1/charges/nope/expire'],
    ];
    for (const [method, path, body] of routes) {
      const r = await call(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json).toEqual({
        type: 'https://tools.ietf.org/html/rfc9110#section-15.5.5',
        title: 'Not Found',
        status: 404,
        traceId: expect.stringMatching(/^00-/),
      });
    }
  });
});

describe('list', () => {
  it('filters by creation date, pages from 1 with limit default 20', async () => {
    for (let i = 1; i <= 25; i++) await create(slip(`l-${String(i).padStart(2, '0')}`));
    now = new Date('2026-11-24T10:00:00.000Z');
    await create(slip('later', { dueDate: '2026-12-20' }));

    const first = await call('GET', '/v1/charges?startDate=2026-11-22&endDate=2026-11-22');
    expect(first.status).toBe(200);
    expect(first.json).toHaveLength(20);
    expect(first.json[0].correlationId).toBe('l-01');
    const second = await call('GET', '/v1/charges?startDate=2026-11-22&endDate=2026-11-22&page=2&limit=20');
    expect(second.json.map((c: { correlationId: string }) => c.correlationId)).toEqual([
      'l-21',
      'l-22',
      'l-23',
      'l-24',
      'l-25',
    ]);
    const all = await call('GET', '/v1/charges?startDate=2026-11-01&endDate=2026-11-30&limit=100');
    expect(all.json).toHaveLength(26);
    const day = await call('GET', '/v1/charges?startDate=2026-11-24&endDate=2026-11-24');
    expect(day.json.map((c: { correlationId: string }) => c.correlationId)).toEqual(['later']);
  });

  it('limit at most 100, range at most 1 year, dates required and valid', async () => {
    const limit = await call('GET', '/v1/charges?startDate=2026-01-01&endDate=2026-01-02&limit=101');
    expect(limit.status).toBe(400);
    expect(Object.keys(limit.json.errors)).toEqual(['limit']);
    expect((await call('GET', '/v1/charges?startDate=2026-01-01&endDate=2026-01-02&limit=100')).status).toBe(200);
    const range = await call('GET', '/v1/charges?startDate=2025-01-01&endDate=2026-01-02');
    expect(Object.keys(range.json.errors)).toEqual(['endDate']);
    expect((await call('GET', '/v1/charges?startDate=2025-01-01&endDate=2026-01-01')).status).toBe(200);
    const missing = await call('GET', '/v1/charges?endDate=2026-01-01');
    expect(Object.keys(missing.json.errors)).toEqual(['startDate']);
    const bad = await call('GET', '/v1/charges?startDate=2026-02-30&endDate=2026-03-01&page=0');
    expect(Object.keys(bad.json.errors).sort()).toEqual(['page', 'startDate']);
    const reversed = await call('GET', '/v1/charges?startDate=2026-03-01&endDate=2026-02-01');
    expect(reversed.json.errors.endDate).toBeDefined();
  });
});

describe('PATCH', () => {
  it('changes the due date and other fields, recomputes bar code and line, answers text/plain', async () => {
    const created = (await create(slip('p-1'))).json;
    now = new Date('2026-11-23T08:00:00.000Z');
    const r = await call('PATCH', '/v1/charges/p-1', {
      dueDate: '2026-12-31',
      amount: 200,
      yourNumber: 'NF-2',
      walletNumber: '112',
      payer: { name: 'Maria S.', city: 'Campinas', zipCode: '13010-000' },
      lateFine: { type: 'Percentage', date: '2027-01-01', amount: 2 },
      allowPartialPayment: true,
    });
    expect(r.status).toBe(200);
    expect(r.contentType).toMatch(/^text\/plain/);
    const after = (await call('GET', '/v1/charges/p-1')).json;
    expect(after).toMatchObject({ dueDate: '2026-12-31', amount: 200, yourNumber: 'NF-2', allowPartialPayment: true });
    expect(after.payer.name).toBe('Maria S.');
    expect(after.payer.document).toBe(PAYER.document);
    expect(after.payer.address).toMatchObject({ city: 'Campinas', zipCode: '13010-000', state: 'SP' });
    expect(after.ourNumber).toBe(created.ourNumber);
    expect(after.barCode).not.toBe(created.barCode);
    const info = getBoletoInfo(after.digitableLine, { referenceDate: now });
    expect(info?.amount).toBe(20000);
    expect(info?.expirationDate?.toISOString().slice(0, 10)).toBe('2026-12-31');
    expect(after.updatedAt).toBe(now.toISOString());
    expect(after.createdAt).toBe(created.createdAt);
  });

  it('refuses bad fields, Pix charges, and paid or voided charges', async () => {
    await create(slip('p-2'));
    const bad = await call('PATCH', '/v1/charges/p-2', { dueDate: 'soon', walletNumber: '121', amount: -1 });
    expect(Object.keys(bad.json.errors).sort()).toEqual(['$.amount', '$.dueDate', '$.walletNumber']);
    const empty = await call('PATCH', '/v1/charges/p-2', {});
    expect(empty.status).toBe(400);
    await create({ type: 'PIX_STATIC', correlationId: 'p-3', amount: 1 });
    expect((await call('PATCH', '/v1/charges/p-3', { amount: 2 })).status).toBe(400);
    await call('POST', '/v1/charges/p-2/pay');
    expect((await call('PATCH', '/v1/charges/p-2', { dueDate: '2026-12-30' })).status).toBe(409);
  });
});

describe('void, staging pay, staging expire', () => {
  it('pay records CHARGE_PAID and one ledger effect; a second pay is refused', async () => {
    const created = (await create(slip('s-1'))).json;
    const r = await call('POST', '/v1/charges/s-1/pay');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'Paid', paidAt: START.toISOString() });
    expect(r.json.payments).toEqual([
      expect.objectContaining({ amount: 150.75, method: 'BANKSLIP', source: 'staging', paidAt: START.toISOString() }),
    ]);
    expect((await call('POST', '/v1/charges/s-1/pay')).status).toBe(409);
    const events = (await call('GET', '/__sandbox/events')).json;
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      type: 'CHARGE_PAID',
      occurredAt: START.toISOString(),
      payload: { correlationId: 's-1', barCode: created.barCode, amount: 150.75, status: 'Paid' },
    });
    expect(events[0].id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await call('GET', '/__sandbox/effects?kind=charge_paid')).json).toEqual([
      { kind: 'charge_paid', key: 's-1', count: 1 },
    ]);
  });

  it('pay of a Pix charge records CHARGE_PAID and PIX_RECEIVED with an end-to-end id', async () => {
    await create({ type: 'PIX_STATIC', correlationId: 's-2', amount: 5 });
    const r = await call('POST', '/v1/charges/s-2/pay', { amount: 4.5 });
    expect(r.json.payments[0]).toMatchObject({ amount: 4.5, method: 'PIX' });
    expect(r.json.payments[0].endToEndId).toMatch(/^E38224857202611221200[A-Za-z0-9]{11}$/);
    const types = (await call('GET', '/__sandbox/events')).json.map((e: { type: string }) => e.type);
    expect(types).toEqual(['CHARGE_PAID', 'PIX_RECEIVED']);
    const bad = await call('POST', '/v1/charges/s-2/pay', { amount: 0 });
    expect(bad.status).toBe(400);
  });

  it('void sets Voided; repeating is harmless; a voided charge cannot be paid; a paid one cannot be voided', async () => {
    await create(slip('s-3'));
    const v = await call('POST', '/v1/charges/s-3/void', '', { 'content-type': 'application/json' });
    expect(v.status).toBe(200);
    expect(v.json).toMatchObject({ status: 'Voided', voidedAt: START.toISOString() });
    expect((await call('POST', '/v1/charges/s-3/void')).json.status).toBe('Voided');
    expect((await call('POST', '/v1/charges/s-3/pay')).status).toBe(409);

    await create(slip('s-4'));
    await call('POST', '/v1/charges/s-4/pay');
    const refused = await call('POST', '/v1/charges/s-4/void');
    expect(refused.status).toBe(409);
    expect(refused.json.detail).toMatch(/does not undo/);
    const still = (await call('GET', '/v1/charges/s-4')).json;
    expect(still.status).toBe('Paid');
    expect(still.payments).toHaveLength(1);
  });

  it('expire moves the due date to yesterday, keeps the original, records CHARGE_EXPIRED; an expired slip is payable', async () => {
    const created = (await create(slip('s-5'))).json;
    const r = await call('PUT', '/v1/charges/s-5/expire');
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: 'Expired', dueDate: '2026-11-21', originalDueDate: '2026-12-10' });
    expect(r.json.barCode).not.toBe(created.barCode);
    expect(getBoletoInfo(r.json.digitableLine, { referenceDate: START })?.expirationDate?.toISOString()).toMatch(
      /^2026-11-21/,
    );
    expect((await call('PUT', '/v1/charges/s-5/expire')).status).toBe(200);
    const events = (await call('GET', '/__sandbox/events?type=CHARGE_EXPIRED')).json;
    expect(events).toHaveLength(1);
    expect(events[0].payload).toMatchObject({
      correlationId: 's-5',
      dueDate: '2026-11-21',
      originalDueDate: '2026-12-10',
    });
    // A PATCH with a new due date makes it payable on time again.
    const patched = await call('PATCH', '/v1/charges/s-5', { dueDate: '2026-12-15' });
    expect(JSON.parse(patched.text).status).toBe('Pending');
    expect((await call('POST', '/v1/charges/s-5/pay')).json.status).toBe('Paid');
    expect((await call('PUT', '/v1/charges/s-5/expire')).status).toBe(409);
  });

  it('expire of a Pix charge makes it unpayable', async () => {
    await create({ type: 'PIX_STATIC', correlationId: 's-6', amount: 5 });
    expect((await call('PUT', '/v1/charges/s-6/expire')).json.status).toBe('Expired');
    expect((await call('POST', '/v1/charges/s-6/pay')).status).toBe(409);
  });
});

describe('internal API for bill and Pix payments', () => {
  it('finds a charge by any bar code it carried and by txid, and marks it paid once', async () => {
    const created = (await create({ ...slip('i-1'), type: 'BANKSLIP_PIX' })).json;
    await call('PATCH', '/v1/charges/i-1', { dueDate: '2026-12-20' });
    const ctx = sandbox.ctx;
    expect(findChargeByBarCode(ctx, created.barCode)?.correlationId).toBe('i-1');
    const current = (await call('GET', '/v1/charges/i-1')).json;
    expect(findChargeByBarCode(ctx, current.barCode)?.dueDate).toBe('2026-12-20');
    const txid = parseBrCode(created.qrCode).txid!;
    expect(findChargeByTxid(ctx, txid)?.correlationId).toBe('i-1');
    expect(findChargeByBarCode(ctx, '0'.repeat(44))).toBeUndefined();

    const { charge, payment } = markChargePaid(ctx, 'i-1', { method: 'PIX', source: 'pix-payment', endToEndId: 'E1' });
    expect(charge.status).toBe('Paid');
    expect(payment.endToEndId).toBe('E1');
    expect(() => markChargePaid(ctx, 'i-1', { method: 'PIX', source: 'pix-payment' })).toThrowError(
      expect.objectContaining({ reason: 'ALREADY_PAID', status: 409 }),
    );
    expect(ctx.ledger.count('charge_paid', 'i-1')).toBe(1);
  });
});

describe('persistence', () => {
  it('keeps charges, payments, events and the our-number sequence across a restart with a data file', async () => {
    await sandbox.close();
    const dataFile = join(dir, 'sandbox.db');
    sandbox = await startSandbox({ apiKeys: [KEY], dataFile, now: () => now });
    await create(slip('k-1'));
    await call('POST', '/v1/charges/k-1/pay');
    await sandbox.close();

    sandbox = await startSandbox({ apiKeys: [KEY], dataFile, now: () => now });
    const got = await call('GET', '/v1/charges/k-1');
    expect(got.json).toMatchObject({ status: 'Paid', ourNumber: '00000000001' });
    expect(got.json.payments).toHaveLength(1);
    expect((await create(slip('k-2'))).json.ourNumber).toBe('00000000002');
    expect((await call('GET', '/__sandbox/events')).json).toHaveLength(1);
    expect((await call('POST', '/v1/charges', slip('k-1'))).status).toBe(409);
    const migrations = sandbox.db.prepare('SELECT name FROM migrations ORDER BY number').all() as Array<{
      name: string;
    }>;
    expect(migrations.map((m) => m.name)).toContain('002-charges.sql');
  });
});

describe('generated codes (property)', () => {
  it('every slip and BR Code the sandbox makes passes an independent decoder, with its amount and due date', () => {
    const usedOurNumbers = new Set<string>();
    let n = 0;
    fc.assert(
      fc.property(
        fc.constantFrom('BANKSLIP' as const, 'BANKSLIP_PIX' as const, 'PIX_STATIC' as const, 'PIX_DYNAMIC' as const),
        fc.integer({ min: 1, max: 9_999_999_999 }),
        fc.integer({ min: 0, max: 3650 }),
        fc.option(fc.integer({ min: 1, max: 99_999_999_999 }), { nil: undefined }),
        (type, amountCents, daysAhead, express) => {
          const ourNumber = type === 'BANKSLIP' && express !== undefined ? String(express) : undefined;
          fc.pre(ourNumber === undefined || !usedOurNumbers.has(ourNumber));
          if (ourNumber) usedOurNumbers.add(ourNumber);
          const dueDate = addDays('2026-11-22', daysAhead);
          const isSlip = type === 'BANKSLIP' || type === 'BANKSLIP_PIX';
          const charge = createCharge(sandbox.ctx, {
            type,
            correlationId: `prop-${n++}`,
            amountCents,
            ...(isSlip ? { dueDate } : {}),
            ...(ourNumber ? { ourNumber } : {}),
            extras: isSlip ? { payer: PAYER } : {},
            apiKeyId: 'test',
          });
          if (isSlip) {
            expect(isValidBoleto(charge.digitableLine!)).toBe(true);
            const info = getBoletoInfo(charge.digitableLine!, { referenceDate: START });
            expect(info?.amount).toBe(amountCents);
            expect(info?.expirationDate?.toISOString().slice(0, 10)).toBe(dueDate);
            expect(charge.barCode!.slice(23, 26)).toBe(ourNumber ? '121' : '112');
            if (ourNumber) expect(charge.barCode!.slice(-11)).toBe(ourNumber.padStart(11, '0'));
          }
          if (type !== 'BANKSLIP') {
            expect(isValidPixPayload(charge.qrCode!)).toBe(true);
            expect(parseBrCode(charge.qrCode!).amountCents).toBe(amountCents);
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
