/**
 * Pix QR code payment (spec 4.3, records 2.7 and 2.8): initialize with the BR Code, then pay.
 *
 *   POST /baas/api/v2/pix/qrcode/payment-initialization   parse the code, hand out an endToEndId (IdempotencyKey
 *                                                          required; optional in the `delbank` profile)
 *   POST {pixPaymentPath}                                  pay (IdempotencyKey optional; honoured when sent)
 *   GET  {pixPaymentPath}/{endToEndId or id}               the payment (sandbox addition, for unknown outcomes)
 * In the `delbank` profile the payment is reached as POST /baas/api/v2/transfers (src/sandbox/profiles.ts).
 *
 * `pixPaymentPath` is a setting (default /baas/api/v2/pix/qrcode/payment, the client's default too): the spec does not
 * show the payment operation's path.
 *
 * endToEndId states (what must hold: one payment per endToEndId, checked and marked in one transaction):
 *
 *   (none) --initialization--> ACTIVE --payment (fields match, QR code still payable)--> USED
 *                                 |
 *                                 +--now >= createdAt + pixEndToEndIdTtlSeconds--> EXPIRED (payment: 409)
 *
 * The QR code's own status in the initialization record: ACTIVE (payable), CONCLUDED (a dynamic code or a charge
 * already paid), REMOVED_BY_THE_RECEIVER (charge voided), REMOVED_BY_PSP (dynamic code or Pix charge expired).
 *
 * Where a QR code comes from: a dynamic or static QR code made here (routes/qr-codes.ts), a charge made here (Pix
 * charge or BANKSLIP_PIX, src/sandbox/charges-store.ts), or, for a static code only, anywhere else (a "foreign" code:
 * paid, but nobody here is credited). A foreign dynamic code cannot be resolved (the sandbox cannot fetch its
 * location): 404 QR_CODE_NOT_FOUND. Paying a code made here credits it: PIX_RECEIVED for the receiver (and
 * CHARGE_PAID for a charge), PIX_PAYMENT_UPDATED for the payer.
 *
 * Types: a static code is QR_CODE_STATIC; a dynamic code is DYNAMIC_PAYMENT_WITH_EXPIRATION when it belongs to a
 * BANKSLIP_PIX charge (a charge with a due date), else DYNAMIC_IMMEDIATE_PAYMENT.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import {
  type BrCode,
  centsToWire,
  endToEndId,
  FormatError,
  formatAmount,
  initiationTypeFor,
  type PixQrType,
  parseBrCode,
} from '../../formats/index.js';
import { ChargeStateError, findChargeByTxid, getCharge, markChargePaid, type StoredCharge } from '../charges-store.js';
import { idempotencyFor } from '../idempotency.js';
import { problem, SandboxHttpError } from '../problems.js';
import { idempotencyKeyRequired } from '../profiles.js';
import type { SandboxContext } from '../server.js';
import {
  bodyObject,
  codedError,
  FieldErrors,
  findQrCodeByPayload,
  findQrCodeByTxid,
  markQrCodePaid,
  readAmount,
  readString,
  type StoredQrCode,
} from './qr-codes.js';

export const PIX_PAYMENT_INITIALIZATION_PATH = '/baas/api/v2/pix/qrcode/payment-initialization';

export type QrStatus = 'ACTIVE' | 'CONCLUDED' | 'REMOVED_BY_THE_RECEIVER' | 'REMOVED_BY_PSP';

/** Status of a payment in its answer (the spec's sample) and once settled (the sandbox's decision). */
export const PIX_PAYMENT_STATUS_ANSWERED = 'PIX_PROCESSING';
export const PIX_PAYMENT_STATUS_SETTLED = 'PIX_EXECUTED';

type Source = { kind: 'QR_CODE'; qr: StoredQrCode } | { kind: 'CHARGE'; charge: StoredCharge } | { kind: 'FOREIGN' };

function qrStatusOf(source: Source): QrStatus {
  if (source.kind === 'QR_CODE') {
    if (source.qr.status === 'CONCLUDED') return 'CONCLUDED';
    if (source.qr.status === 'EXPIRED') return 'REMOVED_BY_PSP';
    return 'ACTIVE';
  }
  if (source.kind === 'CHARGE') {
    const c = source.charge;
    if (c.status === 'Paid') return 'CONCLUDED';
    if (c.status === 'Voided') return 'REMOVED_BY_THE_RECEIVER';
    if (c.status === 'Expired' && c.type !== 'BANKSLIP_PIX') return 'REMOVED_BY_PSP';
    return 'ACTIVE';
  }
  return 'ACTIVE';
}

function txidOf(code: BrCode): string | null {
  if (code.txid) return code.txid;
  if (code.url) {
    const last = code.url.split('/').filter(Boolean).pop();
    if (last && /^[A-Za-z0-9]{26,35}$/.test(last)) return last;
  }
  return null;
}

function resolveSource(ctx: SandboxContext, payload: string, code: BrCode): Source {
  const byPayload = findQrCodeByPayload(ctx, payload);
  if (byPayload) return { kind: 'QR_CODE', qr: byPayload };
  const txid = txidOf(code);
  if (txid) {
    const qr = findQrCodeByTxid(ctx, txid);
    // A static code's txid is only 25 characters: also require the same key, so a foreign code cannot hit ours.
    if (qr && (qr.kind === 'DYNAMIC' || qr.pixKey === code.key)) return { kind: 'QR_CODE', qr };
    const charge = findChargeByTxid(ctx, txid);
    if (charge && (code.kind === 'DYNAMIC' || code.key === ctx.options.beneficiary.pixKey)) {
      return { kind: 'CHARGE', charge };
    }
  }
  if (code.kind === 'DYNAMIC') {
    throw new SandboxHttpError(404, {
      ...problem(
        404,
        'Not Found',
        'The sandbox can only resolve dynamic QR codes it created; this location is unknown.',
      ),
      code: 'QR_CODE_NOT_FOUND',
    });
  }
  return { kind: 'FOREIGN' };
}

function reloadSource(ctx: SandboxContext, kind: string | null, ref: string | null): Source {
  if (kind === 'QR_CODE' && ref) {
    const qr = findQrCodeByTxid(ctx, ref);
    if (qr) return { kind: 'QR_CODE', qr };
  }
  if (kind === 'CHARGE' && ref) {
    const charge = getCharge(ctx, ref);
    if (charge) return { kind: 'CHARGE', charge };
  }
  return { kind: 'FOREIGN' };
}

function ownAccount(ctx: SandboxContext): Record<string, unknown> {
  const b = ctx.options.beneficiary;
  return {
    number: b.accountNumber,
    branch: b.branch,
    type: 'CURRENT',
    participant: { name: ctx.options.participantName, ispb: ctx.options.ispb },
    holder: {
      name: b.name,
      document: b.document,
      type: b.document.replace(/\D/g, '').length === 11 ? 'NATURAL' : 'LEGAL',
    },
  };
}

function foreignAccount(code: BrCode): Record<string, unknown> {
  return {
    number: '',
    branch: '',
    type: 'CURRENT',
    participant: { name: 'PSP DO RECEBEDOR', ispb: '00000000' },
    holder: { name: code.merchantName, type: 'LEGAL' },
  };
}

interface InitRow {
  end_to_end_id: string;
  api_key_id: string;
  qr_type: PixQrType;
  transaction_id: string;
  amount_cents: number | null;
  allow_change_amount: number;
  source_kind: string | null;
  source_ref: string | null;
  record: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export function registerPixPaymentRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const paymentPath = ctx.options.pixPaymentPath;
  const idempotency = idempotencyFor(ctx);

  // The `delbank` dialect sends no key here (src/sandbox/profiles.ts): an initialization moves no money.
  const initializationKey = { required: idempotencyKeyRequired(ctx.options.profile, 'pixPaymentInitialization') };
  app.post(PIX_PAYMENT_INITIALIZATION_PATH, { ...idempotency.hooks(initializationKey) }, async (request) => {
    const body = bodyObject(request);
    const errors = new FieldErrors();
    const payload = readString(errors, '$.payload', body.payload);
    if (payload === undefined && errors.empty) errors.add('$.payload', 'The payload is required: expected a BR Code.');
    let code: BrCode | undefined;
    if (payload !== undefined) {
      try {
        code = parseBrCode(payload.trim());
      } catch (err) {
        if (!(err instanceof FormatError)) throw err;
        errors.add('$.payload', `Expected a valid Pix BR Code: ${err.message}.`);
      }
    }
    errors.throwIfAny();
    const text = payload!.trim();
    const source = resolveSource(ctx, text, code!);

    let type: PixQrType = 'QR_CODE_STATIC';
    if (code!.kind === 'DYNAMIC') {
      type =
        source.kind === 'CHARGE' && source.charge.type === 'BANKSLIP_PIX'
          ? 'DYNAMIC_PAYMENT_WITH_EXPIRATION'
          : 'DYNAMIC_IMMEDIATE_PAYMENT';
    }
    let amountCents: number | null = code!.amountCents ?? null;
    if (source.kind === 'QR_CODE' && source.qr.amountCents !== null) amountCents = source.qr.amountCents;
    if (source.kind === 'CHARGE') amountCents = source.charge.amountCents;
    const allowChangeAmount = type === 'QR_CODE_STATIC' && amountCents === null;
    let key = code!.key ?? '';
    if (source.kind === 'QR_CODE') key = source.qr.pixKey ?? ctx.options.beneficiary.pixKey;
    if (source.kind === 'CHARGE') key = ctx.options.beneficiary.pixKey;
    const transactionId = code!.txid ?? txidOf(code!) ?? '***';
    const additionalInfos: Array<{ name: string; value: string }> = [];
    if (code!.description) additionalInfos.push({ name: 'description', value: code!.description });
    if (source.kind === 'QR_CODE' && Array.isArray(source.qr.record.additionalInfos)) {
      additionalInfos.push(...(source.qr.record.additionalInfos as Array<{ name: string; value: string }>));
    }

    const now = ctx.clock.now();
    const e2e = endToEndId({ ispb: ctx.options.ispb, at: now });
    const expiresAt = new Date(now.getTime() + ctx.options.pixEndToEndIdTtlSeconds * 1000).toISOString();
    const record: Record<string, unknown> = {
      key,
      endToEndId: e2e,
      transactionId,
      allowChangeAmount,
      categoryCode: code!.merchantCategoryCode || '0000',
      type,
      initiationType: initiationTypeFor(type),
      status: qrStatusOf(source),
      amount: centsToWire(amountCents ?? 0),
      originalAmount: centsToWire(amountCents ?? 0),
      beneficiary: source.kind === 'FOREIGN' ? foreignAccount(code!) : ownAccount(ctx),
      additionalInfos,
      expiresAt,
    };
    const sourceRef =
      source.kind === 'QR_CODE' ? source.qr.txid : source.kind === 'CHARGE' ? source.charge.correlationId : null;
    const insertInitialization = ctx.db.prepare(
      `INSERT INTO pix_initializations (end_to_end_id, api_key_id, qr_type, transaction_id, amount_cents,
         allow_change_amount, source_kind, source_ref, record, created_at, expires_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    // The initialization and the stored answer of its key commit together (src/sandbox/idempotency.ts).
    return ctx.db.transaction(() => {
      insertInitialization.run(
        e2e,
        request.sandboxAuth.keyId,
        type,
        transactionId,
        amountCents,
        allowChangeAmount ? 1 : 0,
        source.kind === 'FOREIGN' ? null : source.kind,
        sourceRef,
        JSON.stringify(record),
        now.toISOString(),
        expiresAt,
      );
      return idempotency.commitAnswer(request, record);
    })();
  });

  app.post(paymentPath, { ...idempotency.hooks({ required: false }) }, async (request) => {
    const body = bodyObject(request);
    const errors = new FieldErrors();
    const amountCents = readAmount(errors, '$.amount', body.amount, { required: true });
    const description = readString(errors, '$.description', body.description);
    const e2e = readString(errors, '$.endToEndId', body.endToEndId);
    if (e2e === undefined && !errors.errors['$.endToEndId']) {
      errors.add('$.endToEndId', 'The endToEndId is required: expected the one the initialization returned.');
    }
    const transactionId = readString(errors, '$.transactionId', body.transactionId);
    if (transactionId === undefined && !errors.errors['$.transactionId']) {
      errors.add('$.transactionId', 'The transactionId is required: expected the one the initialization returned.');
    }
    const initiationType = body.initiationType;
    if (initiationType !== 'QR_CODE_STATIC' && initiationType !== 'QR_CODE_DYNAMIC') {
      errors.add(
        '$.initiationType',
        `Expected QR_CODE_STATIC or QR_CODE_DYNAMIC, got ${JSON.stringify(initiationType)}.`,
      );
    }
    errors.throwIfAny();

    const apiKeyId = request.sandboxAuth.keyId;
    const init = ctx.db
      .prepare('SELECT * FROM pix_initializations WHERE end_to_end_id = ? AND api_key_id = ?')
      .get(e2e, apiKeyId) as InitRow | undefined;
    if (!init) {
      throw new SandboxHttpError(404, {
        ...problem(404, 'Not Found', `No payment initialization handed out the endToEndId ${e2e}.`),
        code: 'END_TO_END_ID_NOT_FOUND',
      });
    }
    const fieldErrors = new FieldErrors();
    if (transactionId !== init.transaction_id) {
      fieldErrors.add(
        '$.transactionId',
        `Expected the initialization's transactionId ${init.transaction_id}, got ${transactionId}.`,
      );
    }
    const expectedInitiation = initiationTypeFor(init.qr_type);
    if (initiationType !== expectedInitiation) {
      fieldErrors.add(
        '$.initiationType',
        `Expected ${expectedInitiation} for a ${init.qr_type} QR code, got ${String(initiationType)}.`,
      );
    }
    if (!init.allow_change_amount && init.amount_cents !== null && amountCents !== init.amount_cents) {
      fieldErrors.add(
        '$.amount',
        `Expected the QR code's amount ${formatAmount(init.amount_cents, '.')} (it does not allow a change), got ${formatAmount(amountCents!, '.')}.`,
      );
    }
    fieldErrors.throwIfAny();

    const now = ctx.clock.now();
    const nowIso = now.toISOString();
    return ctx.db.transaction(() => {
      const current = ctx.db.prepare('SELECT * FROM pix_initializations WHERE end_to_end_id = ?').get(e2e) as InitRow;
      if (current.used_at !== null) {
        throw codedError(
          409,
          'Conflict',
          'END_TO_END_ID_ALREADY_USED',
          `The endToEndId ${e2e} was already used by a payment at ${current.used_at}; initialize the QR code again.`,
        );
      }
      if (now.getTime() >= Date.parse(current.expires_at)) {
        throw codedError(
          409,
          'Conflict',
          'END_TO_END_ID_EXPIRED',
          `The endToEndId ${e2e} expired at ${current.expires_at}; initialize the QR code again.`,
        );
      }
      const source = reloadSource(ctx, current.source_kind, current.source_ref);
      const qrStatus = qrStatusOf(source);
      if (qrStatus !== 'ACTIVE') {
        throw codedError(
          409,
          'Conflict',
          'QR_CODE_NOT_ACTIVE',
          `Expected a QR code in status ACTIVE, got ${qrStatus}.`,
        );
      }
      ctx.db.prepare('UPDATE pix_initializations SET used_at = ? WHERE end_to_end_id = ?').run(nowIso, e2e);
      if (source.kind === 'QR_CODE') {
        markQrCodePaid(ctx, source.qr, { amountCents: amountCents!, endToEndId: e2e!, at: now });
      } else if (source.kind === 'CHARGE') {
        try {
          markChargePaid(ctx, source.charge.correlationId, {
            amountCents: amountCents!,
            method: 'PIX',
            source: 'pix-payment',
            endToEndId: e2e!,
            at: now,
          });
        } catch (err) {
          if (err instanceof ChargeStateError) {
            throw codedError(409, 'Conflict', 'QR_CODE_NOT_ACTIVE', `Expected a payable charge, got: ${err.message}`);
          }
          throw err;
        }
      }
      const initRecord = JSON.parse(current.record) as { beneficiary: Record<string, unknown> };
      const { nsu } = ctx.db.prepare('SELECT COALESCE(MAX(transaction_nsu), 0) + 1 AS nsu FROM pix_payments').get() as {
        nsu: number;
      };
      const id = randomUUID();
      const paymentType = init.qr_type === 'QR_CODE_STATIC' ? 'PIX_QR_CODE_STATIC' : 'PIX_QR_CODE_DYNAMIC';
      const record: Record<string, unknown> = {
        id,
        endToEndId: e2e,
        transactionNsu: nsu,
        status: PIX_PAYMENT_STATUS_ANSWERED,
        type: paymentType,
        amount: centsToWire(amountCents!),
        createdAt: nowIso,
        description: description ?? '',
        payer: ownAccount(ctx),
        beneficiary: initRecord.beneficiary,
      };
      ctx.db
        .prepare(
          `INSERT INTO pix_payments (id, end_to_end_id, transaction_nsu, api_key_id, amount_cents, status, record, created_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(id, e2e, nsu, apiKeyId, amountCents, PIX_PAYMENT_STATUS_SETTLED, JSON.stringify(record), nowIso);
      ctx.events.record(
        'PIX_PAYMENT_UPDATED',
        {
          id,
          endToEndId: e2e,
          transactionId: init.transaction_id,
          transactionNsu: nsu,
          type: paymentType,
          status: PIX_PAYMENT_STATUS_SETTLED,
          amount: centsToWire(amountCents!),
          updatedAt: nowIso,
        },
        now,
      );
      const key = request.headers.idempotencykey;
      ctx.ledger.record('pix_paid', typeof key === 'string' ? key.toLowerCase() : e2e!, id);
      // The payment and the stored answer of its key commit together (src/sandbox/idempotency.ts).
      return idempotency.commitAnswer(request, record);
    })();
  });

  app.get(`${paymentPath}/:endToEndId`, async (request) => {
    const { endToEndId: e2e } = request.params as { endToEndId: string };
    // By endToEndId, or by the payment's id (what the `delbank` clients' GET /baas/api/v2/transfers/{id} sends).
    const row = ctx.db
      .prepare('SELECT record, status FROM pix_payments WHERE (end_to_end_id = ? OR id = ?) AND api_key_id = ?')
      .get(e2e, e2e, request.sandboxAuth.keyId) as { record: string; status: string } | undefined;
    if (!row) {
      throw new SandboxHttpError(404, { ...problem(404, 'Not Found'), code: 'PIX_PAYMENT_NOT_FOUND' });
    }
    return { ...(JSON.parse(row.record) as Record<string, unknown>), status: row.status };
  });
}
