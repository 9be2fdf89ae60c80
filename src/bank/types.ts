/**
 * The client's view of the service's records and requests (spec section 2).
 *
 * Rules that hold for every type here:
 * - Money is integer cents (`Cents`), named `...Cents`. The wire's decimal numbers are converted in ONE place,
 *   src/bank/wire.ts. A percentage is a plain number named `percent` and is never converted.
 * - Dates are the wire's strings (`yyyy-mm-dd`, ISO 8601 timestamps); the client does not reinterpret them.
 * - Response records are parsed loosely: fields the service adds are kept at run time but not typed. Fields the
 *   client uses are required by the schemas in src/bank/schemas.ts, which fail with the field's path.
 */
import type { BillStatus } from '../formats/bills.js';
import type {
  AccountType,
  CancellationReason,
  ClaimKeyType,
  HolderType,
  ParticipationFlowType,
} from '../formats/claims.js';
import type { WebhookEventType } from '../formats/events.js';
import type { PixInitiationType, PixQrType, QrFormatResponse } from '../formats/pix.js';
import type { Cents } from '../types.js';

export type { Cents, WebhookEventType };

/** Per-call options. */
export interface RequestOptions {
  /** Aborts the request (and any wait between attempts). */
  signal?: AbortSignal | undefined;
  /**
   * Whose request this is, for the rate limiter's gate: the handle the request queue gave the task making the
   * request (`QueueTask`, src/queue/request-queue.ts), handed as is to `beforeSend` at every attempt. Without it the
   * queue does not limit the request. @defaultValue none
   */
  task?: object | undefined;
}

// ---------------------------------------------------------------------------------------------------------------
// Shared pieces

export interface Address {
  zipCode?: string;
  publicPlace?: string;
  neighborhood?: string;
  number?: string;
  complement?: string;
  city?: string;
  /** Two-letter state code (UF). */
  state?: string;
}

export interface Payer {
  name: string;
  /** CPF or CNPJ, digits. */
  document: string;
  email?: string;
  phone?: { prefix: string; number: string };
  address?: Address;
}

/**
 * A late fine, late interest or overdue amount rule. Its wire `amount` is a percentage or money depending on `type`,
 * so the two cases are told apart here: `percent` is sent as is, `amountCents` is converted.
 */
export type AmountRule =
  | { type: 'Percentage'; date?: string; percent: number }
  | { type: 'Fixed'; date?: string; amountCents: Cents };

/** Discount of a bank slip: one value per date (three items in the spec's samples). */
export type Discount =
  | { type: 'Fixed'; items: Array<{ date: string; amountCents: Cents }> }
  | { type: 'Percentage'; items: Array<{ date: string; percent: number }> };

// ---------------------------------------------------------------------------------------------------------------
// Charges (spec 2.1-2.4, 4.1)

interface BankSlipChargeFields {
  correlationId: string;
  /** Issuer's identifier, printed as document number. */
  yourNumber?: string;
  /** Only for an express charge (wallet 121); never for a normal charge (the service assigns it, wallet 112). */
  ourNumber?: string;
  /** yyyy-mm-dd */
  dueDate: string;
  amountCents: Cents;
  payer: Payer;
  finalBeneficiary?: { name: string; document: string; address?: Address };
  discount?: Discount;
  lateFine?: AmountRule;
  latePayment?: AmountRule;
}

/** Normal bank slip (no ourNumber), express bank slip (ourNumber), optionally with a final beneficiary. */
export interface BankSlipChargeInput extends BankSlipChargeFields {
  type: 'BANKSLIP';
}

/** Bank slip carrying a Pix QR code (wallet 112). */
export interface BankSlipPixChargeInput extends BankSlipChargeFields {
  type: 'BANKSLIP_PIX';
}

export interface PixChargeAdditionalInfo {
  key: string;
  /** At most 37 characters for PIX_STATIC. */
  value: string;
}

export interface PixStaticChargeInput {
  type: 'PIX_STATIC';
  correlationId: string;
  /** Greater than 0. */
  amountCents: Cents;
  description?: string;
  additionalInfo?: PixChargeAdditionalInfo[];
}

export interface PixDynamicChargeInput {
  type: 'PIX_DYNAMIC';
  correlationId: string;
  /** Greater than 0. */
  amountCents: Cents;
  description?: string;
  additionalInfo?: PixChargeAdditionalInfo[];
  /** Seconds until the charge expires (wire `expiresIn`). */
  expiresInSeconds?: number;
  payer?: { name: string; document: string };
}

export type CreateChargeInput =
  | BankSlipChargeInput
  | BankSlipPixChargeInput
  | PixStaticChargeInput
  | PixDynamicChargeInput;

/** A charge record as the service returns it (creation, query, list). Which fields are present depends on the type. */
export interface Charge {
  correlationId: string;
  type?: string;
  status: string;
  amountCents: Cents;
  yourNumber?: string;
  ourNumber?: string;
  dueDate?: string;
  barCode?: string;
  digitableLine?: string;
  /** Pix copy-and-paste payload (Pix charges and BANKSLIP_PIX). */
  qrCode?: string;
  payments?: ChargePayment[];
  payer?: Record<string, unknown>;
  expiresIn?: number;
  createdAt?: string;
  updatedAt?: string;
}

/**
 * A creation's answer: the charge exists once the bank answered 2xx, so only what the pipeline writes is required;
 * `status` and `amountCents` are absent when the bank left them out or spelt them unreadably (never a reason to fail
 * a row whose charge was created). `correlationId` is the one sent when the answer leaves it out.
 */
export type CreatedCharge = Omit<Charge, 'status' | 'amountCents'> & { status?: string; amountCents?: Cents };

/** Creation response of a BANKSLIP charge (spec 2.2): bar code, digitable line and our number are what is needed. */
export interface BankSlipCharge extends CreatedCharge {
  barCode: string;
  digitableLine: string;
  ourNumber: string;
}

/** Creation response of a PIX_STATIC / PIX_DYNAMIC charge (spec 2.3). */
/** Creation response of a Pix charge (spec 2.3): the payload is what is needed; `payments` is empty on creation. */
export interface PixCharge extends CreatedCharge {
  qrCode: string;
}

/** A payment received by a charge (shape not shown in the spec; other fields pass through untyped). */
export interface ChargePayment {
  id?: string;
  amountCents?: Cents;
  paidAt?: string;
}

/** Query of the charge list (spec 4.1). The client refuses `limit` > 100 and a range over one year before sending. */
export interface ListChargesInput {
  /** yyyy-mm-dd */
  startDate: string;
  /** yyyy-mm-dd */
  endDate: string;
  page?: number;
  /** At most 100. */
  limit?: number;
}

/** Partial update (spec 2.4). Only the fields given are sent. */
export interface ChargePatchInput {
  walletNumber?: string;
  yourNumber?: string;
  amountCents?: Cents;
  /** yyyy-mm-dd */
  dueDate?: string;
  payer?: {
    name?: string;
    document?: string;
    zipCode?: string;
    address?: string;
    neighborhood?: string;
    state?: string;
    city?: string;
  };
  discount?: Discount;
  lateFine?: AmountRule;
  latePayment?: AmountRule;
  allowPartialPayment?: boolean;
}

/** Body of void, staging pay and staging expire (not shown in the spec: any JSON object; empty body gives {}). */
export interface ChargeActionResult {
  correlationId?: string;
  status?: string;
  amountCents?: Cents;
  payments?: ChargePayment[];
}

/** Where a streamed PDF went. */
export interface StreamedFile {
  filePath: string;
  bytes: number;
  contentType: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Bill payments (spec 2.5, 2.6, 4.2)

export type { BillStatus };

/** `interesetAmount` of the wire is spelled right here (`interestAmountCents`). */
export interface PaymentCalculation {
  rebateAmountCents?: Cents;
  interestAmountCents?: Cents;
  fineAmountCents?: Cents;
  discountAmountCents?: Cents;
  chargedAmountCents: Cents;
  minimumPaymentAmountCents?: Cents;
  maximumPaymentAmountCents?: Cents;
}

export interface Party {
  document?: string;
  name?: string;
  type?: string;
}

/** A bill as looked up (spec 2.5). */
export interface Bill {
  identifierNumber?: string;
  type: string;
  status: BillStatus;
  amountCents: Cents;
  /** Date and hour, as the service sends it. */
  dueDate?: string;
  barCode?: string;
  digitableLine?: string;
  isAllowPartialPayment: boolean;
  paymentCalculation?: PaymentCalculation;
  payer?: Party;
  overduePaymentInterest?: { date?: string; type?: string; percent?: number; amountCents?: Cents };
  overduePaymentFine?: { date?: string; type?: string; percent?: number; amountCents?: Cents };
  discounts?: unknown[];
  beneficiary?: Party & { fantasyName?: string };
  issuer?: { ispb?: string; name?: string; nameFantasy?: string };
}

export interface PayBillInput {
  amountCents: Cents;
  /** Schedules the payment (ISO 8601 date-time). Omitted: the next business hour. */
  payAt?: string;
  /** The GUID derived by the pipeline for this intent; the same on every attempt. */
  idempotencyKey: string;
  /**
   * This request repeats, with the same IdempotencyKey, one whose outcome is unknown (timeout, dropped connection,
   * crash). The bill's status and amount range are then NOT checked again: the first request may itself have paid
   * (the bill then reads PAID or SCHEDULED), and the bank answers a repeated key with the first outcome instead of
   * paying again. Never set it for a new intent. @defaultValue false
   */
  resendOfUnknownOutcome?: boolean;
}

/** Result of a bill payment (spec 2.6). */
export interface BillPayment {
  id: string;
  status: string;
  identifierNumber?: string;
  barCode?: string;
  digitableLine?: string;
  dueDate?: string;
  createdAt?: string;
  originalAmountCents?: Cents;
  paidAmountCents?: Cents;
  paymentCalculation?: PaymentCalculation;
  beneficiary?: Party & { fantasyName?: string };
  issuer?: { ispb?: string; name?: string; nameFantasy?: string };
}

// ---------------------------------------------------------------------------------------------------------------
// Pix QR code payments (spec 2.7, 2.8, 4.3)

export type { PixInitiationType, PixQrType };

export interface PixAccount {
  number?: string;
  branch?: string;
  type?: string;
  participant?: { name?: string; ispb?: string };
  holder?: { name?: string; document?: string; type?: string };
}

/** Result of a payment initialization (spec 2.7). */
export interface PixInitialization {
  key?: string;
  /** When the endToEndId stops being usable (wire `expiresAt`, or `expirationTime` as the provider's clients read it). */
  expiresAt?: string;
  /** Single use, expires. */
  endToEndId: string;
  transactionId: string;
  allowChangeAmount: boolean;
  categoryCode?: string;
  type: PixQrType;
  initiationType?: PixInitiationType;
  status: string;
  amountCents?: Cents;
  originalAmountCents?: Cents;
  beneficiary?: PixAccount;
  additionalInfos?: Array<{ name?: string; value?: string }>;
}

/** Body of the payment, built only by `toPixPaymentRequest` (src/bank/pix-payments.ts). */
export interface PixPaymentRequest {
  amountCents: Cents;
  description?: string;
  endToEndId: string;
  transactionId: string;
  initiationType: PixInitiationType;
}

/** A Pix QR code payment (spec 2.8). */
export interface PixPayment {
  id: string;
  /** Absent when the bank's answer leaves it out (the caller knows it from the initialization). */
  endToEndId?: string;
  status: string;
  /** Absent when the bank's answer leaves it out or spells it unreadably: never a reason to fail a paid row. */
  amountCents?: Cents;
  transactionNsu?: number;
  type?: string;
  createdAt?: string;
  description?: string;
  payer?: PixAccount;
  beneficiary?: PixAccount;
}

// ---------------------------------------------------------------------------------------------------------------
// QR code creation (spec 2.9, 2.10, 4.4)

export type { QrFormatResponse };

export interface CreateDynamicQrInput {
  /** A GUID. */
  correlationId: string;
  amountCents: Cents;
  description?: string;
  /** @defaultValue 'ONLY_PAYLOAD' (service side) */
  formatResponse?: QrFormatResponse;
  /** Wire `expiresIn`. @defaultValue 86400 (service side) */
  expiresInSeconds?: number;
  payer?: { name: string; document: string };
  city?: { name: string; zipCode: string };
  additionalInfos?: Array<{ name: string; value: string }>;
}

export interface DynamicQrCode {
  correlationId?: string;
  description?: string;
  amountCents?: Cents;
  status?: string;
  /** The QR code's txid (the provider's v2 answer; not in the spec's). */
  transactionId?: string;
  /** The signed payload (the provider's v2 answer). */
  payloadJws?: string;
  expiresIn?: number;
  createdAt?: string;
  updatedAt?: string;
  /** Wire `expiresAt`, or `expirationTime`. */
  expiresAt?: string;
  /** Wire `qrCodePayload` (spec), or `payloadPix` (the provider's v2 answer). */
  qrCodePayload: string;
  /** Base64 PNG, when PAYLOAD_AND_QRCODE was asked. */
  qrCodeImageBase64?: string;
  payer?: Record<string, unknown>;
  city?: Record<string, unknown>;
}

export interface CreateStaticQrInput {
  correlationId: string;
  description?: string;
  /** Omitted: the payer chooses the value. */
  amountCents?: Cents;
  pixKey?: string;
  /** Shown to the payer; at most 64 characters. */
  additionalInformation?: string;
  formatResponse?: QrFormatResponse;
}

export interface StaticQrCode {
  transactionId?: string;
  correlationId?: string;
  amountCents?: Cents;
  pixKey?: string;
  beneficiaryName?: string;
  address?: Record<string, unknown>;
  additionalInfo?: string;
  createdAt?: string;
  /** Wire `payloadPix`, or `qrCodePayload`. */
  payloadPix: string;
  /** PNG data URI. */
  base64Image?: string;
}

// ---------------------------------------------------------------------------------------------------------------
// Key claims (spec 2.11, 4.5)

export type { AccountType, ClaimKeyType, HolderType, ParticipationFlowType };
/** `PENDIG` is the service's spelling; `PENDING` appears in a sample. */
export type ClaimStatus = 'PENDIG' | 'PENDING' | 'AWAITING_RESOLUTION' | 'CONFIRMED' | 'CANCELED' | 'COMPLETED';
export type ClaimCancelReason = CancellationReason;

export interface StartClaimInput {
  /** Required for EMAIL and PHONE; for DOCUMENT the key is the holder document. */
  key?: string;
  type: ClaimKeyType;
  account: {
    number: string;
    branch: string;
    type: AccountType;
    holder: { document: string; name: string; type: HolderType };
    createdAt?: string;
  };
}

export interface ClaimStartResult {
  id: string;
  status: string;
  resolutionDeadline?: string;
  donorParticipant?: { name?: string; ispb?: string };
}

export interface SearchClaimsInput {
  participationFlowType: ParticipationFlowType;
  /** @defaultValue 'AWAITING_RESOLUTION' (service side) */
  status?: ClaimStatus;
  account?: {
    number?: string;
    branch?: string;
    type?: AccountType;
    /** When present, document and type are required. */
    holder?: { document: string; type: HolderType; name?: string };
  };
}

export interface ClaimSearchItem {
  id: string;
  type?: string;
  status: string;
  participationFlowType?: string;
  entry?: { key?: string; type?: string };
  updatedAt?: string;
  resolutionDeadline?: string;
  donorParticipant?: { name?: string; ispb?: string };
  claimantAccount?: PixAccount;
}

export interface CancelClaimInput {
  participationFlowType: ParticipationFlowType;
  reason: ClaimCancelReason;
}

export interface ClaimCancelResult {
  id: string;
  status: string;
  updatedAt?: string;
  resolutionDeadline?: string;
  cancellation?: { reason?: string; source?: string };
}

// ---------------------------------------------------------------------------------------------------------------
// Webhooks (spec 2.12, 4.6, 6)

export type WebhookAuthorizationScheme = 'BASIC' | 'BEARER' | 'HEADER';

export interface WebhookInput {
  eventType: WebhookEventType;
  /** http:// or https:// with a valid domain (spec section 8). */
  url: string;
  authorizationScheme?: WebhookAuthorizationScheme;
  /** Secret sent to the receiver; registered as a log secret and never returned by the client. */
  authorization?: string;
}

/** A registered webhook (body not shown in the spec; see docs/service-gaps.md). The authorization value is dropped. */
export interface Webhook {
  id: string;
  eventType: string;
  url: string;
  authorizationScheme?: string;
  createdAt?: string;
  updatedAt?: string;
}
