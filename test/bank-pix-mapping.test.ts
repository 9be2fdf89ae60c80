/** The ONE mapping from a Pix QR payment initialization to the payment body (spec 4.3), and the wire bodies. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RequestValidationError } from '../src/bank/errors.js';
import { toPixPaymentRequest } from '../src/bank/pix-payments.js';
import type { PixInitialization, PixQrType } from '../src/bank/types.js';
import { bankSlipChargeBody, chargePatchBody, pixChargeBody, pixPaymentBody, staticQrBody } from '../src/bank/wire.js';
import { initiationTypeFor } from '../src/formats/pix.js';

function init(partial: Partial<PixInitialization> = {}): PixInitialization {
  return {
    key: 'pix@example.com',
    endToEndId: 'E38224857202611221200abcdefghijk',
    transactionId: 'TX123',
    allowChangeAmount: false,
    type: 'QR_CODE_STATIC',
    status: 'ACTIVE',
    amountCents: 1050,
    ...partial,
  };
}

describe('initiationTypeFor (spec 4.3 mapping rule)', () => {
  it('static stays static; both dynamic types become QR_CODE_DYNAMIC', () => {
    expect(initiationTypeFor('QR_CODE_STATIC')).toBe('QR_CODE_STATIC');
    expect(initiationTypeFor('DYNAMIC_IMMEDIATE_PAYMENT')).toBe('QR_CODE_DYNAMIC');
    expect(initiationTypeFor('DYNAMIC_PAYMENT_WITH_EXPIRATION')).toBe('QR_CODE_DYNAMIC');
  });
});

describe('toPixPaymentRequest', () => {
  it('copies endToEndId and transactionId, maps the type, keeps the amount', () => {
    expect(toPixPaymentRequest(init(), { description: 'aluguel' })).toEqual({
      amountCents: 1050,
      description: 'aluguel',
      endToEndId: 'E38224857202611221200abcdefghijk',
      transactionId: 'TX123',
      initiationType: 'QR_CODE_STATIC',
    });
    const dyn = toPixPaymentRequest(init({ type: 'DYNAMIC_PAYMENT_WITH_EXPIRATION', transactionId: 'abc' }));
    expect(dyn.initiationType).toBe('QR_CODE_DYNAMIC');
    expect(dyn.transactionId).toBe('abc');
    expect(dyn).not.toHaveProperty('description');
  });

  it('for every type and ids, the mapping rule holds', () => {
    const types: PixQrType[] = ['QR_CODE_STATIC', 'DYNAMIC_IMMEDIATE_PAYMENT', 'DYNAMIC_PAYMENT_WITH_EXPIRATION'];
    fc.assert(
      fc.property(
        fc.constantFrom(...types),
        fc.string({ minLength: 1 }),
        fc.string(),
        fc.integer({ min: 1, max: 1e9 }),
        (type, e2e, tx, cents) => {
          const r = toPixPaymentRequest(init({ type, endToEndId: e2e, transactionId: tx, amountCents: cents }));
          return (
            r.endToEndId === e2e &&
            r.transactionId === tx &&
            r.amountCents === cents &&
            r.initiationType === (type === 'QR_CODE_STATIC' ? 'QR_CODE_STATIC' : 'QR_CODE_DYNAMIC')
          );
        },
      ),
    );
  });

  it('an amount the QR code fixes cannot be changed', () => {
    expect(() => toPixPaymentRequest(init(), { amountCents: 999 })).toThrow(RequestValidationError);
    try {
      toPixPaymentRequest(init(), { amountCents: 999 });
    } catch (e) {
      expect((e as RequestValidationError).code).toBe('BANK_PIX_AMOUNT_FIXED');
      expect((e as RequestValidationError).message).toBe(
        "Expected the QR code's own amount, R$10.50 (it does not accept another), got R$9.99",
      );
      // What a person reads in a result file (src/runner/engine.ts): their language, money in reais.
      expect((e as RequestValidationError).describe('pt-BR')).toBe(
        'Esperava o valor do próprio QR code, R$ 10,50 (ele não aceita outro valor), veio R$ 9,99',
      );
    }
    // The same amount is fine.
    expect(toPixPaymentRequest(init(), { amountCents: 1050 }).amountCents).toBe(1050);
  });

  it('allowChangeAmount lets the caller choose; a QR code without amount needs one', () => {
    expect(toPixPaymentRequest(init({ allowChangeAmount: true }), { amountCents: 999 }).amountCents).toBe(999);
    const open = init({ allowChangeAmount: true, amountCents: 0 });
    expect(toPixPaymentRequest(open, { amountCents: 5 }).amountCents).toBe(5);
    expect(() => toPixPaymentRequest(open)).toThrow('Expected an amount in the row: the QR code carries none');
    const noAmount = init({ allowChangeAmount: true });
    delete noAmount.amountCents;
    expect(() => toPixPaymentRequest(noAmount)).toThrow(RequestValidationError);
  });

  it('refuses a non-positive or fractional amount', () => {
    const open = init({ allowChangeAmount: true });
    expect(() => toPixPaymentRequest(open, { amountCents: 0 })).toThrow(RequestValidationError);
    expect(() => toPixPaymentRequest(open, { amountCents: 1.5 })).toThrow(RequestValidationError);
  });
});

describe('wire bodies: cents become decimals in one place', () => {
  it('Pix payment body', () => {
    expect(pixPaymentBody(toPixPaymentRequest(init()))).toEqual({
      amount: 10.5,
      endToEndId: 'E38224857202611221200abcdefghijk',
      transactionId: 'TX123',
      initiationType: 'QR_CODE_STATIC',
    });
  });

  it('bank slip body: capital-A Amount, fixed money converted, percentages untouched, nothing undefined', () => {
    const body = bankSlipChargeBody({
      type: 'BANKSLIP_PIX',
      correlationId: 'c1',
      dueDate: '2026-12-01',
      amountCents: 123_456,
      payer: { name: 'A', document: '52998224725' },
      discount: { type: 'Fixed', items: [{ date: '2026-11-01', amountCents: 1_001 }] },
      lateFine: { type: 'Percentage', date: '2026-12-02', percent: 2.5 },
      latePayment: { type: 'Fixed', date: '2026-12-02', amountCents: 33 },
    });
    expect(body).toEqual({
      type: 'BANKSLIP_PIX',
      correlationId: 'c1',
      dueDate: '2026-12-01',
      Amount: 1234.56,
      payer: { name: 'A', document: '52998224725' },
      discount: { type: 'Fixed', items: [{ date: '2026-11-01', amount: 10.01 }] },
      lateFine: { type: 'Percentage', date: '2026-12-02', amount: 2.5 },
      latePayment: { type: 'Fixed', date: '2026-12-02', amount: 0.33 },
    });
    expect(JSON.stringify(body)).not.toContain('null');
  });

  it('Pix charge, patch and static QR bodies', () => {
    expect(pixChargeBody({ type: 'PIX_DYNAMIC', correlationId: 'p', amountCents: 1, expiresInSeconds: 60 })).toEqual({
      type: 'PIX_DYNAMIC',
      correlationId: 'p',
      amount: 0.01,
      expiresIn: 60,
    });
    expect(chargePatchBody({ dueDate: '2027-01-01', amountCents: 10_000 })).toEqual({
      dueDate: '2027-01-01',
      amount: 100,
    });
    expect(staticQrBody({ correlationId: 's' })).toEqual({ type: 'PIX_STATIC', correlationId: 's' });
  });

  it('cents round-trip exactly through the wire decimal for any amount', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 99_999_999_999 }), (cents) => {
        const body = pixPaymentBody({
          amountCents: cents,
          endToEndId: 'e',
          transactionId: 't',
          initiationType: 'QR_CODE_STATIC',
        });
        const amount = body.amount as number;
        return Math.round(amount * 100) === cents && JSON.parse(JSON.stringify(amount)) === amount;
      }),
    );
  });
});
