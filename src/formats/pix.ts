/**
 * The service's Pix QR code types and the initiation type each one is paid with (service-interface.md 2.7, 2.8,
 * 4.3), shared by the bank client (what it reads and sends), the batch kinds and the sandbox (what it answers and checks).
 */

import { getPixKeyInfo } from '@brazilian-utils/brazilian-utils/get-pix-key-info';

/** `type` of a payment initialization: what kind of QR code was read. */
export const PIX_QR_TYPES = ['QR_CODE_STATIC', 'DYNAMIC_IMMEDIATE_PAYMENT', 'DYNAMIC_PAYMENT_WITH_EXPIRATION'] as const;
export type PixQrType = (typeof PIX_QR_TYPES)[number];

/** `formatResponse` of a QR code creation or lookup: the payload alone, or with a 250x250 PNG of it. */
export const QR_FORMAT_RESPONSES = ['ONLY_PAYLOAD', 'PAYLOAD_AND_QRCODE'] as const;
export type QrFormatResponse = (typeof QR_FORMAT_RESPONSES)[number];

/** Most characters of a static QR code's additionalInformation (spec 8). */
export const STATIC_QR_ADDITIONAL_INFORMATION_MAX = 64;

/** `initiationType` of a payment. */
export type PixInitiationType = 'QR_CODE_STATIC' | 'QR_CODE_DYNAMIC';

/** The mapping rule of spec 4.3: a static code is paid as QR_CODE_STATIC, either dynamic one as QR_CODE_DYNAMIC. */
export function initiationTypeFor(type: PixQrType): PixInitiationType {
  switch (type) {
    case 'QR_CODE_STATIC':
      return 'QR_CODE_STATIC';
    case 'DYNAMIC_IMMEDIATE_PAYMENT':
    case 'DYNAMIC_PAYMENT_WITH_EXPIRATION':
      return 'QR_CODE_DYNAMIC';
    default: {
      const never: never = type;
      throw new TypeError(`initiationTypeFor: unknown QR type ${String(never)}`);
    }
  }
}

/**
 * Whether `key` is a Pix key (CPF, CNPJ, +55 phone, e-mail or random key): the one rule both sides use (the sandbox
 * refuses a static QR code naming another; remessa checks it before sending). From the package's subpath: its root
 * loads every helper and their data (~20 MB resident, ~25 ms at every start), for one function.
 */
export { isValidPixKey } from '@brazilian-utils/brazilian-utils/is-valid-pix-key';

/**
 * A Pix key in the DICT's canonical form, the one a BR Code must carry (CPF/CNPJ unmasked, phone +55DDDNNNNNNNNN,
 * e-mail lower-cased, random key lower-case), or undefined when `key` is not a Pix key. A person writes
 * `(11) 98765-4321` or `Fulano@Example.COM`; the bank writes the key into the code as sent, and a code whose key no
 * DICT lookup finds cannot be paid.
 */
export function canonicalPixKey(key: string): string | undefined {
  return getPixKeyInfo(key)?.value;
}

/** A Pix phone key as the DICT holds it: +55, the area code, and a mobile number of 9 digits beginning with 9. */
export const DICT_PHONE_KEY = /^\+55\d{2}9\d{8}$/;

/**
 * A cell known to hold a phone key (a claim of type PHONE), in its DICT form: `(11) 98765-4321`, `11987654321`,
 * `+55 11 98765-4321` and `5511987654321` are all `+5511987654321`; undefined when it is not a Brazilian mobile
 * number. Not `canonicalPixKey`: told it is a phone, 11 digits are never taken for a CPF.
 */
export function dictPhoneKey(cell: string): string | undefined {
  const bare = cell.replace(/[\s().-]/g, '');
  const digits = bare.startsWith('+') ? bare.slice(1) : bare;
  if (!/^\d+$/.test(digits)) return undefined;
  const key = `+${digits.length === 11 && !bare.startsWith('+') ? `55${digits}` : digits}`;
  return DICT_PHONE_KEY.test(key) ? key : undefined;
}
