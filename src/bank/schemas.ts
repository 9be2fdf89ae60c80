/**
 * Response schemas (spec 2.2-2.12). Loose: fields the service adds pass through untyped. Strict on what the client
 * and the pipeline use, so a changed response fails at once with the field's path (UnexpectedResponseError) instead
 * of writing `undefined` into a result file.
 *
 * Money fields are read with `wireMoney` (src/bank/wire.ts) and renamed `...Cents`; `interesetAmount` (the spec's
 * spelling) becomes `interestAmountCents`.
 *
 * Both spellings are read where the spec and the provider's clients disagree (docs/providers.md): `qrCodePayload` /
 * `payloadPix`, `expiresAt` / `expirationTime`, `interesetAmount` / `interestAmount`. On the answers of requests
 * that act (payments, creations), only the fields the pipeline needs are strict; every other field is `lenient`
 * (absent, null or of an unexpected type reads as absent), so a row the bank carried out never fails because of a
 * field it did not need.
 */
import { z } from 'zod';
import { BILL_STATUSES } from '../formats/bills.js';
import { PIX_QR_TYPES } from '../formats/pix.js';
import type {
  BankSlipCharge,
  Bill,
  BillPayment,
  Charge,
  ChargeActionResult,
  ChargePayment,
  ClaimCancelResult,
  ClaimSearchItem,
  ClaimStartResult,
  CreatedCharge,
  DynamicQrCode,
  PaymentCalculation,
  PixCharge,
  PixInitialization,
  PixPayment,
  StaticQrCode,
  Webhook,
} from './types.js';
import { amountRuleFromWire, wireMoney } from './wire.js';

const str = z.string();
const optStr = z.string().optional();
/** Some services send null for absent values; treat null as absent. */
const nullish = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);
const looseRecord = z.looseObject({});
/** A field the pipeline does not need: read when well-formed, absent otherwise (never a parse failure). */
const lenient = <T extends z.ZodType>(schema: T) =>
  schema
    .nullish()
    .catch(undefined)
    .transform((v) => v ?? undefined);
/** The first of two spellings that is present. */
function either<T>(a: T | undefined, b: T | undefined): T | undefined {
  return a !== undefined ? a : b;
}

// ---------------------------------------------------------------------------------------------------------------
// Charges

/** One payment of a charge (shape not shown in the spec): its amount is read as cents when present. */
const chargePayment = z
  .looseObject({ amount: nullish(wireMoney) })
  .transform(({ amount, ...rest }): ChargePayment => (amount === undefined ? rest : { ...rest, amountCents: amount }));

const chargeWire = z.looseObject({
  correlationId: str,
  type: optStr,
  status: str,
  amount: wireMoney,
  yourNumber: nullish(z.string()),
  ourNumber: nullish(z.string()),
  dueDate: nullish(z.string()),
  barCode: nullish(z.string()),
  digitableLine: nullish(z.string()),
  qrCode: nullish(z.string()),
  payments: nullish(z.array(chargePayment)),
  payer: nullish(looseRecord),
  expiresIn: nullish(z.number()),
  createdAt: optStr,
  updatedAt: optStr,
});

export const chargeSchema: z.ZodType<Charge> = chargeWire.transform(({ amount, ...rest }) => ({
  ...rest,
  amountCents: amount,
}));

/**
 * A creation's answer: every field the pipeline does not write is `lenient` (the charge exists once the bank answered
 * 2xx). `correlationId` may be absent: `ChargesResource.create` fills in the one it sent.
 */
const createdChargeWire = z.looseObject({
  correlationId: lenient(z.string()),
  type: lenient(z.string()),
  status: lenient(z.string()),
  amount: lenient(wireMoney),
  yourNumber: lenient(z.string()),
  ourNumber: lenient(z.string()),
  dueDate: lenient(z.string()),
  barCode: lenient(z.string()),
  digitableLine: lenient(z.string()),
  qrCode: lenient(z.string()),
  payments: lenient(z.array(chargePayment)),
  payer: lenient(looseRecord),
  expiresIn: lenient(z.number()),
  createdAt: lenient(z.string()),
  updatedAt: lenient(z.string()),
});

export const bankSlipChargeSchema: z.ZodType<BankSlipCharge> = createdChargeWire
  .extend({ barCode: str, digitableLine: str, ourNumber: str })
  .transform((c) => {
    const { amount, correlationId, ...rest } = c;
    return { ...rest, correlationId: correlationId ?? '', ...(amount !== undefined ? { amountCents: amount } : {}) };
  });

export const pixChargeSchema: z.ZodType<PixCharge> = createdChargeWire.extend({ qrCode: str }).transform((c) => {
  const { amount, correlationId, ...rest } = c;
  return { ...rest, correlationId: correlationId ?? '', ...(amount !== undefined ? { amountCents: amount } : {}) };
});

/** BANKSLIP_PIX creation: the spec shows the Pix record shape; a bank slip shape with a qrCode is accepted too. */
export const bankSlipPixChargeSchema: z.ZodType<CreatedCharge> = createdChargeWire
  .refine((c) => c.qrCode !== undefined || c.barCode !== undefined, {
    message: 'expected qrCode or barCode, got neither',
    path: ['qrCode'],
  })
  .transform((c) => {
    const { amount, correlationId, ...rest } = c;
    return { ...rest, correlationId: correlationId ?? '', ...(amount !== undefined ? { amountCents: amount } : {}) };
  });

export const chargeListSchema: z.ZodType<Charge[]> = z.array(chargeSchema);

export const chargeActionSchema: z.ZodType<ChargeActionResult> = z
  .looseObject({
    correlationId: optStr,
    status: optStr,
    amount: nullish(wireMoney),
    payments: nullish(z.array(chargePayment)),
  })
  .transform(({ amount, ...rest }) => (amount === undefined ? rest : { ...rest, amountCents: amount }));

// ---------------------------------------------------------------------------------------------------------------
// Bill payments

const optMoney = wireMoney.optional();

/** A payment calculation's amounts as the wire names them, each already in cents. */
export interface WireCalculation {
  rebateAmount?: number | undefined;
  interesetAmount?: number | undefined;
  interestAmount?: number | undefined;
  fineAmount?: number | undefined;
  discountAmount?: number | undefined;
  chargedAmount: number;
  minimumPaymentAmount?: number | undefined;
  maximumPaymentAmount?: number | undefined;
}

/**
 * The calculation as the client names it: `...Cents`, interest from either spelling. The schema's transform, and
 * src/bank/answer-readers.ts's, so that both give the same keys in the same order.
 */
export function calculationFromWire(c: WireCalculation): PaymentCalculation {
  const out: PaymentCalculation = { chargedAmountCents: c.chargedAmount };
  const interest = c.interesetAmount ?? c.interestAmount;
  if (c.rebateAmount !== undefined) out.rebateAmountCents = c.rebateAmount;
  if (interest !== undefined) out.interestAmountCents = interest;
  if (c.fineAmount !== undefined) out.fineAmountCents = c.fineAmount;
  if (c.discountAmount !== undefined) out.discountAmountCents = c.discountAmount;
  if (c.minimumPaymentAmount !== undefined) out.minimumPaymentAmountCents = c.minimumPaymentAmount;
  if (c.maximumPaymentAmount !== undefined) out.maximumPaymentAmountCents = c.maximumPaymentAmount;
  return out;
}

const paymentCalculationObject = z.looseObject({
  rebateAmount: optMoney,
  interesetAmount: optMoney,
  interestAmount: optMoney,
  fineAmount: optMoney,
  discountAmount: optMoney,
  chargedAmount: wireMoney,
  minimumPaymentAmount: optMoney,
  maximumPaymentAmount: optMoney,
});

export const paymentCalculationSchema: z.ZodType<PaymentCalculation> =
  paymentCalculationObject.transform(calculationFromWire);

const party = z.looseObject({ document: optStr, name: optStr, type: optStr, fantasyName: optStr });
const issuer = z.looseObject({ ispb: optStr, name: optStr, nameFantasy: optStr });
const amountRule = z
  .looseObject({ date: nullish(z.string()), amount: nullish(z.number()), type: nullish(z.string()) })
  .transform((r) => amountRuleFromWire(r));

const billObject = z.looseObject({
  identifierNumber: optStr,
  type: str,
  status: z.enum(BILL_STATUSES),
  amount: wireMoney,
  dueDate: nullish(z.string()),
  barCode: nullish(z.string()),
  digitableLine: nullish(z.string()),
  isAllowPartialPayment: z.boolean().default(false),
  paymentCalculation: nullish(paymentCalculationSchema),
  payer: nullish(party),
  overduePaymentInterest: nullish(amountRule),
  overduePaymentFine: nullish(amountRule),
  discounts: nullish(z.array(z.unknown())),
  beneficiary: nullish(party),
  issuer: nullish(issuer),
});

export const billSchema: z.ZodType<Bill> = billObject
  .refine((b) => b.barCode !== undefined || b.digitableLine !== undefined, {
    message: 'expected barCode or digitableLine, got neither',
    path: ['barCode'],
  })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

const billPaymentObject = z.looseObject({
  id: z.union([z.string(), z.number().transform(String)]),
  status: str,
  identifierNumber: lenient(z.string()),
  barCode: lenient(z.string()),
  digitableLine: lenient(z.string()),
  dueDate: lenient(z.string()),
  createdAt: lenient(z.string()),
  originalAmount: lenient(wireMoney),
  paidAmount: lenient(wireMoney),
  paymentCalculation: lenient(paymentCalculationSchema),
  beneficiary: lenient(party),
  issuer: lenient(issuer),
});

/** The payment's answer (spec 2.6): only `id` and `status` are needed. */
export const billPaymentSchema: z.ZodType<BillPayment> = billPaymentObject.transform(
  ({ originalAmount, paidAmount, ...rest }) => {
    const out: BillPayment = { ...rest };
    if (originalAmount !== undefined) out.originalAmountCents = originalAmount;
    if (paidAmount !== undefined) out.paidAmountCents = paidAmount;
    return out;
  },
);

/**
 * The fields the bill answers' loose objects name, in their order: src/bank/answer-readers.ts reads these and copies
 * the others as they are (test/answer-readers.test.ts generates answers with each of them).
 */
export const BILL_ANSWER_FIELDS = {
  bill: Object.keys(billObject.shape),
  billPayment: Object.keys(billPaymentObject.shape),
  calculation: Object.keys(paymentCalculationObject.shape),
  party: Object.keys(party.shape),
  issuer: Object.keys(issuer.shape),
} as const;

// ---------------------------------------------------------------------------------------------------------------
// Pix QR code payments

const pixAccount = z.looseObject({
  number: optStr,
  branch: optStr,
  type: optStr,
  participant: z.looseObject({ name: optStr, ispb: optStr }).optional(),
  holder: z.looseObject({ name: optStr, document: optStr, type: optStr }).optional(),
});

export const pixInitializationSchema: z.ZodType<PixInitialization> = z
  .looseObject({
    key: optStr,
    endToEndId: str,
    transactionId: str,
    allowChangeAmount: z.boolean(),
    categoryCode: optStr,
    type: z.enum(PIX_QR_TYPES),
    initiationType: z.enum(['QR_CODE_STATIC', 'QR_CODE_DYNAMIC']).optional(),
    status: str,
    amount: nullish(wireMoney),
    originalAmount: nullish(wireMoney),
    beneficiary: lenient(pixAccount),
    additionalInfos: lenient(z.array(z.looseObject({ name: optStr, value: optStr }))),
    expiresAt: lenient(z.string()),
    expirationTime: lenient(z.string()),
  })
  .transform(({ amount, originalAmount, expiresAt, expirationTime, ...rest }) => {
    const out: PixInitialization = { ...rest };
    const expires = either(expiresAt, expirationTime);
    if (expires !== undefined) out.expiresAt = expires;
    if (amount !== undefined) out.amountCents = amount;
    if (originalAmount !== undefined) out.originalAmountCents = originalAmount;
    return out;
  });

/** The payment's answer (spec 2.8), or the transfer's (`delbank`): only `id` and `status` are needed. */
export const pixPaymentSchema: z.ZodType<PixPayment> = z
  .looseObject({
    id: z.union([z.string(), z.number().transform(String)]),
    endToEndId: lenient(z.string()),
    status: str,
    amount: lenient(wireMoney),
    transactionNsu: lenient(z.number()),
    type: lenient(z.string()),
    createdAt: lenient(z.string()),
    description: lenient(z.string()),
    payer: lenient(pixAccount),
    beneficiary: lenient(pixAccount),
  })
  .transform(({ amount, ...rest }) => {
    const out: PixPayment = { ...rest };
    if (amount !== undefined) out.amountCents = amount;
    return out;
  });

// ---------------------------------------------------------------------------------------------------------------
// QR code creation

/**
 * The dynamic QR code: the spec's answer (v1: `qrCodePayload`, `expiresAt`) or the provider's (v2: `payloadPix`,
 * `transactionId`, `payloadJws`, `expirationTime`). Only the payload is needed.
 */
export const dynamicQrSchema: z.ZodType<DynamicQrCode> = z
  .looseObject({
    correlationId: lenient(z.string()),
    description: lenient(z.string()),
    amount: lenient(wireMoney),
    status: lenient(z.string()),
    transactionId: lenient(z.string()),
    payloadJws: lenient(z.string()),
    expiresIn: lenient(z.union([z.number(), z.string().regex(/^\d+$/).transform(Number)])),
    createdAt: lenient(z.string()),
    updatedAt: lenient(z.string()),
    expiresAt: lenient(z.string()),
    expirationTime: lenient(z.string()),
    qrCodePayload: lenient(z.string().min(1)),
    payloadPix: lenient(z.string().min(1)),
    qrCodeImageBase64: lenient(z.string()),
    payer: lenient(looseRecord),
    city: lenient(looseRecord),
  })
  .refine((q) => q.qrCodePayload !== undefined || q.payloadPix !== undefined, {
    message: 'expected qrCodePayload or payloadPix, got neither',
    path: ['qrCodePayload'],
  })
  .transform(({ amount, qrCodePayload, payloadPix, expiresAt, expirationTime, ...rest }) => {
    const out: DynamicQrCode = { ...rest, qrCodePayload: (qrCodePayload ?? payloadPix)! };
    if (amount !== undefined) out.amountCents = amount;
    const expires = either(expiresAt, expirationTime);
    if (expires !== undefined) out.expiresAt = expires;
    return out;
  });

/** The static QR code (spec 2.10): only the payload (`payloadPix`, or `qrCodePayload`) is needed. */
export const staticQrSchema: z.ZodType<StaticQrCode> = z
  .looseObject({
    transactionId: lenient(z.union([z.string(), z.number().transform(String)])),
    correlationId: lenient(z.string()),
    amount: lenient(wireMoney),
    pixKey: lenient(z.string()),
    beneficiaryName: lenient(z.string()),
    address: lenient(looseRecord),
    additionalInfo: lenient(z.string()),
    createdAt: lenient(z.string()),
    payloadPix: lenient(z.string().min(1)),
    qrCodePayload: lenient(z.string().min(1)),
    base64Image: lenient(z.string()),
  })
  .refine((q) => q.payloadPix !== undefined || q.qrCodePayload !== undefined, {
    message: 'expected payloadPix or qrCodePayload, got neither',
    path: ['payloadPix'],
  })
  .transform(({ amount, payloadPix, qrCodePayload, ...rest }) => {
    const out: StaticQrCode = { ...rest, payloadPix: (payloadPix ?? qrCodePayload)! };
    if (amount !== undefined) out.amountCents = amount;
    return out;
  });

// ---------------------------------------------------------------------------------------------------------------
// Key claims

const participant = z.looseObject({ name: optStr, ispb: optStr });

export const claimStartSchema: z.ZodType<ClaimStartResult> = z.looseObject({
  id: str,
  status: str,
  resolutionDeadline: optStr,
  donorParticipant: participant.optional(),
});

export const claimSearchItemSchema: z.ZodType<ClaimSearchItem> = z.looseObject({
  id: str,
  type: optStr,
  status: str,
  participationFlowType: optStr,
  entry: z.looseObject({ key: optStr, type: optStr }).optional(),
  updatedAt: optStr,
  resolutionDeadline: optStr,
  donorParticipant: participant.optional(),
  claimantAccount: pixAccount.optional(),
});

export const claimSearchSchema: z.ZodType<ClaimSearchItem[]> = z.array(claimSearchItemSchema);

export const claimCancelSchema: z.ZodType<ClaimCancelResult> = z.looseObject({
  id: str,
  status: str,
  updatedAt: optStr,
  resolutionDeadline: optStr,
  cancellation: z.looseObject({ reason: optStr, source: optStr }).optional(),
});

// ---------------------------------------------------------------------------------------------------------------
// Webhooks

/** The authorization value is a secret: it is removed from whatever the service returns. */
export const webhookSchema: z.ZodType<Webhook> = z
  .looseObject({
    id: z.union([z.string(), z.number().transform(String)]),
    eventType: str,
    url: str,
    authorizationScheme: nullish(z.string()),
    createdAt: optStr,
    updatedAt: optStr,
  })
  .transform(({ authorization: _secret, ...rest }) => rest);

export const webhookListSchema: z.ZodType<Webhook[]> = z.array(webhookSchema);
