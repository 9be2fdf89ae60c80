/**
 * Kind `charges`: one row issues one charge: BANKSLIP, BANKSLIP_PIX, PIX_STATIC or PIX_DYNAMIC (spec 2.1-2.3, 4.1).
 *
 * Steps: `create` (POST /v1/charges; it takes no IdempotencyKey, so after an unknown outcome it is recovered by
 * GET /v1/charges/{correlationId} and created only when absent), then `pdf`, the row's files (no effect at the bank,
 * safe to repeat): for bank slips the slip (GET .../stream, saved as `<correlationId made safe>.pdf`), and for every
 * charge with a BR Code (PIX_STATIC, PIX_DYNAMIC, BANKSLIP_PIX) its QR image `<correlationId made safe>.png`, drawn
 * from the created charge's qrCode by the writer the qr-codes kind uses (src/batches/images.ts). A row whose charge
 * was created but whose files were not written resumes at `pdf`. A first attempt the bank refuses because the
 * correlationId is taken (409) looks the bank's charge up: the same charge (type, amount, due date, payer) is this
 * row's, `succeeded` with its slip; another is `failed` (CHARGE_ID_TAKEN) saying what differs. Never `failed` unlooked:
 * a person would issue the charge again by hand, and the payer would get two slips for one debt.
 *
 * Natural key: the correlationId (the bank addresses a charge by it: two rows with one id are one charge). A sheet
 * without the column gets it derived from the row's Seu número, else from its content (src/batches/supply.ts). A row
 * with an owned id and another type, amount, due date or payer is refused, not a duplicate (`mustMatch` below).
 * Rules beyond the spec's (the sandbox enforces the same): correlationId of 1..100 URL-safe characters; for bank
 * slips the payer's name, document and address (zip code, street, city, state) are required, ourNumber is 1..11
 * digits and only for BANKSLIP (express charge, wallet 121); up to 3 discount items and 3 additionalInfo entries.
 * Checked here so that `validate` and the run agree with the bank (issue 8 section 4), never only at the bank: a due
 * date from today to 10 years ahead (today in Brasília), a bank slip amount of at most 99.999.999,99 (10 digits in the bar
 * code), discount items greater than 0 (percent too), text lengths in UTF-16 code units.
 */
import type { AmountRule, CreateChargeInput, Discount, Payer, PixChargeAdditionalInfo } from '../bank/client.js';
import { ConflictError, NotFoundError } from '../bank/errors.js';
import type { Charge, CreatedCharge } from '../bank/types.js';
import { MAX_BANK_SLIP_AMOUNT_CENTS } from '../formats/boleto.js';
import { brasiliaDay, brasiliaMidnight } from '../formats/brasilia-time.js';
import {
  CHARGE_TYPES,
  CORRELATION_ID_PATTERN,
  MAX_DUE_DATE_DAYS_AHEAD,
  MAX_EXPIRES_IN_SECONDS,
  PIX_STATIC_ADDITIONAL_INFO_MAX,
} from '../formats/charges.js';
import { addDays } from '../formats/dates.js';
import { formatAmount } from '../formats/money.js';
import { msg } from '../i18n/index.js';
import { addressColumns, column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { CELL_ERROR_CODES, type CellReader, type DateRange, type Phrase, recordParser, shown } from './fields.js';
import { brCodePng, writePng } from './images.js';
import { type BatchKind, type ColumnSpec, StepOutcomeError, type StepOutput } from './kind.js';
import { safeFileName } from './safe-name.js';
import { centsField, textField } from './same-operation.js';
import { bareDocument } from './validators.js';

/** How CORRELATION_ID_PATTERN (src/formats/charges.ts) reads to people. */
export const CORRELATION_ID_FORMAT = '1 to 100 letters, digits or . _ ~ : - (it is used in URL paths)';
export const MAX_DISCOUNT_ITEMS = 3;
export const MAX_ADDITIONAL_INFO = 3;
const SLIP = 'when type is BANKSLIP or BANKSLIP_PIX';
const WHEN_SLIP = msg('WHEN.slip');
const CORRELATION_ID_EXPECTED = msg('EXPECT.correlationId');

let dueDates: { range: DateRange; until: number } | undefined;

/**
 * The due dates the bank accepts today (src/formats/charges.ts MAX_DUE_DATE_DAYS_AHEAD), today being the day in
 * Brasília, as the bank counts days: computed once per such day, not per row.
 */
export function dueDateRange(now: number = Date.now()): DateRange {
  if (dueDates === undefined || now >= dueDates.until || now < dueDates.until - 86_400_000) {
    const today = brasiliaDay(new Date(now));
    dueDates = {
      range: {
        from: today,
        to: addDays(today, MAX_DUE_DATE_DAYS_AHEAD),
        what: msg('WHAT.dueDate'),
      },
      until: brasiliaMidnight(addDays(today, 1)),
    };
  }
  return dueDates.range;
}

/** Amount options of a bank slip: the bar code holds at most 10 digits of cents. */
export const SLIP_AMOUNT = {
  required: true,
  maxCents: MAX_BANK_SLIP_AMOUNT_CENTS,
  maxWhy: msg('WHY.slipMax'),
} as const;
const RULE_TYPES = ['Fixed', 'Percentage'] as const;

export interface ChargeRow {
  input: CreateChargeInput;
  idempotencyKey?: string;
}

export function ruleColumns(prefix: 'lateFine' | 'latePayment'): ColumnSpec[] {
  return [
    column(
      `${prefix}.type`,
      'Fixed (amount in money) or Percentage (amount in percent); bank slips only',
      'Percentage',
      {
        requiredWhen: `when any ${prefix} column is filled`,
      },
    ),
    column(`${prefix}.date`, FORMATS.date, '2026-12-16'),
    column(`${prefix}.amount`, `${FORMATS.percent} when Percentage, money when Fixed`, '2,00', {
      requiredWhen: `when ${prefix}.type is filled`,
    }),
  ];
}

export const DISCOUNT_COLUMNS: readonly ColumnSpec[] = [
  column('discount.type', 'Fixed or Percentage; bank slips only', 'Fixed', {
    requiredWhen: 'when any discount item is filled',
  }),
  ...[1, 2, 3].flatMap((i) => [
    column(`discount.items.${i}.date`, FORMATS.date, `2026-12-${String(i + 9).padStart(2, '0')}`, {
      requiredWhen: `with discount.items.${i}.amount`,
    }),
    column(
      `discount.items.${i}.amount`,
      `${FORMATS.amount} (percent when discount.type is Percentage)`,
      `${4 - i},00`,
      {
        requiredWhen: `with discount.items.${i}.date`,
      },
    ),
  ]),
];

export const CHARGE_COLUMNS: readonly ColumnSpec[] = [
  column(
    'type',
    'one of BANKSLIP, BANKSLIP_PIX, PIX_STATIC, PIX_DYNAMIC; also as sheets write them: Boleto (BANKSLIP), Boleto Pix (BANKSLIP_PIX), Pix or Pix dinâmico (PIX_DYNAMIC), Pix estático (PIX_STATIC), case and accents aside',
    'BANKSLIP',
    { required: true },
  ),
  column('correlationId', CORRELATION_ID_FORMAT, 'INV-2026-0001', { required: true }),
  column('amount', `${FORMATS.amount}; at most 99.999.999,99 for bank slips`, '1.234,56', { required: true }),
  column('dueDate', `${FORMATS.date}, from today to 10 years ahead`, '15/12/2026', { requiredWhen: SLIP }),
  column('yourNumber', 'text, at most 20 characters (document number printed on the slip); bank slips only', 'NF-123'),
  column('ourNumber', '1 to 11 digits; BANKSLIP only: makes it an express charge (wallet 121)', '12345678901'),
  column('description', 'text, at most 140 characters; Pix charges only', 'Mensalidade dezembro'),
  column('expiresIn', `whole seconds, 1 to ${MAX_EXPIRES_IN_SECONDS}; PIX_DYNAMIC only`, '86400'),
  column('payer.name', 'text, at most 100 characters', 'Maria da Silva', {
    requiredWhen: `${SLIP}, or with payer.document`,
  }),
  column('payer.document', FORMATS.document, '123.456.789-09', { requiredWhen: `${SLIP}, or with payer.name` }),
  column('payer.email', 'e-mail address, at most 100 characters; bank slips only', 'maria@example.com'),
  column('payer.phone.prefix', '2-digit area code (11 to 99); bank slips only', '11'),
  column(
    'payer.phone.number',
    '8 digits (landline, starting 2 to 5) or 9 digits (mobile, starting with 9); bank slips only',
    '987654321',
  ),
  column(
    'payer.phone',
    'phone with its area code, 10 or 11 digits, punctuation and +55 allowed (or only the number when payer.phone.prefix gives the area code); instead of payer.phone.number; bank slips only',
    '(11) 98765-4321',
  ),
  ...addressColumns('payer.address', SLIP),
  column('finalBeneficiary.name', 'text, at most 100 characters; bank slips only', 'Empresa Garantidora Ltda', {
    requiredWhen: 'when any finalBeneficiary column is filled',
  }),
  column('finalBeneficiary.document', FORMATS.document, '11.222.333/0001-81', {
    requiredWhen: 'when any finalBeneficiary column is filled',
  }),
  ...addressColumns('finalBeneficiary.address', 'when any finalBeneficiary.address column is filled'),
  ...DISCOUNT_COLUMNS,
  ...ruleColumns('lateFine'),
  ...ruleColumns('latePayment'),
  ...[1, 2, 3].flatMap((i) => [
    column(`additionalInfo.${i}.key`, 'text, at most 50 characters; Pix charges only', `Pedido${i}`, {
      requiredWhen: `with additionalInfo.${i}.value`,
    }),
    column(
      `additionalInfo.${i}.value`,
      `text, at most ${PIX_STATIC_ADDITIONAL_INFO_MAX} characters for PIX_STATIC, 200 otherwise`,
      `A-${i}`,
      { requiredWhen: `with additionalInfo.${i}.key` },
    ),
  ]),
  IDEMPOTENCY_KEY_COLUMN,
];

const SLIP_ONLY_PREFIXES = [
  'dueDate',
  'yourNumber',
  'ourNumber',
  'payer.email',
  'payer.phone',
  'payer.address.',
  'finalBeneficiary.',
  'discount.',
  'lateFine.',
  'latePayment.',
];
const PIX_ONLY_PREFIXES = ['description', 'expiresIn', 'additionalInfo.'];

/**
 * A list of column prefixes a row must leave empty, with a memoised test per column name: the names repeat on every
 * row, so each is matched against the prefixes once, not once per row.
 */
class ForbiddenPrefixes {
  readonly #memo = new Map<string, boolean>();
  constructor(readonly prefixes: readonly string[]) {}

  matches(column: string): boolean {
    let hit = this.#memo.get(column);
    if (hit === undefined) {
      hit = this.prefixes.some((p) => column.startsWith(p));
      // Column names come from a kind's column list; the bound only guards against callers with arbitrary keys.
      if (this.#memo.size < 1000) this.#memo.set(column, hit);
    }
    return hit;
  }
}

const SLIP_ONLY = new ForbiddenPrefixes(SLIP_ONLY_PREFIXES);
const PIX_ONLY = new ForbiddenPrefixes(PIX_ONLY_PREFIXES);
const NOT_FOR_PIX_STATIC = new ForbiddenPrefixes(['expiresIn', 'payer.']);
const PAYER_ADDRESS = new ForbiddenPrefixes(['payer.address.']);

/** NOT_ALLOWED for every filled column under the prefixes (in the order of the prefixes, then of the columns). */
function forbidPrefixes(r: CellReader, forbidden: ForbiddenPrefixes, why: Phrase): void {
  const record = r.record;
  let any = false;
  for (const k in record) {
    if (record[k] !== '' && forbidden.matches(k)) {
      any = true;
      break;
    }
  }
  if (!any) return; // the common case: nothing to report, no arrays built
  for (const p of forbidden.prefixes) for (const c of r.filledUnder(p)) r.forbid(c, why);
}

/**
 * Column names and cell-reader options of the address under a prefix, built once per (prefix, required, when): row
 * parsing reads an address on every row.
 */
interface AddressPlan {
  required: boolean;
  when: Phrase | undefined;
  names: Record<'zipCode' | 'publicPlace' | 'number' | 'complement' | 'neighborhood' | 'city' | 'state', string>;
  /** Options of the mandatory parts (zip code, state), the street (max 100) and the city (max 60). */
  part: { required: boolean; when: Phrase | undefined };
  street: { required: boolean; when: Phrase | undefined; max: number };
  city: { required: boolean; when: Phrase | undefined; max: number };
}
const ADDRESS_PLANS = new Map<string, AddressPlan>();
const MAX_20 = { max: 20 };
const MAX_60 = { max: 60 };

function addressPlan(prefix: string, required: boolean, when: Phrase | undefined): AddressPlan {
  const cached = ADDRESS_PLANS.get(prefix);
  if (cached !== undefined && cached.required === required && cached.when === when) return cached;
  const plan: AddressPlan = {
    required,
    when,
    names: {
      zipCode: `${prefix}.zipCode`,
      publicPlace: `${prefix}.publicPlace`,
      number: `${prefix}.number`,
      complement: `${prefix}.complement`,
      neighborhood: `${prefix}.neighborhood`,
      city: `${prefix}.city`,
      state: `${prefix}.state`,
    },
    part: { required, when },
    street: { required, when, max: 100 },
    city: { required, when, max: 60 },
  };
  ADDRESS_PLANS.set(prefix, plan);
  return plan;
}

/** Address under `prefix`; `required` makes zip code, street, city and state mandatory. */
export function readAddress(r: CellReader, prefix: string, required: boolean, when?: Phrase): Payer['address'] {
  const plan = addressPlan(prefix, required, when);
  const n = plan.names;
  // Read in this order (it is the order of the errors); the object gets only the parts that have a value.
  const zipCode = r.zipCode(n.zipCode, plan.part);
  const publicPlace = r.text(n.publicPlace, plan.street);
  const number = r.text(n.number, MAX_20);
  const complement = r.text(n.complement, MAX_60);
  const neighborhood = r.text(n.neighborhood, MAX_60);
  const city = r.text(n.city, plan.city);
  const state = r.state(n.state, plan.part);
  const address: Record<string, string> = {};
  if (zipCode !== undefined) address.zipCode = zipCode;
  if (publicPlace !== undefined) address.publicPlace = publicPlace;
  if (number !== undefined) address.number = number;
  if (complement !== undefined) address.complement = complement;
  if (neighborhood !== undefined) address.neighborhood = neighborhood;
  if (city !== undefined) address.city = city;
  if (state !== undefined) address.state = state;
  return address as Payer['address'];
}

/** A copy of `value` without its undefined fields (built anew: `delete` would slow the object down). */
export function compact<T extends Record<string, unknown>>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const k in value) if (value[k] !== undefined) out[k] = value[k];
  return out as T;
}

const SLIP_NAME = { required: true, when: WHEN_SLIP, max: 100 };
const MAX_20_PHONE = { max: 20 };
const SLIP_REQUIRED = { required: true, when: WHEN_SLIP };
const AREA_CODE = /^[1-9][1-9]$/;
const PHONE_NUMBER = /^(?:[2-5]\d{7}|9\d{8})$/;
const PHONE_PREFIX_OPTIONS = [
  { required: false, when: msg('WHEN.with', { column: 'payer.phone.number' }) },
  { required: true, when: msg('WHEN.with', { column: 'payer.phone.number' }) },
] as const;
const PHONE_NUMBER_OPTIONS = [
  { required: false, when: msg('WHEN.with', { column: 'payer.phone.prefix' }) },
  { required: true, when: msg('WHEN.with', { column: 'payer.phone.prefix' }) },
] as const;

const PHONE_DIGITS = /^\+?[\d\s().-]+$/;

/**
 * A whole phone number in one cell (`(11) 98765-4321`, `+55 11 3333-4444`), as sheets carry it: area code and
 * number, or only the number when `payer.phone.prefix` has the area code. Never guessed: other lengths are errors.
 */
function readWholePhone(r: CellReader): { prefix: string; number: string } | undefined {
  const raw = r.text('payer.phone', MAX_20_PHONE);
  if (raw === undefined) return undefined;
  if (r.has('payer.phone.number')) {
    r.error('payer.phone', CELL_ERROR_CODES.conflict, 'CONFLICT.phone');
    return undefined;
  }
  let digits = PHONE_DIGITS.test(raw) ? raw.replace(/\D/g, '') : '';
  if (raw.trim().startsWith('+') && digits.startsWith('55')) digits = digits.slice(2);
  else if ((digits.length === 12 || digits.length === 13) && digits.startsWith('55')) digits = digits.slice(2);
  const prefixCell = r.record['payer.phone.prefix'];
  // A DDD column beside a whole number that has its own area code: the two must agree (neither is guessed).
  const ownPrefix = prefixCell?.replace(/\D/g, '').replace(/^0/, '');
  if ((digits.length === 10 || digits.length === 11) && ownPrefix && ownPrefix !== digits.slice(0, 2)) {
    r.error('payer.phone.prefix', CELL_ERROR_CODES.conflict, 'CONFLICT.phonePrefix', {
      phone: shown(raw),
      got: shown(prefixCell!),
    });
    return undefined;
  }
  const split =
    digits.length === 10 || digits.length === 11
      ? { prefix: digits.slice(0, 2), number: digits.slice(2) }
      : (digits.length === 8 || digits.length === 9) && prefixCell !== undefined && prefixCell !== ''
        ? { prefix: prefixCell, number: digits }
        : undefined;
  if (split === undefined || !AREA_CODE.test(split.prefix) || !PHONE_NUMBER.test(split.number)) {
    r.error('payer.phone', CELL_ERROR_CODES.invalidPhone, 'INVALID_PHONE', { got: shown(raw) });
    return undefined;
  }
  return split;
}

function readSlipPayer(r: CellReader): Payer | undefined {
  const name = r.text('payer.name', SLIP_NAME);
  const document = r.document('payer.document', SLIP_REQUIRED);
  const email = r.email('payer.email');
  if (r.has('payer.phone')) {
    const whole = readWholePhone(r);
    const address = readAddress(r, 'payer.address', true, WHEN_SLIP);
    if (name === undefined || document === undefined) return undefined;
    const payer: Payer = { name, document };
    if (email !== undefined) payer.email = email;
    if (whole !== undefined) payer.phone = whole;
    if (address !== undefined) payer.address = address;
    return payer;
  }
  const prefix = r.pattern(
    'payer.phone.prefix',
    AREA_CODE,
    msg('EXPECT.areaCode'),
    PHONE_PREFIX_OPTIONS[r.has('payer.phone.number') ? 1 : 0],
  );
  const number = r.pattern(
    'payer.phone.number',
    PHONE_NUMBER,
    msg('EXPECT.phoneNumber'),
    PHONE_NUMBER_OPTIONS[r.has('payer.phone.prefix') ? 1 : 0],
  );
  const address = readAddress(r, 'payer.address', true, WHEN_SLIP);
  if (name === undefined || document === undefined) return undefined;
  const payer: Payer = { name, document };
  if (email !== undefined) payer.email = email;
  if (prefix !== undefined && number !== undefined) payer.phone = { prefix, number };
  if (address !== undefined) payer.address = address;
  return payer;
}

/** Column names and reader options of a lateFine/latePayment rule, built once (read on every row). */
function rulePlan(prefix: 'lateFine' | 'latePayment') {
  return {
    under: `${prefix}.`,
    type: `${prefix}.type`,
    date: `${prefix}.date`,
    amount: `${prefix}.amount`,
    typeOptions: { required: true, when: msg('WHEN.anyFilled', { prefix }) },
    amountOptions: { required: true, when: msg('WHEN.with', { column: `${prefix}.type` }) },
  };
}
const RULE_PLANS = { lateFine: rulePlan('lateFine'), latePayment: rulePlan('latePayment') };

export function readRule(r: CellReader, prefix: 'lateFine' | 'latePayment'): AmountRule | undefined {
  const plan = RULE_PLANS[prefix];
  if (!r.anyFilledUnder(plan.under)) return undefined;
  const type = r.enumOf(plan.type, RULE_TYPES, plan.typeOptions);
  const date = r.date(plan.date);
  if (type === 'Percentage') {
    const percent = r.percent(plan.amount, plan.amountOptions);
    if (percent === undefined) return undefined;
    return date === undefined ? { type, percent } : { type, date, percent };
  }
  const amountCents = r.amount(plan.amount, plan.amountOptions);
  if (type === undefined || amountCents === undefined) return undefined;
  return date === undefined ? { type, amountCents } : { type, date, amountCents };
}

const DISCOUNT_TYPE_OPTIONS = { required: true, when: msg('WHEN.anyDiscountItem') };
/** Per discount item: its columns and reader options (built once). */
const DISCOUNT_ITEMS = Array.from({ length: MAX_DISCOUNT_ITEMS }, (_, k) => {
  const dateCol = `discount.items.${k + 1}.date`;
  const amountCol = `discount.items.${k + 1}.amount`;
  return {
    dateCol,
    amountCol,
    dateOptions: { required: true, when: msg('WHEN.with', { column: amountCol }) },
    amountOptions: { required: true, when: msg('WHEN.with', { column: dateCol }) },
  };
});

export function readDiscount(r: CellReader): Discount | undefined {
  if (!r.anyFilledUnder('discount.')) return undefined;
  const type = r.enumOf('discount.type', RULE_TYPES, DISCOUNT_TYPE_OPTIONS);
  const items: Array<{ date: string; value: number }> = [];
  for (const item of DISCOUNT_ITEMS) {
    if (!r.has(item.dateCol) && !r.has(item.amountCol)) continue;
    const date = r.date(item.dateCol, item.dateOptions);
    let value =
      type === 'Percentage'
        ? r.percent(item.amountCol, item.amountOptions)
        : r.amount(item.amountCol, item.amountOptions);
    // The bank refuses a discount item of 0, in percent as in money.
    if (value !== undefined && value <= 0) {
      r.error(item.amountCol, 'AMOUNT_NOT_POSITIVE', 'AMOUNT_NOT_POSITIVE.discount', {
        got: shown(r.record[item.amountCol]!),
      });
      value = undefined;
    }
    if (date !== undefined && value !== undefined) items.push({ date, value });
  }
  if (type === undefined) return undefined;
  if (items.length === 0) {
    r.require('discount.items.1.date', msg('WHEN.filled', { column: 'discount.type' }));
    return undefined;
  }
  return type === 'Percentage'
    ? { type, items: items.map((it) => ({ date: it.date, percent: it.value })) }
    : { type, items: items.map((it) => ({ date: it.date, amountCents: it.value })) };
}

/** Per additionalInfo entry: its columns and the key's reader options (built once). */
const ADDITIONAL_INFO_ITEMS = Array.from({ length: MAX_ADDITIONAL_INFO }, (_, k) => {
  const keyCol = `additionalInfo.${k + 1}.key`;
  const valueCol = `additionalInfo.${k + 1}.value`;
  return {
    keyCol,
    valueCol,
    keyOptions: { required: true, when: msg('WHEN.with', { column: valueCol }), max: 50 },
    valueWhen: msg('WHEN.with', { column: keyCol }),
  };
});

function readAdditionalInfo(r: CellReader, maxValue: number): PixChargeAdditionalInfo[] | undefined {
  const out: PixChargeAdditionalInfo[] = [];
  for (const item of ADDITIONAL_INFO_ITEMS) {
    if (!r.has(item.keyCol) && !r.has(item.valueCol)) continue;
    const key = r.text(item.keyCol, item.keyOptions);
    const value = r.text(item.valueCol, { required: true, when: item.valueWhen, max: maxValue });
    if (key !== undefined && value !== undefined) out.push({ key, value });
  }
  return out.length > 0 ? out : undefined;
}

const REQUIRED = { required: true };
const MAX_140 = { max: 140 };
const MAX_100 = { max: 100 };
const OUR_NUMBER = /^\d{1,11}$/;
const OUR_NUMBER_EXPECTED = msg('EXPECT.ourNumber');
const WHY_PIX_ONLY = msg('WHY.pixOnly');
const WHY_SLIP_ONLY = msg('WHY.slipOnly');
const FINAL_BENEFICIARY_WHEN = msg('WHEN.anyFilled', { prefix: 'finalBeneficiary' });
const FINAL_BENEFICIARY_NAME = { required: true, when: FINAL_BENEFICIARY_WHEN, max: 100 };
const FINAL_BENEFICIARY_DOCUMENT = { required: true, when: FINAL_BENEFICIARY_WHEN };
const EXPIRES_IN = { min: 1, max: MAX_EXPIRES_IN_SECONDS };
const DYNAMIC_PAYER_NAME = [
  { required: false, when: msg('WHEN.with', { column: 'payer.document' }), max: 100 },
  { required: true, when: msg('WHEN.with', { column: 'payer.document' }), max: 100 },
] as const;
const DYNAMIC_PAYER_DOCUMENT = [
  { required: false, when: msg('WHEN.with', { column: 'payer.name' }) },
  { required: true, when: msg('WHEN.with', { column: 'payer.name' }) },
] as const;

/**
 * Charge types as spreadsheets write them (case, accents, spaces, `-` and `_` do not count): `Boleto`, `Boleto Pix`,
 * `Pix` (a Pix charge with its own QR code and expiry: PIX_DYNAMIC), `Pix estático`, `Pix dinâmico`. Documented in
 * docs/batches.md; anything else is INVALID_ENUM, never guessed.
 */
const CHARGE_TYPE_WORDS: Readonly<Record<string, (typeof CHARGE_TYPES)[number]>> = {
  boleto: 'BANKSLIP',
  boletopix: 'BANKSLIP_PIX',
  bolepix: 'BANKSLIP_PIX',
  pix: 'PIX_DYNAMIC',
  pixdinamico: 'PIX_DYNAMIC',
  pixestatico: 'PIX_STATIC',
};

function readChargeType(r: CellReader): (typeof CHARGE_TYPES)[number] | undefined {
  return r.enumOf('type', CHARGE_TYPES, { ...REQUIRED, words: CHARGE_TYPE_WORDS });
}

/**
 * The cells of a row whose type is missing or invalid, checked each on its own (nothing required: what is required
 * depends on the type), so that the row reports its bad e-mail, date or state together with its type.
 */
function checkUntypedCells(r: CellReader): void {
  r.date('dueDate', { range: dueDateRange() });
  r.text('yourNumber', MAX_20);
  r.pattern('ourNumber', OUR_NUMBER, OUR_NUMBER_EXPECTED);
  r.text('payer.name', MAX_100);
  r.document('payer.document');
  r.email('payer.email');
  if (r.has('payer.phone')) readWholePhone(r);
  else {
    r.pattern('payer.phone.prefix', AREA_CODE, msg('EXPECT.areaCode'));
    r.pattern('payer.phone.number', PHONE_NUMBER, msg('EXPECT.phoneNumber'));
  }
  readAddress(r, 'payer.address', false);
  r.text('finalBeneficiary.name', MAX_100);
  r.document('finalBeneficiary.document');
  readAddress(r, 'finalBeneficiary.address', false);
  readDiscount(r);
  readRule(r, 'lateFine');
  readRule(r, 'latePayment');
  r.text('description', MAX_140);
  readAdditionalInfo(r, 200);
  r.integer('expiresIn', EXPIRES_IN);
}

export function parseCharge(r: CellReader): ChargeRow | undefined {
  const type = readChargeType(r);
  const correlationId = r.pattern('correlationId', CORRELATION_ID_PATTERN, CORRELATION_ID_EXPECTED, REQUIRED);
  const slip = type === 'BANKSLIP' || type === 'BANKSLIP_PIX';
  const amountCents = r.amount('amount', slip ? SLIP_AMOUNT : REQUIRED);
  const idempotencyKey = r.guid('idempotencyKey');
  if (type === undefined) {
    checkUntypedCells(r);
    return undefined;
  }

  // The request objects are built with only the fields that have a value (as `compact` would, without a copy).
  let input: Record<string, unknown> | undefined;
  if (type === 'BANKSLIP' || type === 'BANKSLIP_PIX') {
    forbidPrefixes(r, PIX_ONLY, WHY_PIX_ONLY);
    const dueDate = r.date('dueDate', { ...SLIP_REQUIRED, range: dueDateRange() });
    const yourNumber = r.text('yourNumber', MAX_20);
    let ourNumber: string | undefined;
    if (type === 'BANKSLIP_PIX') {
      r.forbid('ourNumber', msg('WHY.bankslipPixOurNumber'));
    } else {
      ourNumber = r.pattern('ourNumber', OUR_NUMBER, OUR_NUMBER_EXPECTED);
    }
    const payer = readSlipPayer(r);
    let finalBeneficiary: { name: string; document: string; address?: Payer['address'] } | undefined;
    if (r.anyFilledUnder('finalBeneficiary.')) {
      const name = r.text('finalBeneficiary.name', FINAL_BENEFICIARY_NAME);
      const document = r.document('finalBeneficiary.document', FINAL_BENEFICIARY_DOCUMENT);
      const hasAddress = r.anyFilledUnder('finalBeneficiary.address.');
      const address = hasAddress
        ? readAddress(
            r,
            'finalBeneficiary.address',
            true,
            msg('WHEN.anyFilled', { prefix: 'finalBeneficiary.address' }),
          )
        : undefined;
      if (name !== undefined && document !== undefined) {
        finalBeneficiary = address ? { name, document, address } : { name, document };
      }
    }
    const discount = readDiscount(r);
    const lateFine = readRule(r, 'lateFine');
    const latePayment = readRule(r, 'latePayment');
    if (correlationId && amountCents !== undefined && dueDate && payer) {
      input = { type, correlationId, amountCents, dueDate, payer };
      if (yourNumber !== undefined) input.yourNumber = yourNumber;
      if (ourNumber !== undefined) input.ourNumber = ourNumber;
      if (finalBeneficiary !== undefined) input.finalBeneficiary = finalBeneficiary;
      if (discount !== undefined) input.discount = discount;
      if (lateFine !== undefined) input.lateFine = lateFine;
      if (latePayment !== undefined) input.latePayment = latePayment;
    }
  } else {
    forbidPrefixes(r, SLIP_ONLY, WHY_SLIP_ONLY);
    const description = r.text('description', MAX_140);
    const additionalInfo = readAdditionalInfo(r, type === 'PIX_STATIC' ? PIX_STATIC_ADDITIONAL_INFO_MAX : 200);
    if (type === 'PIX_STATIC') {
      forbidPrefixes(r, NOT_FOR_PIX_STATIC, msg('WHY.notPixStatic'));
      if (correlationId && amountCents !== undefined) {
        input = { type, correlationId, amountCents };
        if (description !== undefined) input.description = description;
        if (additionalInfo !== undefined) input.additionalInfo = additionalInfo;
      }
    } else {
      const expiresInSeconds = r.integer('expiresIn', EXPIRES_IN);
      const anyPayer = r.has('payer.name') || r.has('payer.document') ? 1 : 0;
      const name = r.text('payer.name', DYNAMIC_PAYER_NAME[anyPayer]);
      const document = r.document('payer.document', DYNAMIC_PAYER_DOCUMENT[anyPayer]);
      forbidPrefixes(r, PAYER_ADDRESS, WHY_SLIP_ONLY);
      if (correlationId && amountCents !== undefined) {
        input = { type, correlationId, amountCents };
        if (description !== undefined) input.description = description;
        if (additionalInfo !== undefined) input.additionalInfo = additionalInfo;
        if (expiresInSeconds !== undefined) input.expiresInSeconds = expiresInSeconds;
        if (name !== undefined && document !== undefined) input.payer = { name, document };
      }
    }
  }
  if (input === undefined) return undefined;
  const charge = input as unknown as CreateChargeInput;
  return idempotencyKey === undefined ? { input: charge } : { input: charge, idempotencyKey };
}

function isSlip(type: string): boolean {
  return type === 'BANKSLIP' || type === 'BANKSLIP_PIX';
}

/** The outputs of a created (or recovered) charge. */
/**
 * What differs between a row's charge and the charge the bank holds under its correlationId (type, amount, due date,
 * payer's document: what defines a charge, as `mustMatch` below), each as `field: bank's / row's`. A field the bank's
 * answer leaves out is not a difference.
 */
export function differencesAtBank(input: CreateChargeInput, bank: Charge): string[] {
  const out: string[] = [];
  const row = input as { type?: string; amountCents?: number; dueDate?: string; payer?: { document?: string } };
  const say = (field: string, theirs: unknown, ours: unknown) =>
    out.push(`${field}: ${String(theirs)} / ${String(ours)}`);
  if (bank.type !== undefined && row.type !== undefined && bank.type !== row.type) say('type', bank.type, row.type);
  if (row.amountCents !== undefined && bank.amountCents !== row.amountCents) {
    say('amount', `R$ ${formatAmount(bank.amountCents, ',')}`, `R$ ${formatAmount(row.amountCents, ',')}`);
  }
  const due = bank.dueDate?.slice(0, 10);
  if (due !== undefined && row.dueDate !== undefined && due !== row.dueDate) say('dueDate', due, row.dueDate);
  const doc = bank.payer?.document;
  if (
    typeof doc === 'string' &&
    row.payer?.document !== undefined &&
    bareDocument(doc) !== bareDocument(row.payer.document)
  ) {
    say('payer.document', doc, row.payer.document);
  }
  return out;
}

export function chargeOutput(charge: CreatedCharge): StepOutput {
  return {
    chargeStatus: charge.status ?? null,
    ourNumber: charge.ourNumber ?? null,
    barCode: charge.barCode ?? null,
    digitableLine: charge.digitableLine ?? null,
    qrCode: charge.qrCode ?? null,
  };
}

export const chargesKind: BatchKind<ChargeRow> = {
  name: 'charges',
  group: 'charges',
  movesMoneyOut: false,
  columns: CHARGE_COLUMNS,
  parse: recordParser(parseCharge),
  naturalKey: (row) => row.input.correlationId,
  // One correlationId is one charge at the bank: a row with an owned id is its duplicate only when it is the same
  // charge: same type, amount, due date and payer (by document). A Seu número reused on another payer's charge, or for
  // another amount, is refused (src/batches/same-operation.ts), never answered with the other charge's slip.
  mustMatch: {
    keyColumns: ['correlationId', 'yourNumber'],
    fields: ({ input }) => ({
      type: textField(input.type),
      amount: centsField(input.amountCents),
      dueDate: textField((input as { dueDate?: unknown }).dueDate),
      'payer.document': textField((input as { payer?: { document?: unknown } }).payer?.document),
    }),
  },
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  amountCents: (row) => row.input.amountCents,
  steps: [
    {
      name: 'create',
      effect: 'create',
      usesIdempotencyKey: false,
      async run(ctx) {
        try {
          return chargeOutput(await ctx.client.charges.create(ctx.row.input, ctx.request));
        } catch (err) {
          if (!(err instanceof ConflictError)) throw err;
          // The correlationId is taken at the bank, with no attempt of this row before (an attempt of unknown
          // outcome is recovered by its lookup first): by this very charge (a store restored from an earlier
          // backup, a file sent by another remessa) or by another one. The bank's charge says which. Answered
          // `failed` unlooked, a charge that exists would be made again by hand: two slips for one debt.
          const existing = await ctx.client.charges.get(ctx.row.input.correlationId, ctx.request);
          const differs = differencesAtBank(ctx.row.input, existing);
          if (differs.length === 0) return chargeOutput(existing);
          throw new StepOutcomeError(
            'failed',
            'CHARGE_ID_TAKEN',
            `correlationId ${ctx.row.input.correlationId} names another charge at the bank: ${differs.join('; ')}`,
            {
              cause: err,
              detail: msg('CHARGE_ID_TAKEN', { id: ctx.row.input.correlationId, differences: differs.join('; ') }),
            },
          );
        }
      },
      async recover(ctx) {
        try {
          return chargeOutput(await ctx.client.charges.get(ctx.row.input.correlationId, ctx.request));
        } catch (err) {
          if (err instanceof NotFoundError) return undefined;
          throw err;
        }
      },
    },
    {
      name: 'pdf',
      effect: 'read',
      usesIdempotencyKey: false,
      async run(ctx) {
        const { correlationId, type } = ctx.row.input;
        let pdfFile: string | null = null;
        if (isSlip(type)) {
          pdfFile = safeFileName(correlationId, 'pdf');
          await ctx.client.charges.streamPdf(correlationId, ctx.outputPath(pdfFile), ctx.request);
        }
        const qrCode = ctx.previous.create?.qrCode;
        const imageFile =
          typeof qrCode === 'string' && qrCode !== ''
            ? await writePng(ctx, correlationId, await brCodePng(qrCode))
            : null;
        return { pdfFile, imageFile };
      },
    },
  ],
  resultColumns: ['chargeStatus', 'ourNumber', 'barCode', 'digitableLine', 'qrCode', 'pdfFile', 'imageFile'],
  resultFileColumns: ['pdfFile', 'imageFile'],
  resultColumnForms: { ourNumber: 'identifier', barCode: 'identifier', digitableLine: 'digitableLine' },
};
