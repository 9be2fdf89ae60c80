/**
 * Contract: the real bank client against the real sandbox over HTTP (port 0), every charges operation of spec 4.1
 * and its error paths.
 */
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BankClient, type Payer } from '../src/bank/client.js';
import {
  AuthenticationError,
  ConflictError,
  NotFoundError,
  RequestValidationError,
  ServiceConnectionError,
  ValidationError,
} from '../src/bank/errors.js';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

let sandbox: RunningSandbox;
let client: BankClient;
let dir: string;
let seq = 0;
const id = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${++seq}`;

const payer: Payer = {
  name: 'Maria da Silva',
  document: '52998224725',
  email: 'maria@example.com',
  phone: { prefix: '11', number: '987654321' },
  address: {
    zipCode: '01310100',
    publicPlace: 'Avenida Paulista',
    neighborhood: 'Bela Vista',
    number: '1000',
    complement: 'apto 1',
    city: 'São Paulo',
    state: 'SP',
  },
};

/** A due date some weeks ahead, yyyy-mm-dd. */
function dueIn(days: number): string {
  return new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);
}

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  // Fast retries: the sandbox answers quickly, and no test here should wait on backoff.
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, baseDelayMs: 1, maxDelayMs: 5 });
  dir = await mkdtemp(join(tmpdir(), 'remessa-bank-charges-'));
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('charges.create: every variant', () => {
  it('normal bank slip: our number assigned by the service, wallet 112, real bar code and line', async () => {
    const correlationId = id('normal');
    const charge = await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      yourNumber: 'NF-1001',
      dueDate: dueIn(30),
      amountCents: 12_345,
      payer,
    });
    expect(charge.correlationId).toBe(correlationId);
    expect(charge.status).toBe('Pending');
    expect(charge.amountCents).toBe(12_345);
    expect(charge.yourNumber).toBe('NF-1001');
    expect(charge.ourNumber).toMatch(/^\d+$/);
    expect(charge.barCode).toMatch(/^\d{44}$/);
    expect(charge.digitableLine).toMatch(/^\d{47}$/);
    expect(charge.barCode.slice(0, 3)).toBe('435');
    // Amount in cents in positions 10-19 of the bar code.
    expect(charge.barCode.slice(9, 19)).toBe('0000012345');
    expect((charge as unknown as { walletNumber?: string }).walletNumber ?? '112').toBe('112');
    expect(charge.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it('express bank slip: the client sends ourNumber, wallet 121', async () => {
    const charge = await client.charges.create({
      type: 'BANKSLIP',
      correlationId: id('express'),
      ourNumber: '98765432101',
      dueDate: dueIn(20),
      amountCents: 50_000,
      payer,
    });
    expect(charge.ourNumber).toBe('98765432101');
    expect((charge as unknown as { walletNumber?: string }).walletNumber ?? '121').toBe('121');
    expect(charge.barCode).toMatch(/^\d{44}$/);
  });

  it('bank slip with a final beneficiary', async () => {
    const correlationId = id('final');
    const charge = await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      dueDate: dueIn(15),
      amountCents: 9_990,
      payer,
      finalBeneficiary: { name: 'Empresa Garantidora SA', document: '11444777000161', address: payer.address },
    });
    expect(charge.status).toBe('Pending');
    const fetched = await client.charges.get(correlationId);
    expect(fetched.correlationId).toBe(correlationId);
    expect(fetched.amountCents).toBe(9_990);
  });

  it('BANKSLIP_PIX with discount, late fine (percent) and late payment (fixed money)', async () => {
    const due = dueIn(40);
    const charge = await client.charges.create({
      type: 'BANKSLIP_PIX',
      correlationId: id('bspix'),
      dueDate: due,
      amountCents: 100_000,
      payer,
      discount: {
        type: 'Fixed',
        items: [
          { date: dueIn(10), amountCents: 3_000 },
          { date: dueIn(20), amountCents: 2_000 },
          { date: dueIn(30), amountCents: 1_000 },
        ],
      },
      lateFine: { type: 'Percentage', date: dueIn(41), percent: 2 },
      latePayment: { type: 'Fixed', date: dueIn(41), amountCents: 150 },
    });
    expect(charge.status).toBeTruthy();
    expect(charge.amountCents).toBe(100_000);
    expect(charge.qrCode).toMatch(/^000201/);
  });

  it('PIX_STATIC without payer', async () => {
    const charge = await client.charges.create({
      type: 'PIX_STATIC',
      correlationId: id('pixs'),
      amountCents: 2_550,
      description: 'Mensalidade',
      additionalInfo: [{ key: 'pedido', value: '12345' }],
    });
    expect(charge.status).toBe('Created');
    expect(charge.qrCode).toMatch(/^000201/);
    expect(charge.payments).toEqual([]);
    expect(charge.amountCents).toBe(2_550);
  });

  it('PIX_DYNAMIC with payer and expiresIn', async () => {
    const charge = await client.charges.create({
      type: 'PIX_DYNAMIC',
      correlationId: id('pixd'),
      amountCents: 7_777,
      description: 'Pedido 777',
      expiresInSeconds: 3600,
      payer: { name: 'João Souza', document: '52998224725' },
    });
    expect(charge.status).toBe('Created');
    expect(charge.qrCode).toMatch(/^000201/);
    expect(charge.amountCents).toBe(7_777);
  });
});

describe('charges.create: refusals', () => {
  it('a second create with the same correlationId is a ConflictError', async () => {
    const correlationId = id('dup');
    await client.charges.create({ type: 'PIX_STATIC', correlationId, amountCents: 100 });
    const err = await client.charges
      .create({ type: 'PIX_STATIC', correlationId, amountCents: 100 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConflictError);
    expect((err as ConflictError).status).toBe(409);
    expect((err as ConflictError).code).toBe('SERVICE_CONFLICT');
  });

  it('an unparsable dueDate is a ValidationError with errors["$.dueDate"]', async () => {
    const err = await client.charges
      .create({ type: 'BANKSLIP', correlationId: id('baddue'), dueDate: '2026-13-45', amountCents: 100, payer })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    const v = err as ValidationError;
    expect(v.status).toBe(400);
    expect(Object.keys(v.fieldErrors)).toContain('$.dueDate');
    expect(v.traceId).toBeTruthy();
  });

  it('Pix rules come in the errors/errorMessage shape: amount 0, additionalInfo over 37 characters', async () => {
    const zero = await client.charges
      .create({ type: 'PIX_STATIC', correlationId: id('zero'), amountCents: 0 })
      .catch((e: unknown) => e);
    expect(zero).toBeInstanceOf(ValidationError);
    expect((zero as ValidationError).messages.length).toBeGreaterThan(0);
    const long = await client.charges
      .create({
        type: 'PIX_STATIC',
        correlationId: id('long'),
        amountCents: 100,
        additionalInfo: [{ key: 'k', value: 'x'.repeat(38) }],
      })
      .catch((e: unknown) => e);
    expect(long).toBeInstanceOf(ValidationError);
    expect((long as ValidationError).messages.join(' ')).toMatch(/37/);
  });

  it('a wrong API key is an AuthenticationError (401)', async () => {
    const other = new BankClient({ baseUrl: sandbox.url, apiKey: 'not-a-known-key' });
    try {
      const err = await other.charges.get('whatever').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(AuthenticationError);
      expect((err as AuthenticationError).status).toBe(401);
    } finally {
      await other.close();
    }
  });
});

describe('charges.get and 404s', () => {
  it('unknown correlation id is a NotFoundError with the 404 problem shape, on every operation', async () => {
    const unknown = id('missing');
    const attempts: Array<Promise<unknown>> = [
      client.charges.get(unknown),
      client.charges.void(unknown),
      client.charges.streamPdf(unknown, join(dir, 'missing.pdf')),
      client.charges.stagingPay(unknown),
      client.charges.stagingExpire(unknown),
    ];
    for (const p of attempts) {
      const err = await p.catch((e: unknown) => e);
      expect(err).toBeInstanceOf(NotFoundError);
      const nf = err as NotFoundError;
      expect(nf.status).toBe(404);
      expect(nf.title).toBe('Not Found');
      expect(nf.traceId).toBeTruthy();
      expect(nf.path).toContain(unknown);
    }
    expect(await readdir(dir)).toEqual([]);
  });

  it('a correlation id with characters that need escaping in a path is addressed as one segment', async () => {
    const correlationId = `${id('odd')}:a~b.c_d`;
    await client.charges.create({ type: 'PIX_STATIC', correlationId, amountCents: 123 });
    const fetched = await client.charges.get(correlationId);
    expect(fetched.correlationId).toBe(correlationId);
  });
});

describe('charges.list: paging and limits', () => {
  it('pages through the charges of a date range', async () => {
    // The day a charge was created is the bank's, Brasília's (docs/service-gaps.md "Today"), not UTC's.
    const today = brasiliaDay(new Date());
    const mine = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const c = await client.charges.create({ type: 'PIX_STATIC', correlationId: id('page'), amountCents: 100 + i });
      mine.add(c.correlationId);
    }
    const all = await client.charges.list({ startDate: today, endDate: today, page: 1, limit: 100 });
    for (const c of mine) expect(all.map((x) => x.correlationId)).toContain(c);
    const seen: string[] = [];
    for (let page = 1; page <= Math.ceil(all.length / 2) + 1; page++) {
      const items = await client.charges.list({ startDate: today, endDate: today, page, limit: 2 });
      expect(items.length).toBeLessThanOrEqual(2);
      seen.push(...items.map((x) => x.correlationId));
    }
    expect(seen.length).toBe(all.length);
    expect(new Set(seen).size).toBe(seen.length);
  });

  it('refuses limit > 100 and a range over one year before sending anything', async () => {
    // A client whose server does not exist: a refusal before sending cannot be a connection error.
    const nowhere = new BankClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'k-unused', maxAttempts: 1 });
    try {
      const tooMany = await nowhere.charges
        .list({ startDate: '2026-01-01', endDate: '2026-01-31', limit: 101 })
        .catch((e: unknown) => e);
      expect(tooMany).toBeInstanceOf(RequestValidationError);
      expect((tooMany as RequestValidationError).code).toBe('BANK_LIMIT_TOO_HIGH');
      expect((tooMany as RequestValidationError).field).toBe('limit');
      const tooLong = await nowhere.charges
        .list({ startDate: '2025-01-01', endDate: '2026-01-02' })
        .catch((e: unknown) => e);
      expect(tooLong).toBeInstanceOf(RequestValidationError);
      expect((tooLong as RequestValidationError).code).toBe('BANK_DATE_RANGE_TOO_LONG');
      const reversed = await nowhere.charges
        .list({ startDate: '2026-02-01', endDate: '2026-01-01' })
        .catch((e: unknown) => e);
      expect((reversed as RequestValidationError).code).toBe('BANK_DATE_RANGE_INVALID');
      const badDate = await nowhere.charges
        .list({ startDate: '01/02/2026', endDate: '2026-01-01' })
        .catch((e: unknown) => e);
      expect((badDate as RequestValidationError).code).toBe('BANK_DATE_INVALID');
      // The same client does try to send a valid query (and fails to connect), proving the checks ran first.
      const sent = await nowhere.charges
        .list({ startDate: '2025-01-01', endDate: '2026-01-01' })
        .catch((e: unknown) => e);
      expect(sent).toBeInstanceOf(ServiceConnectionError);
    } finally {
      await nowhere.close();
    }
  });

  it('what the client lets through but the service refuses comes back as field errors (page 0: pages are 1-based)', async () => {
    const err = await client.charges
      .list({ startDate: '2026-01-01', endDate: '2026-01-31', page: 0 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(Object.keys((err as ValidationError).fieldErrors)).toContain('page');
  });

  it('exactly one year and limit 100 are accepted by both sides', async () => {
    const items = await client.charges.list({ startDate: '2025-11-22', endDate: '2026-11-22', page: 1, limit: 100 });
    expect(Array.isArray(items)).toBe(true);
  });
});

describe('charges.patch', () => {
  it('changes the due date and the bar code is recomputed; the response is text', async () => {
    const correlationId = id('patch');
    const created = await client.charges.create({
      type: 'BANKSLIP',
      correlationId,
      dueDate: dueIn(10),
      amountCents: 4_200,
      payer,
    });
    const newDue = dueIn(25);
    const text = await client.charges.patch(correlationId, { dueDate: newDue, amountCents: 4_300 });
    expect(typeof text).toBe('string');
    const after = await client.charges.get(correlationId);
    expect(after.dueDate).toBe(newDue);
    expect(after.amountCents).toBe(4_300);
    expect(after.barCode).toMatch(/^\d{44}$/);
    expect(after.barCode).not.toBe(created.barCode);
    expect(after.digitableLine).not.toBe(created.digitableLine);
    // Due-date factor (positions 6-9) moved by the 15 days added.
    const factor = (b: string) => Number(b.slice(5, 9));
    expect(factor(after.barCode!) - factor(created.barCode)).toBe(15);
    expect(after.barCode!.slice(9, 19)).toBe('0000004300');
  });

  it('an unknown id is a NotFoundError; an invalid due date a ValidationError', async () => {
    await expect(client.charges.patch(id('nopatch'), { dueDate: dueIn(5) })).rejects.toBeInstanceOf(NotFoundError);
    const correlationId = id('patchbad');
    await client.charges.create({ type: 'BANKSLIP', correlationId, dueDate: dueIn(10), amountCents: 100, payer });
    await expect(client.charges.patch(correlationId, { dueDate: 'tomorrow' })).rejects.toBeInstanceOf(ValidationError);
  });
});

describe('charges.void, staging pay, staging expire', () => {
  it('void changes the status', async () => {
    const correlationId = id('void');
    await client.charges.create({ type: 'BANKSLIP', correlationId, dueDate: dueIn(10), amountCents: 1_000, payer });
    const result = await client.charges.void(correlationId);
    expect(result.status).toBeTruthy();
    expect(result.status).not.toBe('Pending');
    const after = await client.charges.get(correlationId);
    expect(after.status).toBe(result.status);
  });

  it('staging pay marks the charge paid, and a later void keeps the payment', async () => {
    const correlationId = id('pay');
    await client.charges.create({ type: 'BANKSLIP', correlationId, dueDate: dueIn(10), amountCents: 2_000, payer });
    const paid = await client.charges.stagingPay(correlationId);
    expect(paid.status).toMatch(/paid/i);
    expect(paid.payments?.[0]?.amountCents).toBe(2_000);
    await client.charges.void(correlationId).catch(() => undefined);
    const after = await client.charges.get(correlationId);
    expect(after.payments?.length).toBe(1);
    expect(after.payments?.[0]?.amountCents).toBe(2_000);
  });

  it('staging expire changes the status and the original due date', async () => {
    const correlationId = id('expire');
    const due = dueIn(30);
    await client.charges.create({ type: 'BANKSLIP', correlationId, dueDate: due, amountCents: 3_000, payer });
    const expired = await client.charges.stagingExpire(correlationId);
    expect(expired.status).toMatch(/expired/i);
    const after = await client.charges.get(correlationId);
    expect(after.dueDate).not.toBe(due);
  });
});

describe('charges.streamPdf', () => {
  it('streams the bank slip PDF to a file, leaving no temp file', async () => {
    const correlationId = id('pdf');
    await client.charges.create({
      type: 'BANKSLIP_PIX',
      correlationId,
      dueDate: dueIn(10),
      amountCents: 15_000,
      payer,
    });
    const sub = await mkdtemp(join(dir, 'pdf-'));
    const target = join(sub, 'slip.pdf');
    const result = await client.charges.streamPdf(correlationId, target);
    expect(result.filePath).toBe(target);
    expect(result.contentType).toMatch(/^application\/pdf/);
    const bytes = await readFile(target);
    expect(bytes.length).toBe(result.bytes);
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    expect(await readdir(sub)).toEqual(['slip.pdf']);
  });
});
