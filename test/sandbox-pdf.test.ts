/**
 * GET /v1/charges/{id}/stream: the PDF parses (pdf-parse, a pdf.js renderer) and carries the slip's data; the ITF-25
 * bar code image decodes back to the charge's 44 digits (decoder written here from the standard's table, independent
 * of bwip-js); the QR code image decodes (jsqr) back to the BR Code.
 */
import jsQRModule from 'jsqr';
import { PDFParse } from 'pdf-parse';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatDigitableLine } from '../src/sandbox/pdf.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

// jsqr is CommonJS typed as `export default`: under NodeNext the default import is the module itself at run time.
const jsQR = ((jsQRModule as unknown as { default?: typeof jsQRModule }).default ?? jsQRModule) as unknown as (
  data: Uint8ClampedArray,
  width: number,
  height: number,
) => { data: string } | null;

const NOW = new Date('2026-11-22T12:00:00.000Z');
const PAYER = {
  name: 'João da Silva Pagador',
  document: '52998224725',
  address: {
    zipCode: '01310100',
    publicPlace: 'Avenida Paulista',
    number: '1000',
    neighborhood: 'Bela Vista',
    city: 'São Paulo',
    state: 'SP',
  },
};

let sandbox: RunningSandbox;

beforeAll(async () => {
  sandbox = await startSandbox({ now: () => NOW });
});
afterAll(async () => {
  await sandbox.close();
});

const headers = { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' };

// biome-ignore lint/suspicious/noExplicitAny: JSON of the service
async function create(body: Record<string, unknown>): Promise<any> {
  const res = await fetch(`${sandbox.url}/v1/charges`, { method: 'POST', headers, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
  return res.json();
}

async function pdf(correlationId: string): Promise<{ bytes: Buffer; contentType: string | null }> {
  const res = await fetch(`${sandbox.url}/v1/charges/${correlationId}/stream`, {
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
  });
  expect(res.status).toBe(200);
  return { bytes: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type') };
}

async function parse(
  bytes: Buffer,
): Promise<{ text: string; images: Array<{ width: number; height: number; png: PNG }> }> {
  const parser = new PDFParse({ data: new Uint8Array(bytes) });
  try {
    const text = (await parser.getText()).text;
    const result = await parser.getImage({ imageThreshold: 0 });
    const images = result.pages.flatMap((p) =>
      p.images.map((i) => ({ width: i.width, height: i.height, png: PNG.sync.read(Buffer.from(i.data)) })),
    );
    return { text, images };
  } finally {
    await parser.destroy();
  }
}

/** ITF digit patterns, narrow (0) / wide (1), from the standard. */
const ITF_DIGITS = ['00110', '10001', '01001', '11000', '00101', '10100', '01100', '00011', '10010', '01010'];

/** Reads the middle row of a bar code image and decodes it as interleaved 2 of 5. */
function decodeItf(png: PNG): string {
  const y = Math.floor(png.height / 2);
  const dark: boolean[] = [];
  for (let x = 0; x < png.width; x++) {
    const i = (y * png.width + x) * 4;
    const alpha = png.data[i + 3]!;
    const luminance = (png.data[i]! + png.data[i + 1]! + png.data[i + 2]!) / 3;
    dark.push(alpha > 128 && luminance < 128);
  }
  // Run lengths from the first bar to the last bar.
  const first = dark.indexOf(true);
  const last = dark.lastIndexOf(true);
  const runs: number[] = [];
  let x = first;
  while (x <= last) {
    let n = 0;
    const color = dark[x];
    while (x <= last && dark[x] === color) {
      n++;
      x++;
    }
    runs.push(n);
  }
  const narrow = Math.min(...runs);
  const wide = Math.max(...runs);
  const bits = runs.map((r) => (r > (narrow + wide) / 2 ? '1' : '0'));
  // Start: 4 narrow; stop: wide bar, narrow space, narrow bar.
  expect(bits.slice(0, 4).join('')).toBe('0000');
  expect(bits.slice(-3).join('')).toBe('100');
  const body = bits.slice(4, -3);
  expect(body.length % 10).toBe(0);
  let digits = '';
  for (let i = 0; i < body.length; i += 10) {
    const bars = [0, 2, 4, 6, 8].map((k) => body[i + k]).join('');
    const spaces = [1, 3, 5, 7, 9].map((k) => body[i + k]).join('');
    const a = ITF_DIGITS.indexOf(bars);
    const b = ITF_DIGITS.indexOf(spaces);
    if (a < 0 || b < 0) throw new Error(`Not an ITF digit pair at element ${i}: ${bars} ${spaces}`);
    digits += `${a}${b}`;
  }
  return digits;
}

describe('bank slip PDF', () => {
  it('is a PDF carrying beneficiary, payer, amount, due date, our number, digitable line and the ITF bar code', async () => {
    const charge = await create({
      type: 'BANKSLIP',
      correlationId: 'pdf-1',
      yourNumber: 'NF-777',
      dueDate: '2026-12-10',
      Amount: 1234.56,
      payer: PAYER,
    });
    const { bytes, contentType } = await pdf('pdf-1');
    expect(contentType).toBe('application/pdf');
    expect(bytes.subarray(0, 5).toString('latin1')).toBe('%PDF-');
    const { text, images } = await parse(bytes);
    expect(text).toContain(formatDigitableLine(charge.digitableLine));
    expect(text).toContain(charge.digitableLine);
    expect(text).toContain('João da Silva Pagador');
    expect(text).toContain('529.982.247-25');
    expect(text).toContain('R$ 1.234,56');
    expect(text).toContain('10/12/2026');
    expect(text).toContain(charge.ourNumber);
    expect(text).toContain('NF-777');
    expect(text).toContain('REMESSA SANDBOX LTDA');
    expect(images).toHaveLength(1);
    expect(decodeItf(images[0]!.png)).toBe(charge.barCode);
  });

  it('BANKSLIP_PIX also carries the QR code of its BR Code', async () => {
    const charge = await create({
      type: 'BANKSLIP_PIX',
      correlationId: 'pdf-2',
      dueDate: '2026-12-10',
      Amount: 99.9,
      payer: PAYER,
    });
    const { text, images } = await parse((await pdf('pdf-2')).bytes);
    expect(text).toContain(formatDigitableLine(charge.digitableLine));
    expect(images).toHaveLength(2);
    const bars = images.find((i) => i.width > i.height * 3)!;
    expect(decodeItf(bars.png)).toBe(charge.barCode);
    const qr = images.find((i) => i.width === i.height)!;
    const decoded = jsQR(new Uint8ClampedArray(qr.png.data), qr.png.width, qr.png.height);
    expect(decoded?.data).toBe(charge.qrCode);
  });

  it('a PATCHed slip prints its new bar code', async () => {
    await create({ type: 'BANKSLIP', correlationId: 'pdf-3', dueDate: '2026-12-10', Amount: 10, payer: PAYER });
    const res = await fetch(`${sandbox.url}/v1/charges/pdf-3`, {
      method: 'PATCH',
      headers,
      body: JSON.stringify({ dueDate: '2027-01-15' }),
    });
    const updated = JSON.parse(await res.text());
    const { text, images } = await parse((await pdf('pdf-3')).bytes);
    expect(text).toContain('15/01/2027');
    expect(decodeItf(images[0]!.png)).toBe(updated.barCode);
  });
});

describe('Pix charge PDF', () => {
  it('carries the QR code, the copy-and-paste payload and the amount', async () => {
    const charge = await create({ type: 'PIX_STATIC', correlationId: 'pdf-4', amount: 66.66, description: 'Pedido 9' });
    const { text, images } = await parse((await pdf('pdf-4')).bytes);
    expect(text).toContain('R$ 66,66');
    expect(text).toContain('Pedido 9');
    expect(text.replace(/\s+/g, '')).toContain(charge.qrCode.replace(/\s+/g, ''));
    expect(images).toHaveLength(1);
    const qr = images[0]!;
    expect(jsQR(new Uint8ClampedArray(qr.png.data), qr.png.width, qr.png.height)?.data).toBe(charge.qrCode);
  });
});
