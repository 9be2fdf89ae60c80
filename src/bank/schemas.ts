/**
 * Response schemas (spec 2.2-2.12). Loose: fields the service adds pass through untyped. Strict on what the client
 * and the pipeline use, so a changed response fails at once with the field's path (UnexpectedResponseError) instead
 * of writing `undefined` into a result file.
 *
 * Money fields are read with `wireMoney` (src/bank/wire.ts) and renamed `...Cents`; `interesetAmount` (the spec's
 * spelling) becomes `interestAmountCents`.
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

export const bankSlipChargeSchema: z.ZodType<BankSlipCharge> = chargeWire
  .extend({ barCode: str, digitableLine: str, ourNumber: str, dueDate: str })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

export const pixChargeSchema: z.ZodType<PixCharge> = chargeWire
  .extend({ qrCode: str, payments: z.array(chargePayment) })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

/** BANKSLIP_PIX creation: the spec shows the Pix record shape; a bank slip shape with a qrCode is accepted too. */
export const bankSlipPixChargeSchema: z.ZodType<Charge> = chargeWire
  .refine((c) => c.qrCode !== undefined || c.barCode !== undefined, {
    message: 'expected qrCode or barCode, got neither',
    path: ['qrCode'],
  })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

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

export const paymentCalculationSchema: z.ZodType<PaymentCalculation> = z
  .looseObject({
    rebateAmount: optMoney,
    interesetAmount: optMoney,
    interestAmount: optMoney,
    fineAmount: optMoney,
    discountAmount: optMoney,
    chargedAmount: wireMoney,
    minimumPaymentAmount: optMoney,
    maximumPaymentAmount: optMoney,
  })
  .transform((c) => {
    const out: PaymentCalculation = { chargedAmountCents: c.chargedAmount };
    const interest = c.interesetAmount ?? c.interestAmount;
    if (c.rebateAmount !== undefined) out.rebateAmountCents = c.rebateAmount;
    if (interest !== undefined) out.interestAmountCents = interest;
    if (c.fineAmount !== undefined) out.fineAmountCents = c.fineAmount;
    if (c.discountAmount !== undefined) out.discountAmountCents = c.discountAmount;
    if (c.minimumPaymentAmount !== undefined) out.minimumPaymentAmountCents = c.minimumPaymentAmount;
    if (c.maximumPaymentAmount !== undefined) out.maximumPaymentAmountCents = c.maximumPaymentAmount;
    return out;
  });

const party = z.looseObject({ document: optStr, name: optStr, type: optStr, fantasyName: optStr });
const issuer = z.looseObject({ ispb: optStr, name: optStr, nameFantasy: optStr });
const amountRule = z
  .looseObject({ date: nullish(z.string()), amount: nullish(z.number()), type: nullish(z.string()) })
  .transform((r) => amountRuleFromWire(r));

export const billSchema: z.ZodType<Bill> = z
  .looseObject({
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
  })
  .refine((b) => b.barCode !== undefined || b.digitableLine !== undefined, {
    message: 'expected barCode or digitableLine, got neither',
    path: ['barCode'],
  })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

export const billPaymentSchema: z.ZodType<BillPayment> = z
  .looseObject({
    id: str,
    status: str,
    identifierNumber: optStr,
    barCode: nullish(z.string()),
    digitableLine: nullish(z.string()),
    dueDate: nullish(z.string()),
    createdAt: optStr,
    originalAmount: nullish(wireMoney),
    paidAmount: nullish(wireMoney),
    paymentCalculation: nullish(paymentCalculationSchema),
    beneficiary: nullish(party),
    issuer: nullish(issuer),
  })
  .transform(({ originalAmount, paidAmount, ...rest }) => {
    const out: BillPayment = { ...rest };
    if (originalAmount !== undefined) out.originalAmountCents = originalAmount;
    if (paidAmount !== undefined) out.paidAmountCents = paidAmount;
    return out;
  });

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
    beneficiary: pixAccount.optional(),
    additionalInfos: nullish(z.array(z.looseObject({ name: optStr, value: optStr }))),
  })
  .transform(({ amount, originalAmount, ...rest }) => {
    const out: PixInitialization = { ...rest };
    if (amount !== undefined) out.amountCents = amount;
    if (originalAmount !== undefined) out.originalAmountCents = originalAmount;
    return out;
  });

export const pixPaymentSchema: z.ZodType<PixPayment> = z
  .looseObject({
    id: str,
    endToEndId: str,
    status: str,
    amount: wireMoney,
    transactionNsu: z.number().optional(),
    type: optStr,
    createdAt: optStr,
    description: nullish(z.string()),
    payer: pixAccount.optional(),
    beneficiary: pixAccount.optional(),
  })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

// ---------------------------------------------------------------------------------------------------------------
// QR code creation

export const dynamicQrSchema: z.ZodType<DynamicQrCode> = z
  .looseObject({
    correlationId: str,
    description: nullish(z.string()),
    amount: wireMoney,
    status: str,
    expiresIn: z.number().optional(),
    createdAt: optStr,
    updatedAt: optStr,
    expiresAt: optStr,
    qrCodePayload: str,
    qrCodeImageBase64: nullish(z.string()),
    payer: nullish(looseRecord),
    city: nullish(looseRecord),
  })
  .transform(({ amount, ...rest }) => ({ ...rest, amountCents: amount }));

export const staticQrSchema: z.ZodType<StaticQrCode> = z
  .looseObject({
    transactionId: optStr,
    correlationId: str,
    amount: nullish(wireMoney),
    pixKey: optStr,
    beneficiaryName: optStr,
    address: nullish(looseRecord),
    additionalInfo: nullish(z.string()),
    createdAt: optStr,
    payloadPix: str,
    base64Image: nullish(z.string()),
  })
  .transform(({ amount, ...rest }) => {
    const out: StaticQrCode = { ...rest };
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
