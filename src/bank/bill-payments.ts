/**
 * Bill payments (spec 4.2): look the bill up, then pay it.
 *
 * The spec's rule "the client must look the bill up first" is made hard to break by the types: `pay` accepts only a
 * `LookedUpBill`, which only `lookup` can make (its constructor needs a module-private token and `pay` checks the
 * private brand at run time, so a plain object shaped like one is refused too).
 *
 * Before sending, `pay` also refuses (RequestValidationError, nothing sent) what the spec says never to pay:
 * - a bill whose status is not PENDING_PAYMENT                                  BANK_BILL_NOT_PAYABLE
 * - with isAllowPartialPayment: an amount outside minimum..maximumPaymentAmount  BANK_AMOUNT_OUT_OF_RANGE
 * - without it: an amount other than the charged amount                          BANK_AMOUNT_OUT_OF_RANGE
 * A resend of a payment whose outcome is unknown (`resendOfUnknownOutcome`, same IdempotencyKey) skips the status
 * and range checks: the first attempt may be what paid the bill, and the bank answers the key with that first outcome.
 */

import { money, msg } from '../i18n/index.js';
import { billAnswer, billPaymentAnswer } from './answer-readers.js';
import { RequestValidationError } from './errors.js';
import type { HttpTransport } from './http.js';
import type {
  Bill,
  BillPayment,
  BillStatus,
  Cents,
  PayBillInput,
  PaymentCalculation,
  RequestOptions,
} from './types.js';
import { billPaymentBody } from './wire.js';

const TOKEN = Symbol('LookedUpBill');

/** A bill as returned by `billPayments.lookup`: the only thing `billPayments.pay` accepts. */
export class LookedUpBill {
  readonly #brand = true;
  /** The bar code or digitable line the caller looked up. */
  readonly identifier: string;
  /** The record the service returned (spec 2.5), amounts in cents. */
  readonly record: Readonly<Bill>;
  /** When the lookup answered. */
  readonly lookedUpAt: Date;

  /** @internal Only `BillPaymentsResource.lookup` makes these. */
  constructor(token: symbol, identifier: string, record: Bill, lookedUpAt: Date) {
    if (token !== TOKEN) throw new TypeError('LookedUpBill: only billPayments.lookup() makes these');
    this.identifier = identifier;
    this.record = Object.freeze({ ...record });
    this.lookedUpAt = lookedUpAt;
  }

  static isLookedUpBill(value: unknown): value is LookedUpBill {
    return typeof value === 'object' && value !== null && #brand in value;
  }

  get status(): BillStatus {
    return this.record.status;
  }
  get amountCents(): Cents {
    return this.record.amountCents;
  }
  /** What must be paid in full: paymentCalculation.chargedAmount, else the amount. */
  get chargedAmountCents(): Cents {
    return this.record.paymentCalculation?.chargedAmountCents ?? this.record.amountCents;
  }
  get isAllowPartialPayment(): boolean {
    return this.record.isAllowPartialPayment;
  }
  get paymentCalculation(): PaymentCalculation | undefined {
    return this.record.paymentCalculation;
  }
  get barCode(): string | undefined {
    return this.record.barCode;
  }
  get digitableLine(): string | undefined {
    return this.record.digitableLine;
  }
}

/** The rules of spec 4.2 on a looked-up bill and an amount; throws RequestValidationError. */
export function checkBillPayment(bill: LookedUpBill, amountCents: Cents): void {
  if (bill.status !== 'PENDING_PAYMENT') {
    throw new RequestValidationError(
      'BANK_BILL_NOT_PAYABLE',
      msg('BANK_BILL_NOT_PAYABLE', { status: bill.status }),
      'status',
    );
  }
  checkAmount(amountCents);
  if (bill.isAllowPartialPayment) {
    const calc = bill.paymentCalculation;
    const min = calc?.minimumPaymentAmountCents ?? 1;
    const max = calc?.maximumPaymentAmountCents ?? bill.chargedAmountCents;
    if (amountCents < min || amountCents > max) {
      throw new RequestValidationError(
        'BANK_AMOUNT_OUT_OF_RANGE',
        msg('BANK_AMOUNT_OUT_OF_RANGE.range', { min: money(min), max: money(max), got: money(amountCents) }),
        'amountCents',
      );
    }
  } else if (amountCents !== bill.chargedAmountCents) {
    throw new RequestValidationError(
      'BANK_AMOUNT_OUT_OF_RANGE',
      msg('BANK_AMOUNT_OUT_OF_RANGE.charged', { charged: money(bill.chargedAmountCents), got: money(amountCents) }),
      'amountCents',
    );
  }
}

function checkAmount(amountCents: Cents): void {
  if (!Number.isSafeInteger(amountCents) || amountCents <= 0) {
    throw new RequestValidationError(
      'BANK_AMOUNT_OUT_OF_RANGE',
      msg('BANK_AMOUNT_NOT_WHOLE_CENTS', { got: amountCents }),
      'amountCents',
    );
  }
}

export class BillPaymentsResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** GET /baas/api/v1/bill-payments/{identifier}: bar code (44/48 digits) or digitable line (47/48 digits). */
  async lookup(identifier: string, options: RequestOptions = {}): Promise<LookedUpBill> {
    const record = await this.#http.json(
      { method: 'GET', path: this.#http.path('billLookup', identifier), signal: options.signal, task: options.task },
      billAnswer,
    );
    return new LookedUpBill(TOKEN, identifier, record, new Date());
  }

  /**
   * GET {billPaymentGet}/{id}: a payment and its current status (a SCHEDULED one becomes PAID or FAILED on its date).
   * Not in the spec: the sandbox serves it (docs/service-gaps.md "The retorno"); a bank without it answers 404.
   */
  get(id: string, options: RequestOptions = {}): Promise<BillPayment> {
    return this.#http.json(
      { method: 'GET', path: this.#http.path('billPaymentGet', id), signal: options.signal, task: options.task },
      billPaymentAnswer,
    );
  }

  /**
   * POST /baas/api/v1/bill-payments with the caller's IdempotencyKey (the same key on every attempt). Sends the
   * looked-up bill's barCode (or its digitableLine when it has no bar code). Refuses before sending what spec 4.2
   * forbids (see the top of this file).
   */
  async pay(bill: LookedUpBill, input: PayBillInput, options: RequestOptions = {}): Promise<BillPayment> {
    if (!LookedUpBill.isLookedUpBill(bill)) {
      throw new RequestValidationError(
        'BANK_NOT_LOOKED_UP',
        'bill: expected the result of billPayments.lookup(), got another value',
        'bill',
      );
    }
    if (typeof input.idempotencyKey !== 'string' || input.idempotencyKey === '') {
      throw new RequestValidationError(
        'BANK_IDEMPOTENCY_KEY_MISSING',
        'idempotencyKey: expected a GUID, got nothing',
        'idempotencyKey',
      );
    }
    if (input.resendOfUnknownOutcome) checkAmount(input.amountCents);
    else checkBillPayment(bill, input.amountCents);
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('billPayment'),
        idempotencyKey: this.#http.idempotencyKeyFor('billPayment', input.idempotencyKey),
        body: billPaymentBody({
          amountCents: input.amountCents,
          barCode: bill.barCode,
          digitableLine: bill.digitableLine,
          payAt: input.payAt,
        }),
        signal: options.signal,
        task: options.task,
      },
      billPaymentAnswer,
    );
  }
}
