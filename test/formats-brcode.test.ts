import { getPixPayloadInfo, isValidPixPayload } from '@brazilian-utils/brazilian-utils';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  buildDynamicBrCode,
  buildStaticBrCode,
  crc16ccittFalse,
  encodeTlv,
  FormatError,
  parseBrCode,
  parseTlv,
  toBrCodeText,
} from '../src/formats/index.js';
import { formatError } from './helpers/errors.js';

/**
 * The independent checks of what we generate:
 * - @brazilian-utils/brazilian-utils `getPixPayloadInfo`/`isValidPixPayload`: a maintained BR Code parser that
 *   verifies TLV structure, mandatory fields and CRC on its own. It does not enforce the generator-side length
 *   limits (name 25, city 15, txid 25), so those are checked against our parser and the spec only.
 * - The CRC: a bit-by-bit CRC16-CCITT-FALSE written here from the definition (poly 0x1021, init 0xFFFF, no
 *   reflection, no final XOR), table-free, so it shares nothing with the table-driven one in src/formats/brcode.ts.
 */
function referenceCrc(bytes: Uint8Array): number {
  let crc = 0xffff;
  for (const byte of bytes) {
    for (let bit = 7; bit >= 0; bit--) {
      const inputBit = (byte >> bit) & 1;
      const topBit = (crc >> 15) & 1;
      crc = (crc << 1) & 0xffff;
      if (inputBit !== topBit) crc ^= 0x1021;
    }
  }
  return crc;
}

/** A payload body with its field 63 computed by the reference CRC (to build deliberately wrong payloads). */
function withCrc(body: string): string {
  const payload = `${body}6304`;
  return payload + referenceCrc(Buffer.from(payload, 'utf8')).toString(16).toUpperCase().padStart(4, '0');
}

/** The example of the Banco Central BR Code manual, as quoted by @brazilian-utils. */
const MANUAL_SAMPLE =
  '00020126580014br.gov.bcb.pix0136123e4567-e12b-12d1-a456-426655440000' +
  '5204000053039865802BR5913Fulano de Tal6008BRASILIA62070503***63041D3D';

describe('CRC16-CCITT-FALSE', () => {
  it('matches the catalogued check value and the bitwise reference', () => {
    expect(crc16ccittFalse('123456789')).toBe(0x29b1);
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), (text) => {
        expect(crc16ccittFalse(text)).toBe(referenceCrc(Buffer.from(text, 'utf8')));
      }),
    );
  });
});

describe('static BR Codes', () => {
  it('reproduce the manual sample and parse it', () => {
    const built = buildStaticBrCode({
      key: '123e4567-e12b-12d1-a456-426655440000',
      merchantName: 'Fulano de Tal',
      merchantCity: 'BRASILIA',
    });
    expect(built).toBe(MANUAL_SAMPLE);
    expect(parseBrCode(MANUAL_SAMPLE)).toMatchObject({
      format: '01',
      pointOfInitiation: null,
      kind: 'STATIC',
      gui: 'br.gov.bcb.pix',
      key: '123e4567-e12b-12d1-a456-426655440000',
      merchantName: 'Fulano de Tal',
      merchantCity: 'BRASILIA',
      txid: null,
      crc: '1D3D',
    });
  });

  it('normalise name, city, description and txid to the limits', () => {
    const payload = buildStaticBrCode({
      key: 'pagamentos@example.com.br',
      merchantName: 'Padaria São João e Confeitaria Ltda',
      merchantCity: 'São José dos Campos',
      description: `Pedido ${'ç'.repeat(100)}`,
      txid: 'pedido-2026/0001_abcdefghijklmnopqrstuvwxyz',
      amountCents: 6666,
    });
    const parsed = parseBrCode(payload);
    expect(parsed.merchantName).toBe('Padaria Sao Joao e Confei');
    expect(parsed.merchantCity).toBe('Sao Jose dos Ca');
    expect(parsed.txid).toBe('pedido20260001abcdefghijk');
    expect(parsed.amountCents).toBe(6666);
    expect(parsed.fields.find((field) => field.id === '54')?.value).toBe('66.66');
    // field 26 holds at most 99 characters: the description is cut to what fits next to the key
    expect(parsed.fields.find((field) => field.id === '26')!.value.length).toBeLessThanOrEqual(99);
    expect(parsed.description?.startsWith('Pedido ccc')).toBe(true);
  });

  const staticOptions = fc.record(
    {
      key: fc.oneof(
        fc.uuid(),
        fc.emailAddress().filter((email) => email.length <= 77),
        fc.stringMatching(/^\+55\d{11}$/),
        fc.stringMatching(/^\d{11}$/),
      ),
      amountCents: fc.integer({ min: 1, max: 999_999_999_999 }),
      merchantName: fc.string({ minLength: 1, maxLength: 40 }).filter((s) => toBrCodeText(s, 25) !== ''),
      merchantCity: fc.string({ minLength: 1, maxLength: 30 }).filter((s) => toBrCodeText(s, 15) !== ''),
      txid: fc.string({ maxLength: 40 }),
      description: fc.string({ maxLength: 100 }),
    },
    { requiredKeys: ['key', 'merchantName', 'merchantCity'] },
  );

  it('round-trip build -> parse, and the independent parser agrees (property)', () => {
    fc.assert(
      fc.property(staticOptions, (options) => {
        const payload = buildStaticBrCode(options);
        const parsed = parseBrCode(payload);
        expect(parsed.kind).toBe('STATIC');
        expect(parsed.key).toBe(options.key);
        expect(parsed.amountCents).toBe(options.amountCents);
        expect(parsed.merchantName).toBe(toBrCodeText(options.merchantName, 25));
        expect(parsed.merchantCity).toBe(toBrCodeText(options.merchantCity, 15));
        expect(parsed.merchantName.length).toBeLessThanOrEqual(25);
        expect(parsed.merchantCity.length).toBeLessThanOrEqual(15);

        expect(isValidPixPayload(payload)).toBe(true);
        const info = getPixPayloadInfo(payload)!;
        expect(info.key).toBe(options.key);
        expect(info.merchantName).toBe(parsed.merchantName);
        expect(info.merchantCity).toBe(parsed.merchantCity);
        expect(info.txid ?? null).toBe(parsed.txid);
        expect(info.description).toBe(parsed.description);
        expect(info.amount === undefined ? undefined : Math.round(info.amount * 100)).toBe(options.amountCents);
      }),
      { numRuns: 300 },
    );
  });
});

describe('dynamic BR Codes', () => {
  it('carry point of initiation 12, the URL without scheme and a 26..35 txid', () => {
    const txid = '7d9f0335-8dcc-4054-9bf9-0dbd61d36906';
    const payload = buildDynamicBrCode({
      locationUrl: 'https://qr.sandbox.example/pix/v2/cobv/7d9f03358dcc40549bf90dbd61d36906',
      merchantName: 'Remessa Sandbox',
      merchantCity: 'Sao Paulo',
      amountCents: 1050,
      txid,
    });
    const parsed = parseBrCode(payload);
    expect(parsed).toMatchObject({
      pointOfInitiation: '12',
      kind: 'DYNAMIC',
      url: 'qr.sandbox.example/pix/v2/cobv/7d9f03358dcc40549bf90dbd61d36906',
      amountCents: 1050,
      txid: '7d9f03358dcc40549bf90dbd61d36906',
    });
    expect(parsed.key).toBeUndefined();
    expect(getPixPayloadInfo(payload)).toMatchObject({ pointOfInitiation: 'dynamic', url: parsed.url });
  });

  it('refuse what cannot be normalised', () => {
    const base = { merchantName: 'A', merchantCity: 'B' };
    expect(formatError(() => buildDynamicBrCode({ ...base, locationUrl: 'x'.repeat(78) })).code).toBe('INVALID_FIELD');
    expect(formatError(() => buildDynamicBrCode({ ...base, locationUrl: 'a.b/c', txid: 'short' })).message).toBe(
      'Expected a dynamic txid of 26..35 letters and digits, got 5',
    );
    expect(formatError(() => buildStaticBrCode({ ...base, key: 'k', merchantName: 'ßø' })).code).toBe('MISSING_FIELD');
    expect(formatError(() => buildStaticBrCode({ ...base, key: 'k', amountCents: 0 })).code).toBe('INVALID_AMOUNT');
  });

  it('round-trip build -> parse, and the independent parser agrees (property)', () => {
    fc.assert(
      fc.property(
        fc.webUrl({ withQueryParameters: false, withFragments: false }).filter((url) => url.length <= 85),
        fc.option(fc.uuid(), { nil: undefined }),
        fc.option(fc.integer({ min: 1, max: 999_999_999_999 }), { nil: undefined }),
        (locationUrl, txid, amountCents) => {
          const url = locationUrl.replace(/^https?:\/\//, '');
          fc.pre(url.length <= 77 && !/[^\x21-\x7e]/.test(url));
          const payload = buildDynamicBrCode({ locationUrl, merchantName: 'N', merchantCity: 'C', txid, amountCents });
          const parsed = parseBrCode(payload);
          expect(parsed.url).toBe(url);
          expect(parsed.amountCents).toBe(amountCents);
          expect(parsed.txid).toBe(txid === undefined ? null : txid.replace(/-/g, ''));
          expect(isValidPixPayload(payload)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('parser refuses broken payloads with FormatError', () => {
  it('wrong or lower-case CRC', () => {
    const wrong = `${MANUAL_SAMPLE.slice(0, -4)}1D3E`;
    expect(formatError(() => parseBrCode(wrong))).toMatchObject({
      code: 'INVALID_CRC',
      message: 'Expected CRC 1D3D, got 1D3E',
    });
    expect(formatError(() => parseBrCode(`${MANUAL_SAMPLE.slice(0, -4)}1d3d`)).code).toBe('INVALID_CRC');
  });

  it('hard limits and fixed values of the spec', () => {
    const account = encodeTlv('26', encodeTlv('00', 'br.gov.bcb.pix') + encodeTlv('01', 'key'));
    const body = (parts: { name?: string; city?: string; currency?: string; extra?: string; txid?: string }) =>
      encodeTlv('00', '01') +
      account +
      encodeTlv('52', '0000') +
      encodeTlv('53', parts.currency ?? '986') +
      encodeTlv('58', 'BR') +
      encodeTlv('59', parts.name ?? 'Name') +
      encodeTlv('60', parts.city ?? 'City') +
      (parts.extra ?? '') +
      encodeTlv('62', encodeTlv('05', parts.txid ?? '***'));
    expect(parseBrCode(withCrc(body({}))).key).toBe('key');
    expect(formatError(() => parseBrCode(withCrc(body({ name: 'N'.repeat(26) })))).message).toBe(
      'Expected 1..25 characters in field 59 (merchant name), got 26',
    );
    expect(formatError(() => parseBrCode(withCrc(body({ city: 'C'.repeat(16) })))).code).toBe('INVALID_LENGTH');
    expect(formatError(() => parseBrCode(withCrc(body({ currency: '840' })))).message).toBe(
      'Expected field 53 (currency) = "986", got "840"',
    );
    expect(formatError(() => parseBrCode(withCrc(body({ extra: encodeTlv('54', '1.234') })))).code).toBe(
      'INVALID_FIELD',
    );
    expect(formatError(() => parseBrCode(withCrc(body({ extra: encodeTlv('54', '12345678901.00') })))).code).toBe(
      'INVALID_FIELD',
    );
    expect(parseBrCode(withCrc(body({ extra: encodeTlv('54', '10.5') }))).amountCents).toBe(1050);
    expect(formatError(() => parseBrCode(withCrc(body({ txid: 'a-b' })))).code).toBe('INVALID_FIELD');
    expect(formatError(() => parseBrCode(withCrc(body({ txid: 'a'.repeat(26) })))).code).toBe('INVALID_FIELD');
    expect(formatError(() => parseBrCode(withCrc(body({ extra: encodeTlv('59', 'Twice') })))).code).toBe(
      'INVALID_FIELD',
    );
    const noPix = withCrc(encodeTlv('00', '01') + encodeTlv('26', encodeTlv('00', 'com.example')));
    expect(formatError(() => parseBrCode(noPix)).code).toBe('MISSING_FIELD');
    expect(formatError(() => parseBrCode(withCrc(`${encodeTlv('00', '01')}2699`))).code).toBe('INVALID_LENGTH');
  });

  it('TLV encode/parse round-trip (property)', () => {
    const field = fc.record({
      id: fc.integer({ min: 0, max: 99 }).map((n) => String(n).padStart(2, '0')),
      value: fc.string({ maxLength: 99 }),
    });
    fc.assert(
      fc.property(fc.array(field, { maxLength: 8 }), (fields) => {
        expect(parseTlv(fields.map((f) => encodeTlv(f.id, f.value)).join(''))).toEqual(fields);
      }),
    );
  });

  it('any changed character of a valid payload is refused (property)', () => {
    const payload = buildStaticBrCode({ key: '+5511987654321', merchantName: 'Loja', merchantCity: 'Recife' });
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: payload.length - 1 }),
        fc.string({ unit: 'binary-ascii', minLength: 1, maxLength: 1 }),
        (position, char) => {
          fc.pre(payload[position] !== char);
          const changed = payload.slice(0, position) + char + payload.slice(position + 1);
          expect(() => parseBrCode(changed)).toThrow(FormatError);
        },
      ),
    );
  });

  it('garbage only ever throws FormatError (property)', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => withCrc(`000201${s}`)),
        ),
        (text) => {
          try {
            parseBrCode(text);
          } catch (error) {
            expect(error).toBeInstanceOf(FormatError);
          }
        },
      ),
    );
  });
});
