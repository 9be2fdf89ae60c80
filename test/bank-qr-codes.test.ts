/** The QR code calls of the client against the sandbox: creation and the look-ups used for recovery. */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { NotFoundError, ValidationError } from '../src/bank/errors.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

let sandbox: RunningSandbox;
let client: BankClient;

beforeAll(async () => {
  sandbox = await startSandbox({ port: 0 });
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY });
});

afterAll(async () => {
  await client?.close();
  await sandbox?.close();
});

describe('qrCodes', () => {
  it('creates a dynamic QR code and finds it again by correlationId', async () => {
    const correlationId = randomUUID();
    const created = await client.qrCodes.createDynamic({
      correlationId,
      amountCents: 4_990,
      description: 'pedido 42',
      expiresInSeconds: 600,
      payer: { name: 'Carla Dias', document: '52998224725' },
      city: { name: 'São Paulo', zipCode: '01310100' },
    });
    expect(created.correlationId).toBe(correlationId);
    expect(created.amountCents).toBe(4_990);
    expect(created.status).toBe('PENDING');
    expect(created.qrCodePayload).toMatch(/^000201/);
    expect(created.qrCodeImageBase64).toBeUndefined();
    const found = await client.qrCodes.getDynamic(correlationId, { formatResponse: 'PAYLOAD_AND_QRCODE' });
    expect(found.qrCodePayload).toBe(created.qrCodePayload);
    expect(found.qrCodeImageBase64).toBeTruthy();
    await expect(client.qrCodes.getDynamic(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
  });

  it('creates a static QR code with its key and finds it again', async () => {
    const correlationId = randomUUID();
    const created = await client.qrCodes.createStatic(
      { correlationId, amountCents: 1_500, additionalInformation: 'mensalidade', formatResponse: 'PAYLOAD_AND_QRCODE' },
      randomUUID(),
    );
    expect(created.correlationId).toBe(correlationId);
    expect(created.amountCents).toBe(1_500);
    expect(created.payloadPix).toMatch(/^000201/);
    expect(created.base64Image).toMatch(/^data:image\/png;base64,/);
    const found = await client.qrCodes.getStatic(correlationId);
    expect(found.payloadPix).toBe(created.payloadPix);
    await expect(client.qrCodes.getStatic(randomUUID())).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a static QR code without amount lets the payer choose; a long additionalInformation is refused', async () => {
    const open = await client.qrCodes.createStatic({ correlationId: randomUUID() }, randomUUID());
    expect(open.amountCents).toBeUndefined();
    const err = await client.qrCodes
      .createStatic({ correlationId: randomUUID(), additionalInformation: 'x'.repeat(65) }, randomUUID())
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
  });
});
