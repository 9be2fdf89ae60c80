import { randomUUID } from 'node:crypto';
import { isValidPixPayload } from '@brazilian-utils/brazilian-utils';
import fc from 'fast-check';
import jsQRModule from 'jsqr';
import { PNG } from 'pngjs';
import { beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { ConflictError, IdempotencyError, ValidationError } from '../src/bank/errors.js';
import { parseBrCode } from '../src/formats/index.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { PUBLIC_KEY_JSON_HEADERS, type RawMethod, rawRequest, sandboxPerTest } from './helpers/sandbox.js';

// jsqr is CommonJS typed as `export default`: under NodeNext the default import is the module itself at run time.
const jsQR = ((jsQRModule as unknown as { default?: typeof jsQRModule }).default ?? jsQRModule) as unknown as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;

const sandboxes = sandboxPerTest({ client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let sandbox: RunningSandbox;
let client: BankClient;
let now: Date;

beforeEach(async () => {
  now = new Date('2026-11-22T10:00:00.000Z');
  ({ sandbox, client } = await sandboxes.setup({ now: () => now }));
});

function decodePng(png: Buffer): { width: number; height: number; text: string | undefined } {
  const image = PNG.sync.read(png);
  const code = jsQR(new Uint8ClampedArray(image.data), image.width, image.height);
  return { width: image.width, height: image.height, text: code?.data };
}

const raw = (method: RawMethod, path: string, body?: unknown, headers: Record<string, string> = {}) =>
  rawRequest(sandbox, method, path, body, { ...PUBLIC_KEY_JSON_HEADERS, ...headers });

describe('dynamic QR code (v1)', () => {
  it('creates a PENDING charge whose payload is a valid dynamic BR Code and whose image decodes to it', async () => {
    const correlationId = randomUUID();
    const qr = await client.qrCodes.createDynamic({
      correlationId,
      amountCents: 12_345,
      description: 'order 17',
      formatResponse: 'PAYLOAD_AND_QRCODE',
      payer: { name: 'Maria Silva', document: '52998224725' },
      city: { name: 'Curitiba', zipCode: '80010000' },
    });
    expect(qr.status).toBe('PENDING');
    expect(qr.amountCents).toBe(12_345);
    expect(qr.expiresIn).toBe(86_400);
    expect(qr.createdAt).toBe('2026-11-22T10:00:00.000Z');
    expect(qr.expiresAt).toBe('2026-11-23T10:00:00.000Z');
    const parsed = parseBrCode(qr.qrCodePayload);
    expect(parsed.kind).toBe('DYNAMIC');
    expect(parsed.pointOfInitiation).toBe('12');
    expect(parsed.amountCents).toBe(12_345);
    expect(parsed.merchantCity).toBe('Curitiba');
    expect(isValidPixPayload(qr.qrCodePayload)).toBe(true);
    const image = decodePng(Buffer.from(qr.qrCodeImageBase64!, 'base64'));
    expect(image.width).toBe(250);
    expect(image.height).toBe(250);
    expect(image.text).toBe(qr.qrCodePayload);
  });

  it('honours expiresIn, sends no image by default, accepts the zipcode spelling and answers on /baas/api/v1/charges', async () => {
    const correlationId = randomUUID();
    const res = await raw('POST', '/baas/api/v1/charges', {
      type: 'PIX_DYNAMIC',
      correlationId,
      amount: 10.5,
      expiresIn: 600,
      city: { name: 'Recife', zipcode: '50010-000' },
    });
    expect(res.status).toBe(200);
    expect(res.json.amount).toBe(10.5);
    expect(res.json.expiresAt).toBe('2026-11-22T10:10:00.000Z');
    expect(res.json.qrCodeImageBase64).toBeUndefined();
    expect(res.json.city).toEqual({ name: 'Recife', zipCode: '50010-000' });
  });

  it('refuses a second creation with the same correlationId (409) and returns the first by GET', async () => {
    const correlationId = randomUUID();
    const first = await client.qrCodes.createDynamic({ correlationId, amountCents: 500 });
    const second = client.qrCodes.createDynamic({ correlationId, amountCents: 500 });
    await expect(second).rejects.toBeInstanceOf(ConflictError);
    await expect(second).rejects.toMatchObject({ serviceCode: 'DUPLICATE_CORRELATION_ID' });
    const found = await raw('GET', `/baas/api/v1/pix/qrcode/dynamic/${correlationId}`);
    expect(found.status).toBe(200);
    expect(found.json.qrCodePayload).toBe(first.qrCodePayload);
    expect(found.json.status).toBe('PENDING');
    const withImage = await raw(
      'GET',
      `/baas/api/v1/pix/qrcode/dynamic/${correlationId}?formatResponse=PAYLOAD_AND_QRCODE`,
    );
    expect(withImage.json).toMatchObject({ status: 'PENDING' });
    expect(decodePng(Buffer.from(withImage.json.qrCodeImageBase64, 'base64')).text).toBe(first.qrCodePayload);
    expect((await raw('GET', `/baas/api/v1/pix/qrcode/dynamic/${randomUUID()}`)).status).toBe(404);
    // Expiry is read from the clock.
    now = new Date('2026-11-23T10:00:00.000Z');
    expect((await raw('GET', `/baas/api/v1/pix/qrcode/dynamic/${correlationId}`)).json.status).toBe('EXPIRED');
  });

  it('validates the request with field paths', async () => {
    const missing = await raw('POST', '/baas/api/v1/pix/qrcode/dynamic', { amount: 0 });
    expect(missing.status).toBe(400);
    expect(Object.keys(missing.json.errors).sort()).toEqual(['$.amount', '$.correlationId']);
    const bad = await raw('POST', '/baas/api/v1/pix/qrcode/dynamic', {
      correlationId: 'order-1',
      amount: 1.234,
      expiresIn: -5,
      formatResponse: 'PNG',
      payer: { name: 'X', document: '12345678900' },
      city: { name: 'Recife', zipCode: '123' },
    });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.json.errors).sort()).toEqual([
      '$.amount',
      '$.city.zipCode',
      '$.correlationId',
      '$.expiresIn',
      '$.formatResponse',
      '$.payer.document',
    ]);
  });
});

describe('static QR code (v2)', () => {
  it('creates a static code with the Pix key, an optional amount and a PNG data URI that decodes to the payload', async () => {
    const key = randomUUID();
    const qr = await client.qrCodes.createStatic(
      {
        correlationId: 'shop-42',
        amountCents: 2_500,
        pixKey: 'maria@example.com',
        additionalInformation: 'Pedido 42',
        formatResponse: 'PAYLOAD_AND_QRCODE',
      },
      key,
    );
    expect(qr.amountCents).toBe(2_500);
    expect(qr.pixKey).toBe('maria@example.com');
    expect(qr.additionalInfo).toBe('Pedido 42');
    expect(qr.transactionId).toMatch(/^[A-Za-z0-9]{25}$/);
    const parsed = parseBrCode(qr.payloadPix);
    expect(parsed.kind).toBe('STATIC');
    expect(parsed.key).toBe('maria@example.com');
    expect(parsed.amountCents).toBe(2_500);
    expect(parsed.description).toBe('Pedido 42');
    expect(parsed.txid).toBe(qr.transactionId);
    expect(isValidPixPayload(qr.payloadPix)).toBe(true);
    expect(qr.base64Image).toMatch(/^data:image\/png;base64,/);
    const image = decodePng(Buffer.from(qr.base64Image!.slice('data:image/png;base64,'.length), 'base64'));
    expect(image.text).toBe(qr.payloadPix);
    expect(qr.address).toMatchObject({ uf: 'SP', state: 'São Paulo' });
  });

  it('without amount lets the payer choose; uses the account key; accepts the additionalInfo spelling', async () => {
    const res = await raw(
      'POST',
      '/baas/api/v2/pix/qrcode/static',
      { correlationId: 'open-amount', additionalInfo: 'Doação' },
      { IdempotencyKey: randomUUID() },
    );
    expect(res.status).toBe(200);
    expect(res.json.amount).toBeUndefined();
    const parsed = parseBrCode(res.json.payloadPix);
    expect(parsed.amountCents).toBeUndefined();
    expect(parsed.key).toBe(sandbox.ctx.options.beneficiary.pixKey);
    expect(res.json.additionalInfo).toBe('Doação');
  });

  it('requires the idempotency key, replays with it, and checks additionalInformation length and the key', async () => {
    const body = { correlationId: 'c-1', amount: 1 };
    const noKey = raw('POST', '/baas/api/v2/pix/qrcode/static', body);
    expect((await noKey).status).toBe(400);
    await expect(client.qrCodes.createStatic({ correlationId: 'c-1' }, 'not-a-guid')).rejects.toBeInstanceOf(
      IdempotencyError,
    );
    const key = randomUUID();
    const a = await client.qrCodes.createStatic({ correlationId: 'c-1', amountCents: 100 }, key);
    const b = await client.qrCodes.createStatic({ correlationId: 'c-1', amountCents: 100 }, key);
    expect(b.payloadPix).toBe(a.payloadPix);
    await expect(
      client.qrCodes.createStatic({ correlationId: 'c-1', amountCents: 100 }, randomUUID()),
    ).rejects.toMatchObject({
      serviceCode: 'DUPLICATE_CORRELATION_ID',
    });
    const long = client.qrCodes.createStatic(
      { correlationId: 'c-2', additionalInformation: 'x'.repeat(65) },
      randomUUID(),
    );
    await expect(long).rejects.toBeInstanceOf(ValidationError);
    await expect(long).rejects.toMatchObject({
      fieldErrors: { '$.additionalInformation': [expect.stringMatching(/64/)] },
    });
    const badKey = await raw(
      'POST',
      '/baas/api/v2/pix/qrcode/static',
      { correlationId: 'c-3', pixKey: 'not a key' },
      { IdempotencyKey: randomUUID() },
    );
    expect(badKey.status).toBe(400);
    expect(badKey.json.errors['$.pixKey']).toBeDefined();
    const found = await raw('GET', '/baas/api/v2/pix/qrcode/static/c-1');
    expect(found.json.payloadPix).toBe(a.payloadPix);
  });
});

describe('every payload is a valid BR Code (property, over HTTP)', () => {
  it('static codes with any amount and any additional information parse, validate and decode from the image', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.option(fc.integer({ min: 1, max: 99_999_999 }), { nil: undefined }),
        fc.string({ maxLength: 64, unit: 'grapheme' }),
        async (amountCents, info) => {
          n++;
          const qr = await client.qrCodes.createStatic(
            {
              correlationId: `prop-${n}`,
              ...(amountCents !== undefined ? { amountCents } : {}),
              additionalInformation: info,
              formatResponse: 'PAYLOAD_AND_QRCODE',
            },
            randomUUID(),
          );
          const parsed = parseBrCode(qr.payloadPix);
          expect(parsed.amountCents).toBe(amountCents);
          expect(isValidPixPayload(qr.payloadPix)).toBe(true);
          const image = decodePng(Buffer.from(qr.base64Image!.slice('data:image/png;base64,'.length), 'base64'));
          expect([image.width, image.height, image.text]).toEqual([250, 250, qr.payloadPix]);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('dynamic codes with any amount and city parse and validate', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 99_999_999_99 }),
        fc.option(
          fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom(' ', '\u0007', '😀', 'São João')),
          {
            nil: undefined,
          },
        ),
        async (amountCents, city) => {
          const res = await raw('POST', '/baas/api/v1/pix/qrcode/dynamic', {
            correlationId: randomUUID(),
            amount: amountCents / 100,
            ...(city !== undefined ? { city: { name: city } } : {}),
          });
          expect(res.status).toBe(200);
          const parsed = parseBrCode(res.json.qrCodePayload);
          expect(parsed.amountCents).toBe(amountCents);
          expect(parsed.kind).toBe('DYNAMIC');
          expect(isValidPixPayload(res.json.qrCodePayload)).toBe(true);
        },
      ),
      { numRuns: 25 },
    );
  });
});
