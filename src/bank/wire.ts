/**
 * The ONE place where the client's values become the wire's and back: integer cents <-> decimal numbers, and the
 * request bodies of every operation (field names and spellings as the spec shows them).
 *
 * What must hold: no other file of src/bank multiplies or divides an amount by 100. Response schemas
 * (src/bank/schemas.ts) use `wireMoney` below to read amounts.
 */
import { z } from 'zod';
import { centsToWire, wireToCents } from '../formats/money.js';
import type {
  AmountRule,
  BankSlipChargeInput,
  BankSlipPixChargeInput,
  ChargePatchInput,
  CreateDynamicQrInput,
  CreateStaticQrInput,
  Discount,
  PixDynamicChargeInput,
  PixPaymentRequest,
  PixStaticChargeInput,
} from './types.js';

/** Cents -> the wire's decimal number (12345 -> 123.45). */
export function moneyToWire(cents: number): number {
  return centsToWire(cents);
}

/** A response amount: a decimal number on the wire, integer cents after parsing. Fails on fractions of a cent. */
export const wireMoney = z.number().transform((value, ctx) => {
  try {
    return wireToCents(value);
  } catch (err) {
    ctx.addIssue({
      code: 'custom',
      message: `expected an amount in reais with at most 2 decimals, got ${value}${err instanceof Error ? ` (${err.message})` : ''}`,
    });
    return z.NEVER;
  }
});

/**
 * A response amount as `wireMoney` reads it, without zod (src/bank/answer-readers.ts): integer cents, or undefined for
 * what `wireMoney` refuses (not a number, fractions of a cent, out of range); the schema then says why.
 */
export function wireMoneyOrUndefined(value: unknown): number | undefined {
  if (typeof value !== 'number') return undefined;
  try {
    return wireToCents(value);
  } catch {
    return undefined;
  }
}

/** A percentage or money rule from the wire (`type` says which: FIXED/Fixed is money, anything else a percent). */
export function amountRuleFromWire(rule: {
  type?: string | undefined;
  date?: string | undefined;
  amount?: number | undefined;
}): {
  type?: string;
  date?: string;
  percent?: number;
  amountCents?: number;
} {
  const out: { type?: string; date?: string; percent?: number; amountCents?: number } = {};
  if (rule.type !== undefined) out.type = rule.type;
  if (rule.date !== undefined) out.date = rule.date;
  if (rule.amount !== undefined) {
    if (rule.type !== undefined && rule.type.toUpperCase() === 'FIXED') out.amountCents = wireToCents(rule.amount);
    else out.percent = rule.amount;
  }
  return out;
}

function amountRuleToWire(rule: AmountRule): Record<string, unknown> {
  const out: Record<string, unknown> = { type: rule.type };
  if (rule.date !== undefined) out.date = rule.date;
  out.amount = rule.type === 'Fixed' ? moneyToWire(rule.amountCents) : rule.percent;
  return out;
}

function discountToWire(discount: Discount): Record<string, unknown> {
  if (discount.type === 'Fixed') {
    return { type: 'Fixed', items: discount.items.map((i) => ({ date: i.date, amount: moneyToWire(i.amountCents) })) };
  }
  return { type: discount.type, items: discount.items.map((i) => ({ date: i.date, amount: i.percent })) };
}

/** Drops undefined values so that "not given" is never sent as null. */
function compact<T extends Record<string, unknown>>(o: T): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out;
}

/**
 * Body of POST /v1/charges for a bank slip. The spec's bank slip request samples spell the amount `Amount` (capital
 * A) while responses use `amount`; the client sends the sample spelling (docs/service-gaps.md, Charges).
 */
export function bankSlipChargeBody(input: BankSlipChargeInput | BankSlipPixChargeInput): Record<string, unknown> {
  return compact({
    type: input.type,
    correlationId: input.correlationId,
    yourNumber: input.yourNumber,
    ourNumber: input.ourNumber,
    dueDate: input.dueDate,
    Amount: moneyToWire(input.amountCents),
    payer: input.payer,
    finalBeneficiary: input.finalBeneficiary,
    discount: input.discount && discountToWire(input.discount),
    lateFine: input.lateFine && amountRuleToWire(input.lateFine),
    latePayment: input.latePayment && amountRuleToWire(input.latePayment),
  });
}

/** Body of POST /v1/charges for PIX_STATIC / PIX_DYNAMIC (spec 2.3). */
export function pixChargeBody(input: PixStaticChargeInput | PixDynamicChargeInput): Record<string, unknown> {
  return compact({
    type: input.type,
    correlationId: input.correlationId,
    amount: moneyToWire(input.amountCents),
    description: input.description,
    additionalInfo: input.additionalInfo,
    expiresIn: input.type === 'PIX_DYNAMIC' ? input.expiresInSeconds : undefined,
    payer: input.type === 'PIX_DYNAMIC' ? input.payer : undefined,
  });
}

/** Body of PATCH /v1/charges/{id} (spec 2.4): only the fields given. */
export function chargePatchBody(input: ChargePatchInput): Record<string, unknown> {
  return compact({
    walletNumber: input.walletNumber,
    yourNumber: input.yourNumber,
    amount: input.amountCents === undefined ? undefined : moneyToWire(input.amountCents),
    dueDate: input.dueDate,
    payer: input.payer,
    discount: input.discount && discountToWire(input.discount),
    lateFine: input.lateFine && amountRuleToWire(input.lateFine),
    latePayment: input.latePayment && amountRuleToWire(input.latePayment),
    allowPartialPayment: input.allowPartialPayment,
  });
}

/** Body of POST /baas/api/v1/bill-payments: barCode when the looked-up bill has one, else digitableLine. */
export function billPaymentBody(input: {
  amountCents: number;
  barCode?: string | undefined;
  digitableLine?: string | undefined;
  payAt?: string | undefined;
}): Record<string, unknown> {
  return compact({
    amount: moneyToWire(input.amountCents),
    barCode: input.barCode,
    digitableLine: input.barCode === undefined ? input.digitableLine : undefined,
    payAt: input.payAt,
  });
}

/** Body of the Pix QR code payment (spec 4.3). */
export function pixPaymentBody(request: PixPaymentRequest): Record<string, unknown> {
  return compact({
    amount: moneyToWire(request.amountCents),
    description: request.description,
    endToEndId: request.endToEndId,
    transactionId: request.transactionId,
    initiationType: request.initiationType,
  });
}

/**
 * The Pix QR payment as the provider's official clients send it: a transfer (POST /baas/api/v2/transfers). No
 * `transferAt` (the clients leave it out unless scheduling): the body must be the same on every attempt, since a
 * resend with the same IdempotencyKey and another body is a different request to the bank.
 */
export function pixTransferBody(request: PixPaymentRequest): Record<string, unknown> {
  return {
    ...pixPaymentBody(request),
    type: 'Pix',
    saveFavorite: false,
    tags: [],
    splitInstructions: [],
  };
}

/**
 * What the provider's clients send as a dynamic QR's `expiresIn` when the caller gives none (their default, the
 * string "86400": a day, the service's own default too).
 */
export const SDK_DYNAMIC_QR_EXPIRES_IN_SECONDS = 86_400;

/**
 * Body of the dynamic QR creation (spec 2.9). `expiresIn` is a number in the spec, left out when the row gives none
 * (the bank's default); the provider's clients always send it, a string of digits ("86400" by default), hence
 * `expiresInAs`. The city is `city: {name, zipCode}` in the spec and
 * `address: {cityName, zipCode}` in the provider's clients (`cityAs`): under the other name it would be ignored and
 * the code would carry the account's city instead of the row's.
 */
export function dynamicQrBody(
  input: CreateDynamicQrInput,
  expiresInAs: 'number' | 'string' = 'number',
  cityAs: 'city' | 'address' = 'city',
): Record<string, unknown> {
  const address =
    cityAs === 'address' && input.city ? { cityName: input.city.name, zipCode: input.city.zipCode } : undefined;
  return compact({
    type: 'PIX_DYNAMIC',
    correlationId: input.correlationId,
    amount: moneyToWire(input.amountCents),
    description: input.description,
    formatResponse: input.formatResponse,
    expiresIn:
      expiresInAs === 'number'
        ? input.expiresInSeconds
        : String(input.expiresInSeconds ?? SDK_DYNAMIC_QR_EXPIRES_IN_SECONDS),
    payer: input.payer,
    city: cityAs === 'city' ? input.city : undefined,
    address,
    additionalInfos: input.additionalInfos,
  });
}

/**
 * Body of POST /baas/api/v2/pix/qrcode/static (spec 2.10). The text shown to the payer is `additionalInformation` in
 * the spec; the provider's clients send it as `additionalInfo`, with `source: "QR_CODE_API"` (`dialect` 'sdk'): under
 * the spec's name the provider would not read it, and the payer would see no message.
 */
export function staticQrBody(
  input: CreateStaticQrInput,
  dialect: 'interface' | 'sdk' = 'interface',
): Record<string, unknown> {
  const sdk = dialect === 'sdk';
  return compact({
    type: 'PIX_STATIC',
    correlationId: input.correlationId,
    description: input.description,
    amount: input.amountCents === undefined ? undefined : moneyToWire(input.amountCents),
    pixKey: input.pixKey,
    additionalInformation: sdk ? undefined : input.additionalInformation,
    additionalInfo: sdk ? input.additionalInformation : undefined,
    source: sdk ? 'QR_CODE_API' : undefined,
    formatResponse: input.formatResponse,
  });
}
