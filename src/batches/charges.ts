/**
 * Kind `charges`: one row issues one charge: BANKSLIP, BANKSLIP_PIX, PIX_STATIC or PIX_DYNAMIC (spec 2.1-2.3, 4.1).
 *
 * Steps: `create` (POST /v1/charges; it takes no IdempotencyKey, so after an unknown outcome it is recovered by
 * GET /v1/charges/{correlationId} and created only when absent), then for bank slips `pdf` (GET .../stream, saved as
 * `<correlationId made safe>.pdf`). A row whose charge was created but whose PDF was not fetched resumes at `pdf`.
 *
 * Natural key: the correlationId (the bank addresses a charge by it: two rows with one id are one charge).
 * Rules beyond the spec's (the sandbox enforces the same): correlationId of 1..100 URL-safe characters; for bank
 * slips the payer's name, document and address (zip code, street, city, state) are required, ourNumber is 1..11
 * digits and only for BANKSLIP (express charge, wallet 121); up to 3 discount items and 3 additionalInfo entries.
 */
import type { AmountRule, CreateChargeInput, Discount, Payer, PixChargeAdditionalInfo } from '../bank/client.js';
import { NotFoundError } from '../bank/errors.js';
import type { Charge } from '../bank/types.js';
import {
  CHARGE_TYPES,
  CORRELATION_ID_PATTERN,
  MAX_EXPIRES_IN_SECONDS,
  PIX_STATIC_ADDITIONAL_INFO_MAX,
} from '../formats/charges.js';
import { addressColumns, column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, recordParser } from './fields.js';
import type { BatchKind, ColumnSpec, StepOutput } from './kind.js';
import { safeFileName } from './safe-name.js';

/** How CORRELATION_ID_PATTERN (src/formats/charges.ts) reads to people. */
export const CORRELATION_ID_FORMAT = '1 to 100 letters, digits or . _ ~ : - (it is used in URL paths)';
export const MAX_DISCOUNT_ITEMS = 3;
export const MAX_ADDITIONAL_INFO = 3;
const SLIP = 'when type is BANKSLIP or BANKSLIP_PIX';
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
  column('type', 'one of BANKSLIP, BANKSLIP_PIX, PIX_STATIC, PIX_DYNAMIC', 'BANKSLIP', { required: true }),
  column('correlationId', CORRELATION_ID_FORMAT, 'INV-2026-0001', { required: true }),
  column('amount', FORMATS.amount, '1.234,56', { required: true }),
  column('dueDate', FORMATS.date, '15/12/2026', { requiredWhen: SLIP }),
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
  'payer.phone.',
  'payer.address.',
  'finalBeneficiary.',
  'discount.',
  'lateFine.',
  'latePayment.',
];
const PIX_ONLY_PREFIXES = ['description', 'expiresIn', 'additionalInfo.'];

function filled(r: CellReader, prefix: string): string[] {
  return r.filledUnder(prefix);
}

function forbidPrefixes(r: CellReader, prefixes: readonly string[], why: string): void {
  for (const p of prefixes) for (const c of filled(r, p)) r.forbid(c, why);
}

/** Column names of the address under a prefix, built once: row parsing looks them up for every row. */
const ADDRESS_NAMES = new Map<
  string,
  Record<'zipCode' | 'publicPlace' | 'number' | 'complement' | 'neighborhood' | 'city' | 'state', string>
>();

function addressNames(prefix: string) {
  let names = ADDRESS_NAMES.get(prefix);
  if (names === undefined) {
    names = {
      zipCode: `${prefix}.zipCode`,
      publicPlace: `${prefix}.publicPlace`,
      number: `${prefix}.number`,
      complement: `${prefix}.complement`,
      neighborhood: `${prefix}.neighborhood`,
      city: `${prefix}.city`,
      state: `${prefix}.state`,
    };
    ADDRESS_NAMES.set(prefix, names);
  }
  return names;
}

/** Address under `prefix`; `required` makes zip code, street, city and state mandatory. */
export function readAddress(r: CellReader, prefix: string, required: boolean, when?: string): Payer['address'] {
  const n = addressNames(prefix);
  const address = {
    zipCode: r.zipCode(n.zipCode, { required, when }),
    publicPlace: r.text(n.publicPlace, { required, when, max: 100 }),
    number: r.text(n.number, { max: 20 }),
    complement: r.text(n.complement, { max: 60 }),
    neighborhood: r.text(n.neighborhood, { max: 60 }),
    city: r.text(n.city, { required, when, max: 60 }),
    state: r.state(n.state, { required, when }),
  };
  return compact(address);
}

/** A copy of `value` without its undefined fields (built anew: `delete` would slow the object down). */
export function compact<T extends Record<string, unknown>>(value: T): T {
  const out: Record<string, unknown> = {};
  for (const k in value) if (value[k] !== undefined) out[k] = value[k];
  return out as T;
}

function readSlipPayer(r: CellReader): Payer | undefined {
  const name = r.text('payer.name', { required: true, when: SLIP, max: 100 });
  const document = r.document('payer.document', { required: true, when: SLIP });
  const email = r.email('payer.email');
  const prefix = r.pattern('payer.phone.prefix', /^[1-9][1-9]$/, 'a 2-digit area code (11 to 99, not ending in 0)', {
    required: r.has('payer.phone.number'),
    when: 'with payer.phone.number',
  });
  const number = r.pattern(
    'payer.phone.number',
    /^(?:[2-5]\d{7}|9\d{8})$/,
    'a phone number of 8 digits (landline, starting 2 to 5) or 9 digits (mobile, starting with 9)',
    { required: r.has('payer.phone.prefix'), when: 'with payer.phone.prefix' },
  );
  const address = readAddress(r, 'payer.address', true, SLIP);
  if (name === undefined || document === undefined) return undefined;
  const payer: Payer = { name, document };
  if (email !== undefined) payer.email = email;
  if (prefix !== undefined && number !== undefined) payer.phone = { prefix, number };
  if (address !== undefined) payer.address = address;
  return payer;
}

export function readRule(r: CellReader, prefix: 'lateFine' | 'latePayment'): AmountRule | undefined {
  if (filled(r, `${prefix}.`).length === 0) return undefined;
  const type = r.enumOf(`${prefix}.type`, RULE_TYPES, { required: true, when: `when any ${prefix} column is filled` });
  const date = r.date(`${prefix}.date`);
  if (type === 'Percentage') {
    const percent = r.percent(`${prefix}.amount`, { required: true, when: `with ${prefix}.type` });
    if (percent === undefined) return undefined;
    return date === undefined ? { type, percent } : { type, date, percent };
  }
  const amountCents = r.amount(`${prefix}.amount`, { required: true, when: `with ${prefix}.type` });
  if (type === undefined || amountCents === undefined) return undefined;
  return date === undefined ? { type, amountCents } : { type, date, amountCents };
}

export function readDiscount(r: CellReader): Discount | undefined {
  if (filled(r, 'discount.').length === 0) return undefined;
  const type = r.enumOf('discount.type', RULE_TYPES, { required: true, when: 'when any discount item is filled' });
  const items: Array<{ date: string; value: number }> = [];
  for (let i = 1; i <= MAX_DISCOUNT_ITEMS; i++) {
    const dateCol = `discount.items.${i}.date`;
    const amountCol = `discount.items.${i}.amount`;
    if (!r.has(dateCol) && !r.has(amountCol)) continue;
    const date = r.date(dateCol, { required: true, when: `with ${amountCol}` });
    const value =
      type === 'Percentage'
        ? r.percent(amountCol, { required: true, when: `with ${dateCol}` })
        : r.amount(amountCol, { required: true, when: `with ${dateCol}` });
    if (date !== undefined && value !== undefined) items.push({ date, value });
  }
  if (type === undefined) return undefined;
  if (items.length === 0) {
    r.require('discount.items.1.date', 'when discount.type is filled');
    return undefined;
  }
  return type === 'Percentage'
    ? { type, items: items.map((it) => ({ date: it.date, percent: it.value })) }
    : { type, items: items.map((it) => ({ date: it.date, amountCents: it.value })) };
}

function readAdditionalInfo(r: CellReader, maxValue: number): PixChargeAdditionalInfo[] | undefined {
  const out: PixChargeAdditionalInfo[] = [];
  for (let i = 1; i <= MAX_ADDITIONAL_INFO; i++) {
    const keyCol = `additionalInfo.${i}.key`;
    const valueCol = `additionalInfo.${i}.value`;
    if (!r.has(keyCol) && !r.has(valueCol)) continue;
    const key = r.text(keyCol, { required: true, when: `with ${valueCol}`, max: 50 });
    const value = r.text(valueCol, { required: true, when: `with ${keyCol}`, max: maxValue });
    if (key !== undefined && value !== undefined) out.push({ key, value });
  }
  return out.length > 0 ? out : undefined;
}

export function parseCharge(r: CellReader): ChargeRow | undefined {
  const type = r.enumOf('type', CHARGE_TYPES, { required: true });
  const correlationId = r.pattern('correlationId', CORRELATION_ID_PATTERN, CORRELATION_ID_FORMAT, { required: true });
  const amountCents = r.amount('amount', { required: true });
  const idempotencyKey = r.guid('idempotencyKey');
  if (type === undefined) return undefined;

  let input: CreateChargeInput | undefined;
  if (type === 'BANKSLIP' || type === 'BANKSLIP_PIX') {
    forbidPrefixes(r, PIX_ONLY_PREFIXES, 'Pix charges only');
    const dueDate = r.date('dueDate', { required: true, when: SLIP });
    const yourNumber = r.text('yourNumber', { max: 20 });
    let ourNumber: string | undefined;
    if (type === 'BANKSLIP_PIX') {
      r.forbid('ourNumber', 'a BANKSLIP_PIX charge is issued in wallet 112: the bank assigns ourNumber');
    } else {
      ourNumber = r.pattern('ourNumber', /^\d{1,11}$/, '1 to 11 digits (express charge)');
    }
    const payer = readSlipPayer(r);
    let finalBeneficiary: { name: string; document: string; address?: Payer['address'] } | undefined;
    if (filled(r, 'finalBeneficiary.').length > 0) {
      const when = 'when any finalBeneficiary column is filled';
      const name = r.text('finalBeneficiary.name', { required: true, when, max: 100 });
      const document = r.document('finalBeneficiary.document', { required: true, when });
      const hasAddress = filled(r, 'finalBeneficiary.address.').length > 0;
      const address = hasAddress
        ? readAddress(r, 'finalBeneficiary.address', true, 'when any finalBeneficiary.address column is filled')
        : undefined;
      if (name !== undefined && document !== undefined) {
        finalBeneficiary = address ? { name, document, address } : { name, document };
      }
    }
    const discount = readDiscount(r);
    const lateFine = readRule(r, 'lateFine');
    const latePayment = readRule(r, 'latePayment');
    if (correlationId && amountCents !== undefined && dueDate && payer) {
      input = compact({
        type,
        correlationId,
        amountCents,
        dueDate,
        payer,
        yourNumber,
        ourNumber,
        finalBeneficiary,
        discount,
        lateFine,
        latePayment,
      }) as CreateChargeInput;
    }
  } else {
    forbidPrefixes(r, SLIP_ONLY_PREFIXES, 'bank slips only');
    const description = r.text('description', { max: 140 });
    const additionalInfo = readAdditionalInfo(r, type === 'PIX_STATIC' ? PIX_STATIC_ADDITIONAL_INFO_MAX : 200);
    if (type === 'PIX_STATIC') {
      forbidPrefixes(r, ['expiresIn', 'payer.'], 'not for PIX_STATIC');
      if (correlationId && amountCents !== undefined) {
        input = compact({ type, correlationId, amountCents, description, additionalInfo });
      }
    } else {
      const expiresInSeconds = r.integer('expiresIn', { min: 1, max: MAX_EXPIRES_IN_SECONDS });
      const anyPayer = r.has('payer.name') || r.has('payer.document');
      const name = r.text('payer.name', { required: anyPayer, when: 'with payer.document', max: 100 });
      const document = r.document('payer.document', { required: anyPayer, when: 'with payer.name' });
      forbidPrefixes(r, ['payer.address.'], 'bank slips only');
      const payer = name !== undefined && document !== undefined ? { name, document } : undefined;
      if (correlationId && amountCents !== undefined) {
        input = compact({ type, correlationId, amountCents, description, additionalInfo, expiresInSeconds, payer });
      }
    }
  }
  if (input === undefined) return undefined;
  return idempotencyKey === undefined ? { input } : { input, idempotencyKey };
}

function isSlip(type: string): boolean {
  return type === 'BANKSLIP' || type === 'BANKSLIP_PIX';
}

/** The outputs of a created (or recovered) charge. */
export function chargeOutput(charge: Charge): StepOutput {
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
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  amountCents: (row) => row.input.amountCents,
  steps: [
    {
      name: 'create',
      effect: 'create',
      usesIdempotencyKey: false,
      async run(ctx) {
        const charge = await ctx.client.charges.create(ctx.row.input, { signal: ctx.signal });
        return chargeOutput(charge);
      },
      async recover(ctx) {
        try {
          return chargeOutput(await ctx.client.charges.get(ctx.row.input.correlationId, { signal: ctx.signal }));
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
        if (!isSlip(ctx.row.input.type)) return { pdfFile: null };
        const fileName = safeFileName(ctx.row.input.correlationId, 'pdf');
        await ctx.client.charges.streamPdf(ctx.row.input.correlationId, ctx.outputPath(fileName), {
          signal: ctx.signal,
        });
        return { pdfFile: fileName };
      },
    },
  ],
  resultColumns: ['chargeStatus', 'ourNumber', 'barCode', 'digitableLine', 'qrCode', 'pdfFile'],
};
