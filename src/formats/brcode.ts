import { type Message, type MessageKey, msg, type Params } from '../i18n/index.js';
import { formatError } from './errors.js';
import { formatBrCodeAmount, MAX_AMOUNT_CENTS } from './money.js';

/**
 * Pix BR Code (EMV QR payload, the copy-and-paste string), brazilian-formats.md 4.
 *
 *   00 "01" | [01 "11"/"12"] | 26 { 00 "br.gov.bcb.pix" | 01 key [| 02 description]  or  25 url } | 52 "0000" |
 *   53 "986" | [54 amount] | 58 "BR" | 59 name | 60 city | 62 { 05 txid } | 63 CRC
 *
 * What must hold: every payload the builders return is accepted by {@link parseBrCode} and by an independent parser
 * (see test/formats-brcode.test.ts). Builders normalise what they can (accents stripped, text truncated to the
 * limits, so a payload is always buildable from a charge); the parser refuses what breaks a hard rule of the spec
 * (lengths, fixed values, CRC), with a {@link FormatError} that names the field.
 *
 * Lengths count characters of the JavaScript string; builders only emit printable ASCII, so they are also bytes.
 */

export const PIX_GUI = 'br.gov.bcb.pix';
export const MAX_MERCHANT_NAME_LENGTH = 25;
export const MAX_MERCHANT_CITY_LENGTH = 15;
export const MAX_DESCRIPTION_LENGTH = 72;
export const MAX_LOCATION_URL_LENGTH = 77;
export const MAX_PIX_KEY_LENGTH = 77;
export const MAX_BR_CODE_AMOUNT_LENGTH = 13;
/** Field 62-05 when the code carries no txid. */
export const NO_TXID = '***';

/** One TLV data object: a 2-digit id and its value. */
export interface TlvField {
  id: string;
  value: string;
}

/** `id` + 2-digit length + `value`. Throws when `id` is not 2 digits or the value is longer than 99. */
export function encodeTlv(id: string, value: string): string {
  if (!/^\d{2}$/.test(id)) throw formatError('INVALID_FIELD', 'BRCODE.tlvId', { got: JSON.stringify(id) });
  if (value.length > 99) {
    throw formatError('INVALID_LENGTH', 'BRCODE.tlvTooLong', { id, count: value.length });
  }
  return id + String(value.length).padStart(2, '0') + value;
}

/** Splits TLV text into its data objects (one level). `where` names the text in errors ("field 26"). */
export function parseTlv(text: string, where: Message = msg('BRCODE.whole')): TlvField[] {
  const fields: TlvField[] = [];
  let at = 0;
  while (at < text.length) {
    const head = text.slice(at, at + 4);
    if (!/^\d{4}$/.test(head)) {
      throw formatError('INVALID_FIELD', 'BRCODE.tlvHead', { position: at + 1, where, got: JSON.stringify(head) });
    }
    const length = Number(head.slice(2));
    if (at + 4 + length > text.length) {
      throw formatError('INVALID_LENGTH', 'BRCODE.tlvShort', {
        length,
        id: head.slice(0, 2),
        where,
        count: text.length - at - 4,
      });
    }
    fields.push({ id: head.slice(0, 2), value: text.slice(at + 4, at + 4 + length) });
    at += 4 + length;
  }
  return fields;
}

const CRC_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let byte = 0; byte < 256; byte++) {
    let crc = byte << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[byte] = crc;
  }
  return table;
})();

/** CRC16-CCITT-FALSE (polynomial 0x1021, initial 0xFFFF, no reflection, no final XOR) of the UTF-8 bytes. */
export function crc16ccittFalse(text: string): number {
  let crc = 0xffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = ((crc << 8) & 0xffff) ^ CRC_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/** The CRC as the 4 upper-case hex digits field 63 carries. */
export function crc16Hex(text: string): string {
  return crc16ccittFalse(text).toString(16).toUpperCase().padStart(4, '0');
}

/**
 * Text for the name, city and description fields: accents stripped to ASCII ("São Paulo" -> "Sao Paulo"), anything
 * else outside printable ASCII dropped, spaces collapsed, cut to `maxLength`.
 */
export function toBrCodeText(text: string, maxLength: number): string {
  return text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^\x20-\x7e]/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .slice(0, maxLength)
    .trimEnd();
}

function requireText(value: string, maxLength: number, what: Message): string {
  const text = toBrCodeText(value, maxLength);
  if (text === '') throw formatError('MISSING_FIELD', 'BRCODE.text', { what, got: JSON.stringify(value) });
  return text;
}

function amountField(amountCents: number | undefined): string {
  if (amountCents === undefined) return '';
  if (!Number.isSafeInteger(amountCents) || amountCents <= 0 || amountCents > MAX_AMOUNT_CENTS) {
    throw formatError('INVALID_AMOUNT', 'BRCODE.buildAmount', { max: MAX_AMOUNT_CENTS, got: amountCents });
  }
  return encodeTlv('54', formatBrCodeAmount(amountCents));
}

function finish(withoutCrc: string): string {
  const payload = `${withoutCrc}6304`;
  return payload + crc16Hex(payload);
}

function tail(options: { merchantName: string; merchantCity: string }, amountCents: number | undefined): string {
  return (
    encodeTlv('52', '0000') +
    encodeTlv('53', '986') +
    amountField(amountCents) +
    encodeTlv('58', 'BR') +
    encodeTlv('59', requireText(options.merchantName, MAX_MERCHANT_NAME_LENGTH, msg('BRCODE.merchantName'))) +
    encodeTlv('60', requireText(options.merchantCity, MAX_MERCHANT_CITY_LENGTH, msg('BRCODE.merchantCity')))
  );
}

/** Options of {@link buildStaticBrCode}. */
export interface StaticBrCodeOptions {
  /** The receiver's Pix key (CPF, CNPJ, phone, e-mail or random key), at most 77 characters. */
  key: string;
  /** Fixed amount in cents; omitted when the payer chooses the value. */
  amountCents?: number;
  /** Receiver name; accents stripped, cut to 25 characters. */
  merchantName: string;
  /** Receiver city; accents stripped, cut to 15 characters. */
  merchantCity: string;
  /** Reconciliation id: letters and digits kept, cut to 25; `***` when absent or empty. */
  txid?: string;
  /** Shown to the payer; accents stripped, cut to 72 characters and to what still fits the 99-character field 26. */
  description?: string;
}

/** A static Pix BR Code (field 26 carries the key). No point of initiation: the code may be paid many times. */
export function buildStaticBrCode(options: StaticBrCodeOptions): string {
  const key = options.key.trim();
  if (key === '' || key.length > MAX_PIX_KEY_LENGTH) {
    throw formatError('INVALID_FIELD', 'BRCODE.buildKey', { max: MAX_PIX_KEY_LENGTH, count: key.length });
  }
  let account = encodeTlv('00', PIX_GUI) + encodeTlv('01', key);
  const room = Math.min(MAX_DESCRIPTION_LENGTH, 99 - account.length - 4);
  const description = room > 0 ? toBrCodeText(options.description ?? '', room) : '';
  if (description !== '') account += encodeTlv('02', description);
  const txid = (options.txid ?? '').replace(/[^A-Za-z0-9]/g, '').slice(0, 25) || NO_TXID;
  return finish(
    encodeTlv('00', '01') +
      encodeTlv('26', account) +
      tail(options, options.amountCents) +
      encodeTlv('62', encodeTlv('05', txid)),
  );
}

/** Options of {@link buildDynamicBrCode}. */
export interface DynamicBrCodeOptions {
  /** The PSP location of the charge, without scheme (a leading `https://` is removed); at most 77 characters. */
  locationUrl: string;
  merchantName: string;
  merchantCity: string;
  /** Amount in cents, optional (the location is the source of truth). */
  amountCents?: number;
  /** The charge's txid: letters and digits kept (a GUID loses its dashes: 32), then 26..35 of them; `***` when absent. */
  txid?: string;
}

/** A dynamic Pix BR Code: point of initiation 12, field 26 carries the location URL. */
export function buildDynamicBrCode(options: DynamicBrCodeOptions): string {
  const url = options.locationUrl.trim().replace(/^https?:\/\//i, '');
  if (url === '' || url.length > MAX_LOCATION_URL_LENGTH || /[^\x21-\x7e]/.test(url)) {
    throw formatError('INVALID_FIELD', 'BRCODE.buildUrl', { max: MAX_LOCATION_URL_LENGTH, count: url.length });
  }
  let txid = NO_TXID;
  if (options.txid !== undefined) {
    txid = options.txid.replace(/[^A-Za-z0-9]/g, '').slice(0, 35);
    if (txid.length < 26) {
      throw formatError('INVALID_FIELD', 'BRCODE.buildTxid', { count: txid.length });
    }
  }
  return finish(
    encodeTlv('00', '01') +
      encodeTlv('01', '12') +
      encodeTlv('26', encodeTlv('00', PIX_GUI) + encodeTlv('25', url)) +
      tail(options, options.amountCents) +
      encodeTlv('62', encodeTlv('05', txid)),
  );
}

/** A parsed BR Code. */
export interface BrCode {
  /** Field 00, always "01". */
  format: '01';
  /** Field 01: "12" one-time (dynamic), "11" reusable, null when absent. */
  pointOfInitiation: '11' | '12' | null;
  /** STATIC when field 26 carries a key, DYNAMIC when it carries a location URL. */
  kind: 'STATIC' | 'DYNAMIC';
  /** The GUI as written (compared case-insensitively with br.gov.bcb.pix). */
  gui: string;
  key?: string;
  /** Location URL without scheme (dynamic). */
  url?: string;
  description?: string;
  merchantCategoryCode: string;
  currency: '986';
  /** Field 54 in cents, absent when the payer chooses. */
  amountCents?: number;
  countryCode: 'BR';
  merchantName: string;
  merchantCity: string;
  /** Field 62-05; null when it is `***` (no txid). */
  txid: string | null;
  /** Field 63 as written (4 upper-case hex digits, verified). */
  crc: string;
  /** Every top-level field in order, for fields this type does not name (61, 64, 80-99...). */
  fields: TlvField[];
}

function fail(code: 'INVALID_FIELD' | 'MISSING_FIELD' | 'INVALID_LENGTH', key: MessageKey, params?: Params): never {
  throw formatError(code, key, params);
}

/** Field `id` and its name, as messages name it: `field 59 (merchant name)`. */
function field(id: string, name: MessageKey): Message {
  return msg('BRCODE.field', { id, name: msg(name) });
}

function checkLength(value: string, min: number, max: number, what: Message): void {
  if (value.length < min || value.length > max) {
    fail('INVALID_LENGTH', 'BRCODE.length', { min, max, what, count: value.length });
  }
}

/** Field 54 text to cents, exactly: "66.66" -> 6666, "10" -> 1000, "10.5" -> 1050. */
function parseBrCodeAmount(text: string): number {
  const match = /^(\d+)(?:\.(\d{1,2}))?$/.exec(text);
  if (!match || text.length > MAX_BR_CODE_AMOUNT_LENGTH) {
    fail('INVALID_FIELD', 'BRCODE.amount', { max: MAX_BR_CODE_AMOUNT_LENGTH, got: JSON.stringify(text) });
  }
  const cents = Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
  if (cents <= 0) fail('INVALID_FIELD', 'BRCODE.amountZero', { got: JSON.stringify(text) });
  return cents;
}

/**
 * Parses and verifies a BR Code: TLV structure, CRC, fixed values (00=01, 52, 53=986, 58=BR), the Pix template in
 * field 26 (or another of 26..51) with exactly one of key or URL, and the spec's length limits (name 25, city 15,
 * description 72, URL 77, amount 13, txid 1..25 static / 26..35 dynamic / ***). Throws {@link FormatError}.
 */
export function parseBrCode(payload: string): BrCode {
  if (!/^000201/.test(payload)) fail('INVALID_FIELD', 'BRCODE.start', { got: JSON.stringify(payload.slice(0, 6)) });
  const crcMatch = /6304([0-9A-Fa-f]{4})$/.exec(payload);
  if (!crcMatch || !/^[0-9A-F]{4}$/.test(crcMatch[1]!)) {
    throw formatError('INVALID_CRC', 'BRCODE.crcField', { got: JSON.stringify(payload.slice(-8)) });
  }
  const crc = crcMatch[1]!;
  const expectedCrc = crc16Hex(payload.slice(0, -4));
  if (crc !== expectedCrc) throw formatError('INVALID_CRC', 'BRCODE.crc', { expected: expectedCrc, got: crc });

  const fields = parseTlv(payload);
  const byId = new Map<string, string>();
  for (const f of fields) {
    if (byId.has(f.id)) fail('INVALID_FIELD', 'BRCODE.twice', { id: f.id });
    byId.set(f.id, f.value);
  }
  const last = fields[fields.length - 1]?.id;
  if (last !== '63') fail('INVALID_FIELD', 'BRCODE.crcLast', { id: last });
  const need = (id: string, name: MessageKey): string =>
    byId.get(id) ?? fail('MISSING_FIELD', 'BRCODE.missing', { field: field(id, name) });
  const fixed = (id: string, name: MessageKey, value: string): void => {
    const found = need(id, name);
    if (found !== value) {
      fail('INVALID_FIELD', 'BRCODE.fixed', {
        field: field(id, name),
        expected: JSON.stringify(value),
        got: JSON.stringify(found),
      });
    }
  };
  fixed('53', 'BRCODE.currency', '986');
  fixed('58', 'BRCODE.country', 'BR');
  const merchantCategoryCode = need('52', 'BRCODE.category');
  if (!/^\d{4}$/.test(merchantCategoryCode)) {
    fail('INVALID_FIELD', 'BRCODE.categoryDigits', { got: JSON.stringify(merchantCategoryCode) });
  }
  const pointOfInitiation = byId.get('01') ?? null;
  if (pointOfInitiation !== null && pointOfInitiation !== '11' && pointOfInitiation !== '12') {
    fail('INVALID_FIELD', 'BRCODE.initiation', { got: JSON.stringify(pointOfInitiation) });
  }

  const template = findPixTemplate(fields);
  const gui = template.get('00')!;
  const key = template.get('01');
  const url = template.get('25');
  const description = template.get('02');
  if ((key === undefined) === (url === undefined)) {
    fail('INVALID_FIELD', 'BRCODE.keyOrUrl', key === undefined ? {} : { both: 'yes' });
  }
  if (key !== undefined) checkLength(key, 1, MAX_PIX_KEY_LENGTH, msg('BRCODE.key'));
  if (url !== undefined) checkLength(url, 1, MAX_LOCATION_URL_LENGTH, msg('BRCODE.url'));
  if (description !== undefined) checkLength(description, 0, MAX_DESCRIPTION_LENGTH, msg('BRCODE.description'));
  const kind = key !== undefined ? 'STATIC' : 'DYNAMIC';

  const merchantName = need('59', 'BRCODE.merchantName');
  const merchantCity = need('60', 'BRCODE.merchantCity');
  checkLength(merchantName, 1, MAX_MERCHANT_NAME_LENGTH, field('59', 'BRCODE.merchantName'));
  checkLength(merchantCity, 1, MAX_MERCHANT_CITY_LENGTH, field('60', 'BRCODE.merchantCity'));
  const amountText = byId.get('54');

  const additional = parseTlv(need('62', 'BRCODE.additional'), msg('BRCODE.field', { id: '62' }));
  const txidText = additional.find((f) => f.id === '05')?.value;
  if (txidText === undefined) fail('MISSING_FIELD', 'BRCODE.txidMissing');
  let txid: string | null = null;
  if (txidText !== NO_TXID) {
    const [min, max] = kind === 'STATIC' ? [1, 25] : [26, 35];
    if (!/^[A-Za-z0-9]*$/.test(txidText) || txidText.length < min || txidText.length > max) {
      fail('INVALID_FIELD', kind === 'STATIC' ? 'BRCODE.txidStatic' : 'BRCODE.txidDynamic', {
        min,
        max,
        count: txidText.length,
      });
    }
    txid = txidText;
  }

  const result: BrCode = {
    format: '01',
    pointOfInitiation,
    kind,
    gui,
    merchantCategoryCode,
    currency: '986',
    countryCode: 'BR',
    merchantName,
    merchantCity,
    txid,
    crc,
    fields,
  };
  if (key !== undefined) result.key = key;
  if (url !== undefined) result.url = url;
  if (description !== undefined) result.description = description;
  if (amountText !== undefined) result.amountCents = parseBrCodeAmount(amountText);
  return result;
}

/** The first merchant account template (26..51) whose GUI is br.gov.bcb.pix, as a map of its sub-fields. */
function findPixTemplate(fields: TlvField[]): Map<string, string> {
  for (const f of fields) {
    const id = Number(f.id);
    if (id < 26 || id > 51) continue;
    const sub = parseTlv(f.value, msg('BRCODE.field', { id: f.id }));
    if (sub[0]?.id === '00' && sub[0].value.toLowerCase() === PIX_GUI) {
      return new Map(sub.map((entry) => [entry.id, entry.value]));
    }
  }
  return fail('MISSING_FIELD', 'BRCODE.template', { gui: JSON.stringify(PIX_GUI) });
}
