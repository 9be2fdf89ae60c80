/**
 * Charges in the sandbox's SQLite: creation (bar code, digitable line, BR Code), lookup, paging, update, void,
 * staging pay and expire. The HTTP layer (routes/charges.ts) validates requests and calls these; other areas use the
 * small internal API at the bottom (find by bar code / txid, mark paid) so a bill payment of a sandbox slip or a Pix
 * payment of a sandbox QR code pays the charge.
 *
 * Charge states (status names are the sandbox's decision for every state but Pending and Created; see
 * docs/service-gaps.md "Charges"):
 *
 *   (none) --create BANKSLIP-------------------------------> Pending
 *   (none) --create BANKSLIP_PIX, PIX_STATIC, PIX_DYNAMIC---> Created
 *   Pending | Created --pay-----------------------------------> Paid     (CHARGE_PAID; Pix: also PIX_RECEIVED)
 *   Expired --pay (bank slips only: an overdue slip is payable)-> Paid
 *   Pending | Created --expire----------------------------------> Expired (due date moved to yesterday; CHARGE_EXPIRED)
 *   Pending | Created | Expired --void--------------------------> Voided
 *   Expired --PATCH with a due date today or later-------------> Pending (BANKSLIP) | Created (BANKSLIP_PIX)
 *   PIX_DYNAMIC Created, once createdAt + expiresIn has passed -> read as Expired (no event: nothing happened)
 *   Paid --void, expire, PATCH---------------------------------> refused, 409 (a void does not undo a payment)
 *   Voided --pay, expire, PATCH--------------------------------> refused, 409
 *   Paid --pay / Voided --void / Expired --expire--------------> 200, unchanged (repeating an order is harmless)
 *
 * What must hold: a charge is paid at most once (one `charge_paid` effect per correlation id), and every change of
 * state commits together with its event and ledger effect (one synchronous transaction).
 */
import { randomUUID } from 'node:crypto';
import {
  addDays,
  bankSlipBarCodeToLine,
  buildBankSlipBarCode,
  buildDynamicBrCode,
  buildStaticBrCode,
  type ChargeType,
  centsToWire,
  endToEndId,
  randomAlphanumeric,
  serviceFreeField,
} from '../formats/index.js';
import type { Clock } from './clock.js';
import type { SandboxDb } from './db.js';
import type { EventLog } from './events.js';
import type { Ledger } from './ledger.js';
import type { SandboxOptions } from './options.js';
import { httpErrors, problem, SandboxHttpError } from './problems.js';

export const CHARGE_STATUSES = ['Pending', 'Created', 'Paid', 'Expired', 'Voided'] as const;
export type ChargeStatus = (typeof CHARGE_STATUSES)[number];

/** Wallet of normal charges and BANKSLIP_PIX (our number assigned by the service). */
export const WALLET_NORMAL = '112';
/** Wallet of express charges (our number sent by the client). */
export const WALLET_EXPRESS = '121';
/** Default lifetime of a PIX_DYNAMIC charge when the request has no expiresIn (as for dynamic QR codes). */
export const DEFAULT_PIX_EXPIRES_IN_SECONDS = 86_400;

/** Event type recorded by the staging expire route (a sandbox type; not in spec section 6). */
export const CHARGE_EXPIRED_EVENT = 'CHARGE_EXPIRED';

/** The parts of a sandbox's context the charges need. */
export interface ChargeDeps {
  db: SandboxDb;
  clock: Clock;
  events: EventLog;
  ledger: Ledger;
  options: SandboxOptions;
}

/** Fields echoed back as sent (already validated by the route). */
export interface ChargeExtras {
  payer?: Record<string, unknown>;
  finalBeneficiary?: Record<string, unknown>;
  discount?: Record<string, unknown>;
  lateFine?: Record<string, unknown>;
  latePayment?: Record<string, unknown>;
  allowPartialPayment?: boolean;
  description?: string;
  additionalInfo?: Array<{ key: string; value: string }>;
}

export interface ChargePayment {
  id: string;
  amountCents: number;
  /** How it was paid: BANKSLIP (bar code / line) or PIX (QR code). */
  method: 'BANKSLIP' | 'PIX';
  /** Pix end-to-end id, for Pix payments. */
  endToEndId: string | null;
  /** What caused it: `staging` (POST .../pay), `bill-payment`, `pix-payment`. */
  source: string;
  paidAt: string;
  /** How a slip's payment breaks down (its calculation on the day it was paid); absent for Pix charges. */
  breakdown?: PaymentBreakdown | undefined;
}

/** Discount, interest and fine of a slip payment, in cents (src/sandbox/bills.ts `calculate`). */
export interface PaymentBreakdown {
  discountCents: number;
  interestCents: number;
  fineCents: number;
}

export interface StoredCharge {
  seq: number;
  correlationId: string;
  type: ChargeType;
  /** Effective status (a PIX_DYNAMIC charge past its expiry reads Expired). */
  status: ChargeStatus;
  amountCents: number;
  /** yyyy-mm-dd; bank slips only. */
  dueDate: string | null;
  /** The due date before the first staging expire moved it; null until then. */
  originalDueDate: string | null;
  wallet: string | null;
  ourNumber: string | null;
  yourNumber: string | null;
  barCode: string | null;
  digitableLine: string | null;
  /** txid of the BR Code (field 62-05): 25 characters for static, 32 for dynamic codes. */
  txid: string | null;
  qrCode: string | null;
  /** Seconds; PIX_DYNAMIC only. */
  expiresIn: number | null;
  /** createdAt + expiresIn; PIX_DYNAMIC only. */
  expiresAt: string | null;
  extras: ChargeExtras;
  /** Non-secret id of the API key that created it. */
  apiKeyId: string;
  createdAt: string;
  updatedAt: string;
  paidAt: string | null;
  voidedAt: string | null;
  expiredAt: string | null;
  payments: ChargePayment[];
}

/** A charge the route validated, ready to store. */
export interface NewCharge {
  type: ChargeType;
  correlationId: string;
  amountCents: number;
  dueDate?: string;
  /** Client's our number (express charge): digits, at most 11. */
  ourNumber?: string;
  yourNumber?: string;
  expiresIn?: number;
  extras: ChargeExtras;
  apiKeyId: string;
}

/** Fields a PATCH may change (validated by the route). */
export interface ChargeUpdate {
  yourNumber?: string;
  amountCents?: number;
  dueDate?: string;
  payer?: Record<string, unknown>;
  discount?: Record<string, unknown>;
  lateFine?: Record<string, unknown>;
  latePayment?: Record<string, unknown>;
  allowPartialPayment?: boolean;
}

/** Refusal because of the charge's state (409). `reason` is stable: match on it. */
export class ChargeStateError extends SandboxHttpError {
  readonly reason: 'ALREADY_PAID' | 'VOIDED' | 'NOT_PAYABLE';

  constructor(reason: ChargeStateError['reason'], detail: string) {
    super(409, problem(409, 'Conflict', detail));
    this.reason = reason;
  }
}

interface ChargeRow {
  seq: number;
  correlation_id: string;
  type: ChargeType;
  status: ChargeStatus;
  amount_cents: number;
  due_date: string | null;
  original_due_date: string | null;
  wallet: string | null;
  our_number: string | null;
  your_number: string | null;
  bar_code: string | null;
  digitable_line: string | null;
  txid: string | null;
  qr_code: string | null;
  expires_in: number | null;
  record: string;
  api_key_id: string;
  created_at: string;
  created_date: string;
  updated_at: string;
  paid_at: string | null;
  voided_at: string | null;
  expired_at: string | null;
}

interface PaymentRow {
  id: string;
  charge_seq: number;
  amount_cents: number;
  method: 'BANKSLIP' | 'PIX';
  end_to_end_id: string | null;
  source: string;
  paid_at: string;
  discount_cents: number | null;
  interest_cents: number | null;
  fine_cents: number | null;
}

export function isBankSlip(type: ChargeType): boolean {
  return type === 'BANKSLIP' || type === 'BANKSLIP_PIX';
}

function fromRow(deps: ChargeDeps, row: ChargeRow): StoredCharge {
  const payments = (
    deps.db
      .prepare('SELECT * FROM charge_payments WHERE charge_seq = ? ORDER BY paid_at, id')
      .all(row.seq) as PaymentRow[]
  ).map(
    (p): ChargePayment => ({
      id: p.id,
      amountCents: p.amount_cents,
      method: p.method,
      endToEndId: p.end_to_end_id,
      source: p.source,
      paidAt: p.paid_at,
      ...(p.discount_cents !== null || p.interest_cents !== null || p.fine_cents !== null
        ? {
            breakdown: {
              discountCents: p.discount_cents ?? 0,
              interestCents: p.interest_cents ?? 0,
              fineCents: p.fine_cents ?? 0,
            },
          }
        : {}),
    }),
  );
  const expiresAt =
    row.type === 'PIX_DYNAMIC' && row.expires_in !== null
      ? new Date(Date.parse(row.created_at) + row.expires_in * 1000).toISOString()
      : null;
  let status = row.status;
  if (status === 'Created' && expiresAt !== null && deps.clock.now().getTime() >= Date.parse(expiresAt)) {
    status = 'Expired';
  }
  return {
    seq: row.seq,
    correlationId: row.correlation_id,
    type: row.type,
    status,
    amountCents: row.amount_cents,
    dueDate: row.due_date,
    originalDueDate: row.original_due_date,
    wallet: row.wallet,
    ourNumber: row.our_number,
    yourNumber: row.your_number,
    barCode: row.bar_code,
    digitableLine: row.digitable_line,
    txid: row.txid,
    qrCode: row.qr_code,
    expiresIn: row.expires_in,
    expiresAt,
    extras: JSON.parse(row.record) as ChargeExtras,
    apiKeyId: row.api_key_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    paidAt: row.paid_at,
    voidedAt: row.voided_at,
    expiredAt: row.expired_at,
    payments,
  };
}

function slipCodes(
  deps: ChargeDeps,
  wallet: string,
  ourNumber: string,
  dueDate: string,
  amountCents: number,
): { barCode: string; digitableLine: string } {
  const b = deps.options.beneficiary;
  const freeField = serviceFreeField({
    wallet: wallet as '112' | '121',
    ourNumber,
    agency: b.branch.replace(/\D/g, '').padStart(4, '0').slice(-4),
    middle: b.accountNumber.replace(/\D/g, '').padStart(7, '0').slice(-7),
  });
  const barCode = buildBankSlipBarCode({ bankCode: deps.options.bankCode, dueDate, amountCents, freeField });
  return { barCode, digitableLine: bankSlipBarCodeToLine(barCode) };
}

function locationUrl(deps: ChargeDeps, txid: string): string {
  return `${deps.options.pixLocationBase}${txid}`;
}

function dynamicQr(deps: ChargeDeps, txid: string, amountCents: number): string {
  const b = deps.options.beneficiary;
  return buildDynamicBrCode({
    locationUrl: locationUrl(deps, txid),
    merchantName: b.name,
    merchantCity: b.city,
    amountCents,
    txid,
  });
}

function staticQr(deps: ChargeDeps, txid: string, amountCents: number, description?: string): string {
  const b = deps.options.beneficiary;
  return buildStaticBrCode({
    key: b.pixKey,
    amountCents,
    merchantName: b.name,
    merchantCity: b.city,
    txid,
    description,
  });
}

function nextOurNumber(deps: ChargeDeps): string {
  deps.db
    .prepare(
      "INSERT INTO counters (name, value) VALUES ('our_number_112', 1) ON CONFLICT (name) DO UPDATE SET value = value + 1",
    )
    .run();
  const { value } = deps.db.prepare("SELECT value FROM counters WHERE name = 'our_number_112'").get() as {
    value: number;
  };
  return String(value).padStart(11, '0');
}

function rowBySeq(deps: ChargeDeps, seq: number): StoredCharge {
  return fromRow(deps, deps.db.prepare('SELECT * FROM charges WHERE seq = ?').get(seq) as ChargeRow);
}

function rememberBarCode(deps: ChargeDeps, seq: number, barCode: string, at: string): void {
  deps.db
    .prepare('INSERT OR IGNORE INTO charge_bar_codes (bar_code, charge_seq, issued_at) VALUES (?, ?, ?)')
    .run(barCode, seq, at);
}

/**
 * Stores a new charge. Refuses an existing correlationId (409) and an express our number already used (400,
 * `$.ourNumber`). Records the `charge_created` effect keyed by correlationId.
 */
export function createCharge(deps: ChargeDeps, input: NewCharge): StoredCharge {
  return deps.db.transaction((): StoredCharge => {
    if (deps.db.prepare('SELECT 1 FROM charges WHERE correlation_id = ?').get(input.correlationId)) {
      throw httpErrors.problem(
        409,
        'Conflict',
        `A charge with correlationId "${input.correlationId}" already exists; GET /v1/charges/{correlation_id} returns it.`,
      );
    }
    const now = deps.clock.nowIso();
    let wallet: string | null = null;
    let ourNumber: string | null = null;
    let codes: { barCode: string; digitableLine: string } | null = null;
    let txid: string | null = null;
    let qrCode: string | null = null;
    let status: ChargeStatus = 'Created';

    if (isBankSlip(input.type)) {
      if (input.ourNumber !== undefined) {
        wallet = WALLET_EXPRESS;
        ourNumber = input.ourNumber.padStart(11, '0');
        if (deps.db.prepare('SELECT 1 FROM charges WHERE wallet = ? AND our_number = ?').get(wallet, ourNumber)) {
          throw httpErrors.validation({
            '$.ourNumber': [`The ourNumber ${ourNumber} is already used by another express charge.`],
          });
        }
      } else {
        wallet = WALLET_NORMAL;
        ourNumber = nextOurNumber(deps);
      }
      codes = slipCodes(deps, wallet, ourNumber, input.dueDate!, input.amountCents);
      status = input.type === 'BANKSLIP' ? 'Pending' : 'Created';
    }
    if (input.type === 'BANKSLIP_PIX' || input.type === 'PIX_DYNAMIC') {
      txid = randomUUID().replace(/-/g, '');
      qrCode = dynamicQr(deps, txid, input.amountCents);
    } else if (input.type === 'PIX_STATIC') {
      txid = randomAlphanumeric(25);
      qrCode = staticQr(deps, txid, input.amountCents, input.extras.description);
    }
    const expiresIn =
      input.type === 'PIX_DYNAMIC' ? (input.expiresIn ?? DEFAULT_PIX_EXPIRES_IN_SECONDS) : (input.expiresIn ?? null);

    const info = deps.db
      .prepare(
        `INSERT INTO charges (correlation_id, type, status, amount_cents, due_date, wallet, our_number, your_number,
           bar_code, digitable_line, txid, qr_code, expires_in, record, api_key_id, created_at, created_date, updated_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        input.correlationId,
        input.type,
        status,
        input.amountCents,
        isBankSlip(input.type) ? input.dueDate! : null,
        wallet,
        ourNumber,
        input.yourNumber ?? null,
        codes?.barCode ?? null,
        codes?.digitableLine ?? null,
        txid,
        qrCode,
        expiresIn,
        JSON.stringify(input.extras),
        input.apiKeyId,
        now,
        deps.clock.today(),
        now,
      );
    const seq = Number(info.lastInsertRowid);
    if (codes) rememberBarCode(deps, seq, codes.barCode, now);
    deps.ledger.record('charge_created', input.correlationId, input.correlationId);
    return rowBySeq(deps, seq);
  })();
}

/** The charge with this correlation id, or undefined. */
export function getCharge(deps: ChargeDeps, correlationId: string): StoredCharge | undefined {
  const row = deps.db.prepare('SELECT * FROM charges WHERE correlation_id = ?').get(correlationId) as
    | ChargeRow
    | undefined;
  return row ? fromRow(deps, row) : undefined;
}

/** The charge, or the 404 problem. */
export function requireCharge(deps: ChargeDeps, correlationId: string): StoredCharge {
  const charge = getCharge(deps, correlationId);
  if (!charge) throw httpErrors.notFound();
  return charge;
}

/**
 * Charges created from `startDate` to `endDate` inclusive (the day in Brasília they were created: `created_date`, the
 * clock's `today()`), oldest first; page is 1-based.
 */
export function listCharges(
  deps: ChargeDeps,
  query: { startDate: string; endDate: string; page: number; limit: number },
): StoredCharge[] {
  const rows = deps.db
    .prepare('SELECT * FROM charges WHERE created_date BETWEEN ? AND ? ORDER BY created_at, seq LIMIT ? OFFSET ?')
    .all(query.startDate, query.endDate, query.limit, (query.page - 1) * query.limit) as ChargeRow[];
  return rows.map((r) => fromRow(deps, r));
}

/**
 * Applies a PATCH (bank slips only; the route checks the type). Recomputes bar code and line (and the BR Code of a
 * BANKSLIP_PIX) when the amount or due date changes; an Expired slip given a new due date becomes payable again.
 */
export function updateCharge(deps: ChargeDeps, correlationId: string, update: ChargeUpdate): StoredCharge {
  return deps.db.transaction((): StoredCharge => {
    const charge = requireCharge(deps, correlationId);
    if (charge.status === 'Paid') {
      throw new ChargeStateError('ALREADY_PAID', `The charge "${correlationId}" is paid and can no longer be changed.`);
    }
    if (charge.status === 'Voided') {
      throw new ChargeStateError('VOIDED', `The charge "${correlationId}" is voided and can no longer be changed.`);
    }
    const now = deps.clock.nowIso();
    const amountCents = update.amountCents ?? charge.amountCents;
    const dueDate = update.dueDate ?? charge.dueDate!;
    const extras: ChargeExtras = { ...charge.extras };
    if (update.payer) extras.payer = update.payer;
    if (update.discount) extras.discount = update.discount;
    if (update.lateFine) extras.lateFine = update.lateFine;
    if (update.latePayment) extras.latePayment = update.latePayment;
    if (update.allowPartialPayment !== undefined) extras.allowPartialPayment = update.allowPartialPayment;
    const codes = slipCodes(deps, charge.wallet!, charge.ourNumber!, dueDate, amountCents);
    const qrCode = charge.type === 'BANKSLIP_PIX' ? dynamicQr(deps, charge.txid!, amountCents) : charge.qrCode;
    let status = charge.status;
    if (status === 'Expired' && update.dueDate !== undefined && dueDate >= deps.clock.today()) {
      status = charge.type === 'BANKSLIP' ? 'Pending' : 'Created';
    }
    deps.db
      .prepare(
        `UPDATE charges SET status = ?, amount_cents = ?, due_date = ?, your_number = ?, bar_code = ?,
           digitable_line = ?, qr_code = ?, record = ?, updated_at = ? WHERE seq = ?`,
      )
      .run(
        status,
        amountCents,
        dueDate,
        update.yourNumber ?? charge.yourNumber,
        codes.barCode,
        codes.digitableLine,
        qrCode,
        JSON.stringify(extras),
        now,
        charge.seq,
      );
    rememberBarCode(deps, charge.seq, codes.barCode, now);
    deps.ledger.record('charge_updated', correlationId, correlationId);
    return rowBySeq(deps, charge.seq);
  })();
}

/** Voids (writes off) a charge. Refused (409) once paid: a void does not undo a payment. Repeating is harmless. */
export function voidCharge(deps: ChargeDeps, correlationId: string): StoredCharge {
  return deps.db.transaction((): StoredCharge => {
    const charge = requireCharge(deps, correlationId);
    if (charge.status === 'Voided') return charge;
    if (charge.status === 'Paid') {
      throw new ChargeStateError(
        'ALREADY_PAID',
        `The charge "${correlationId}" is already paid; a void does not undo payments already made.`,
      );
    }
    const now = deps.clock.nowIso();
    deps.db
      .prepare("UPDATE charges SET status = 'Voided', voided_at = ?, updated_at = ? WHERE seq = ?")
      .run(now, now, charge.seq);
    deps.ledger.record('charge_voided', correlationId, correlationId);
    return rowBySeq(deps, charge.seq);
  })();
}

/**
 * Staging expire: the charge becomes Expired and, for a bank slip, its due date moves to yesterday (the spec: the
 * route "changes the original due date"); the earlier due date is kept as originalDueDate and the bar code is
 * recomputed. Records CHARGE_EXPIRED. Refused (409) for Paid and Voided charges; repeating is harmless.
 */
export function expireCharge(deps: ChargeDeps, correlationId: string): StoredCharge {
  return deps.db.transaction((): StoredCharge => {
    const charge = requireCharge(deps, correlationId);
    if (charge.status === 'Expired' && charge.expiredAt !== null) return charge;
    if (charge.status === 'Paid') {
      throw new ChargeStateError('ALREADY_PAID', `The charge "${correlationId}" is paid and cannot expire.`);
    }
    if (charge.status === 'Voided') {
      throw new ChargeStateError('VOIDED', `The charge "${correlationId}" is voided and cannot expire.`);
    }
    const now = deps.clock.nowIso();
    let dueDate = charge.dueDate;
    let codes: { barCode: string | null; digitableLine: string | null } = {
      barCode: charge.barCode,
      digitableLine: charge.digitableLine,
    };
    if (isBankSlip(charge.type)) {
      dueDate = addDays(deps.clock.today(), -1);
      codes = slipCodes(deps, charge.wallet!, charge.ourNumber!, dueDate, charge.amountCents);
      rememberBarCode(deps, charge.seq, codes.barCode!, now);
    }
    deps.db
      .prepare(
        `UPDATE charges SET status = 'Expired', original_due_date = COALESCE(original_due_date, due_date), due_date = ?,
           bar_code = ?, digitable_line = ?, expired_at = ?, updated_at = ? WHERE seq = ?`,
      )
      .run(dueDate, codes.barCode, codes.digitableLine, now, now, charge.seq);
    const expired = rowBySeq(deps, charge.seq);
    deps.events.record(CHARGE_EXPIRED_EVENT, chargeEventPayload(expired), deps.clock.now());
    deps.ledger.record('charge_expired', correlationId, correlationId);
    return expired;
  })();
}

/** How a charge gets paid (see {@link markChargePaid}). */
export interface ChargePaymentInput {
  /** Paid amount in cents; the charge's amount when absent. */
  amountCents?: number;
  /** BANKSLIP (bar code / digitable line) or PIX (QR code). */
  method: 'BANKSLIP' | 'PIX';
  /** `staging`, `bill-payment` or `pix-payment`. */
  source: string;
  /** Pix end-to-end id of the payment (PIX only; one is made up when absent). */
  endToEndId?: string;
  /** When it was paid; the clock's now when absent. */
  at?: Date;
  /** The slip's discount, interest and fine that day (the caller's calculation); absent: none reported. */
  breakdown?: PaymentBreakdown | undefined;
}

/**
 * Marks a charge paid and records CHARGE_PAID (and PIX_RECEIVED for a Pix payment), with a `charge_paid` effect keyed
 * by correlationId. Usable inside the caller's transaction (it nests as a savepoint).
 *
 * Refused with ChargeStateError: reason ALREADY_PAID (paid before: a charge is paid once), VOIDED, NOT_PAYABLE
 * (a Pix charge past its expiry).
 */
export function markChargePaid(
  deps: ChargeDeps,
  correlationId: string,
  input: ChargePaymentInput,
): { charge: StoredCharge; payment: ChargePayment } {
  return deps.db.transaction(() => {
    const charge = requireCharge(deps, correlationId);
    if (charge.status === 'Paid') {
      throw new ChargeStateError('ALREADY_PAID', `The charge "${correlationId}" is already paid.`);
    }
    if (charge.status === 'Voided') {
      throw new ChargeStateError('VOIDED', `The charge "${correlationId}" is voided and cannot be paid.`);
    }
    if (charge.status === 'Expired' && !isBankSlip(charge.type)) {
      throw new ChargeStateError('NOT_PAYABLE', `The Pix charge "${correlationId}" has expired and cannot be paid.`);
    }
    const at = input.at ?? deps.clock.now();
    const paidAt = at.toISOString();
    const payment: ChargePayment = {
      id: randomUUID(),
      amountCents: input.amountCents ?? charge.amountCents,
      method: input.method,
      endToEndId: input.method === 'PIX' ? (input.endToEndId ?? endToEndId({ ispb: deps.options.ispb, at })) : null,
      source: input.source,
      paidAt,
      ...(input.breakdown ? { breakdown: input.breakdown } : {}),
    };
    deps.db
      .prepare(
        `INSERT INTO charge_payments (id, charge_seq, amount_cents, method, end_to_end_id, source, paid_at,
           discount_cents, interest_cents, fine_cents)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        payment.id,
        charge.seq,
        payment.amountCents,
        payment.method,
        payment.endToEndId,
        payment.source,
        paidAt,
        input.breakdown?.discountCents ?? null,
        input.breakdown?.interestCents ?? null,
        input.breakdown?.fineCents ?? null,
      );
    deps.db
      .prepare("UPDATE charges SET status = 'Paid', paid_at = ?, updated_at = ? WHERE seq = ?")
      .run(paidAt, deps.clock.nowIso(), charge.seq);
    const paid = rowBySeq(deps, charge.seq);
    deps.events.record('CHARGE_PAID', { ...chargeEventPayload(paid), payment: paymentToWire(payment) }, at);
    if (payment.method === 'PIX') {
      deps.events.record(
        'PIX_RECEIVED',
        {
          correlationId: paid.correlationId,
          chargeType: paid.type,
          txid: paid.txid,
          endToEndId: payment.endToEndId,
          amount: centsToWire(payment.amountCents),
          receivedAt: paidAt,
          key: deps.options.beneficiary.pixKey,
        },
        at,
      );
    }
    deps.ledger.record('charge_paid', correlationId, payment.id);
    return { charge: paid, payment };
  })();
}

/** The charge whose slip carries (or carried, before a PATCH or expire) this 44-digit bar code. */
export function findChargeByBarCode(deps: ChargeDeps, barCode: string): StoredCharge | undefined {
  const hit = deps.db.prepare('SELECT charge_seq FROM charge_bar_codes WHERE bar_code = ?').get(barCode) as
    | { charge_seq: number }
    | undefined;
  return hit ? rowBySeq(deps, hit.charge_seq) : undefined;
}

/** The charge whose BR Code carries this txid (field 62-05; for dynamic codes also the end of the location URL). */
export function findChargeByTxid(deps: ChargeDeps, txid: string): StoredCharge | undefined {
  const row = deps.db.prepare('SELECT * FROM charges WHERE txid = ?').get(txid) as ChargeRow | undefined;
  return row ? fromRow(deps, row) : undefined;
}

function paymentToWire(p: ChargePayment): Record<string, unknown> {
  return {
    id: p.id,
    amount: centsToWire(p.amountCents),
    method: p.method,
    ...(p.endToEndId ? { endToEndId: p.endToEndId } : {}),
    source: p.source,
    paidAt: p.paidAt,
    // Sandbox additions (docs/service-gaps.md): the bill lookup's names for how the amount breaks down.
    ...(p.breakdown
      ? {
          discountAmount: centsToWire(p.breakdown.discountCents),
          interestAmount: centsToWire(p.breakdown.interestCents),
          fineAmount: centsToWire(p.breakdown.fineCents),
        }
      : {}),
  };
}

/** Data of CHARGE_PAID and CHARGE_EXPIRED events (documented in docs/service-gaps.md). */
export function chargeEventPayload(c: StoredCharge): Record<string, unknown> {
  return {
    correlationId: c.correlationId,
    type: c.type,
    status: c.status,
    amount: centsToWire(c.amountCents),
    ...(c.dueDate ? { dueDate: c.dueDate } : {}),
    ...(c.originalDueDate ? { originalDueDate: c.originalDueDate } : {}),
    ...(c.ourNumber ? { ourNumber: c.ourNumber } : {}),
    ...(c.yourNumber ? { yourNumber: c.yourNumber } : {}),
    ...(c.barCode ? { barCode: c.barCode, digitableLine: c.digitableLine } : {}),
    ...(c.txid ? { txid: c.txid } : {}),
    ...(c.paidAt ? { paidAt: c.paidAt } : {}),
    ...(c.expiredAt ? { expiredAt: c.expiredAt } : {}),
  };
}

/**
 * The charge as the service returns it: 2.2 for bank slips, 2.3 for Pix charges, both for BANKSLIP_PIX. Fields the
 * spec does not name (payments for slips, walletNumber, paidAt, voidedAt, expiredAt, originalDueDate) are additions
 * of the sandbox, listed in docs/service-gaps.md.
 */
export function chargeToWire(c: StoredCharge): Record<string, unknown> {
  const out: Record<string, unknown> = { type: c.type, amount: centsToWire(c.amountCents) };
  if (isBankSlip(c.type)) {
    out.yourNumber = c.yourNumber ?? '';
    out.ourNumber = c.ourNumber;
    out.walletNumber = c.wallet;
  }
  out.correlationId = c.correlationId;
  if (isBankSlip(c.type)) {
    out.dueDate = c.dueDate;
    if (c.originalDueDate) out.originalDueDate = c.originalDueDate;
    out.barCode = c.barCode;
    out.digitableLine = c.digitableLine;
  }
  if (c.qrCode) out.qrCode = c.qrCode;
  if (c.extras.description !== undefined) out.description = c.extras.description;
  if (c.extras.additionalInfo !== undefined) out.additionalInfo = c.extras.additionalInfo;
  if (c.expiresIn !== null) out.expiresIn = c.expiresIn;
  if (c.expiresAt !== null) out.expiresAt = c.expiresAt;
  if (c.extras.payer !== undefined) out.payer = c.extras.payer;
  for (const k of ['finalBeneficiary', 'discount', 'lateFine', 'latePayment', 'allowPartialPayment'] as const) {
    if (c.extras[k] !== undefined) out[k] = c.extras[k];
  }
  out.status = c.status;
  out.payments = c.payments.map(paymentToWire);
  out.createdAt = c.createdAt;
  out.updatedAt = c.updatedAt;
  if (c.paidAt) out.paidAt = c.paidAt;
  if (c.voidedAt) out.voidedAt = c.voidedAt;
  if (c.expiredAt) out.expiredAt = c.expiredAt;
  return out;
}
