/**
 * QR code creation (spec 4.4, records 2.9 and 2.10): dynamic QR charges (v1) and static QR codes (v2), plus two
 * sandbox look-ups by correlationId so a client can recover a creation whose answer it never heard.
 *
 *   POST /baas/api/v1/pix/qrcode/dynamic             create a dynamic QR charge (also answered on POST /baas/api/v1/charges)
 *   GET  /baas/api/v1/pix/qrcode/dynamic/{correlationId}   the dynamic QR charge (sandbox addition)
 *   POST /baas/api/v2/pix/qrcode/static              create a static QR code (IdempotencyKey required; optional in
 *                                                    the `delbank` profile, where the correlationId is the guard)
 *   GET  /baas/api/v2/pix/qrcode/static/{correlationId or transactionId}   the static QR code (sandbox addition)
 * The GET of a dynamic code takes its txid too. The `delbank` profile reaches the dynamic routes under v2
 * (src/sandbox/profiles.ts).
 *
 * Dynamic QR charge states (only PENDING is given by the spec; the rest is the sandbox's decision):
 *
 *   (none) --create--> PENDING --paid by a Pix QR payment--> CONCLUDED
 *                         |
 *                         +--now >= expiresAt (read-time, no event)--> EXPIRED   (cannot be paid)
 *
 * A static code stays ACTIVE and may be paid any number of times. What must hold: a dynamic code is paid at most
 * once (the payment and the status change commit in one transaction, see markQrCodePaid).
 *
 * Error bodies (not shown by the spec): the validation problem shape with field paths (`$.amount`), and for state
 * refusals the problem shape plus a stable `code` (docs/service-gaps.md "QR code creation").
 */
import { randomUUID } from 'node:crypto';
import { getStateNameByCode } from '@brazilian-utils/brazilian-utils/get-state-name-by-code';
import { isValidCnpj } from '@brazilian-utils/brazilian-utils/is-valid-cnpj';
import { isValidCpf } from '@brazilian-utils/brazilian-utils/is-valid-cpf';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import QRCode from 'qrcode';
import {
  buildDynamicBrCode,
  buildStaticBrCode,
  centsToWire,
  FormatError,
  isGuid,
  isValidPixKey,
  MAX_MERCHANT_CITY_LENGTH,
  QR_FORMAT_RESPONSES,
  randomAlphanumeric,
  STATIC_QR_ADDITIONAL_INFORMATION_MAX,
  toBrCodeText,
  wireToCents,
} from '../../formats/index.js';
import { idempotencyFor } from '../idempotency.js';
import { problem, SandboxHttpError, validationProblem } from '../problems.js';
import { idempotencyKeyRequired } from '../profiles.js';
import type { SandboxContext } from '../server.js';

export const DYNAMIC_QR_PATH = '/baas/api/v1/pix/qrcode/dynamic';
/** The spec also shows the dynamic QR creation sent to this path. */
export const DYNAMIC_QR_CHARGES_PATH = '/baas/api/v1/charges';
export const STATIC_QR_PATH = '/baas/api/v2/pix/qrcode/static';
/** Default lifetime of a dynamic QR charge, in seconds (spec 8). */
export const DEFAULT_DYNAMIC_QR_EXPIRES_IN_SECONDS = 86_400;
/** Side of the QR image, in pixels (spec 8). */
export const QR_IMAGE_SIZE_PX = 250;

export type DynamicQrStatus = 'PENDING' | 'CONCLUDED' | 'EXPIRED';
export type QrCodeKind = 'DYNAMIC' | 'STATIC';

/** A QR code made by this module, as stored. */
export interface StoredQrCode {
  id: string;
  kind: QrCodeKind;
  correlationId: string;
  apiKeyId: string;
  txid: string;
  payload: string;
  amountCents: number | null;
  pixKey: string | null;
  /** Effective status: dynamic PENDING | CONCLUDED | EXPIRED; static ACTIVE. */
  status: DynamicQrStatus | 'ACTIVE';
  expiresAt: string | null;
  /** The creation response without the image. */
  record: Record<string, unknown>;
  createdAt: string;
  paidAt: string | null;
}

// ---------------------------------------------------------------------------------------------------------------
// Request-checking helpers shared by the H4 payment routes (bill payments, Pix payments, QR codes).

/** Collects field errors, then throws one validation problem (400) with all of them. */
export class FieldErrors {
  readonly errors: Record<string, string[]> = {};

  add(path: string, message: string): void {
    this.errors[path] = [...(this.errors[path] ?? []), message];
  }

  get empty(): boolean {
    return Object.keys(this.errors).length === 0;
  }

  /** Throws the validation problem when any error was added. */
  throwIfAny(): void {
    if (!this.empty) throw new SandboxHttpError(400, validationProblem(this.errors));
  }
}

/** A refusal with the problem shape plus a stable `code` (the sandbox's decision for bodies the spec does not show). */
export function codedError(
  status: number,
  title: string,
  code: string,
  detail: string,
  errors?: Record<string, string[]>,
): SandboxHttpError {
  return new SandboxHttpError(status, { ...problem(status, title, detail), code, ...(errors ? { errors } : {}) });
}

/** The JSON body as an object, or a 400 saying what was found. */
export function bodyObject(request: FastifyRequest): Record<string, unknown> {
  const body = request.body;
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new SandboxHttpError(
      400,
      validationProblem({ $: [`Expected a JSON object body, got ${body === undefined ? 'no body' : typeof body}.`] }),
    );
  }
  return body as Record<string, unknown>;
}

/** Reads a wire amount (JSON number, > 0, at most 2 decimals) as cents; records an error and returns undefined. */
export function readAmount(
  errors: FieldErrors,
  path: string,
  value: unknown,
  options: { required: boolean },
): number | undefined {
  if (value === undefined || value === null) {
    if (options.required) errors.add(path, 'The amount is required: expected a number greater than 0.');
    return undefined;
  }
  if (typeof value !== 'number') {
    errors.add(path, `Expected a JSON number greater than 0, got ${typeof value} ${JSON.stringify(value)}.`);
    return undefined;
  }
  let cents: number;
  try {
    cents = wireToCents(value);
  } catch (err) {
    errors.add(path, (err as Error).message);
    return undefined;
  }
  if (cents <= 0) {
    errors.add(path, `Expected an amount greater than 0, got ${value}.`);
    return undefined;
  }
  return cents;
}

/** An optional string field; records an error for another type. */
export function readString(errors: FieldErrors, path: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') {
    errors.add(path, `Expected a string, got ${typeof value}.`);
    return undefined;
  }
  return value;
}

/** A PNG of the payload, `QR_IMAGE_SIZE_PX` square. */
export async function qrPng(payload: string): Promise<Buffer> {
  // qrcode computes the side as floor(modules * (width / modules)), which floating point can leave at 249 for 250:
  // half a pixel more makes the floor land on 250 exactly, whatever the module count.
  return QRCode.toBuffer(payload, { type: 'png', width: QR_IMAGE_SIZE_PX + 0.5, margin: 2, errorCorrectionLevel: 'M' });
}

// ---------------------------------------------------------------------------------------------------------------
// Storage

interface QrRow {
  id: string;
  kind: QrCodeKind;
  correlation_id: string;
  api_key_id: string;
  txid: string;
  payload: string;
  amount_cents: number | null;
  pix_key: string | null;
  status: string;
  expires_at: string | null;
  record: string;
  created_at: string;
  updated_at: string;
  paid_at: string | null;
}

function fromRow(ctx: SandboxContext, row: QrRow): StoredQrCode {
  let status = row.status as StoredQrCode['status'];
  if (
    row.kind === 'DYNAMIC' &&
    status === 'PENDING' &&
    row.expires_at !== null &&
    ctx.clock.now().getTime() >= Date.parse(row.expires_at)
  ) {
    status = 'EXPIRED';
  }
  return {
    id: row.id,
    kind: row.kind,
    correlationId: row.correlation_id,
    apiKeyId: row.api_key_id,
    txid: row.txid,
    payload: row.payload,
    amountCents: row.amount_cents,
    pixKey: row.pix_key,
    status,
    expiresAt: row.expires_at,
    record: JSON.parse(row.record) as Record<string, unknown>,
    createdAt: row.created_at,
    paidAt: row.paid_at,
  };
}

/** The QR code made by this sandbox whose BR Code carries this txid (62-05). */
export function findQrCodeByTxid(ctx: SandboxContext, txid: string): StoredQrCode | undefined {
  const row = ctx.db.prepare('SELECT * FROM qr_codes WHERE txid = ?').get(txid) as QrRow | undefined;
  return row ? fromRow(ctx, row) : undefined;
}

/** The QR code made by this sandbox with exactly this payload. */
export function findQrCodeByPayload(ctx: SandboxContext, payload: string): StoredQrCode | undefined {
  const row = ctx.db.prepare('SELECT * FROM qr_codes WHERE payload = ?').get(payload) as QrRow | undefined;
  return row ? fromRow(ctx, row) : undefined;
}

function findByCorrelation(
  ctx: SandboxContext,
  apiKeyId: string,
  kind: QrCodeKind,
  correlationId: string,
): StoredQrCode | undefined {
  const row = ctx.db
    .prepare('SELECT * FROM qr_codes WHERE api_key_id = ? AND kind = ? AND correlation_id = ?')
    .get(apiKeyId, kind, correlationId) as QrRow | undefined;
  return row ? fromRow(ctx, row) : undefined;
}

/** A QR code about to be stored by {@link insertQrCode}. */
interface NewQrCode {
  kind: QrCodeKind;
  /** Row id and txid: the dynamic code's txid, the static code's transactionId. */
  id: string;
  correlationId: string;
  apiKeyId: string;
  payload: string;
  amountCents: number | null;
  pixKey: string;
  status: 'PENDING' | 'ACTIVE';
  /** ISO instant; null for a static code (it does not expire). */
  expiresAt: string | null;
  /** The wire record returned on creation and by GET. */
  record: Record<string, unknown>;
  createdAt: string;
  /** Key of the `qr_created` ledger entry. */
  ledgerKey: string;
  /** Runs inside the insert's transaction (to commit the answer of an IdempotencyKey with the effect). */
  inTransaction?: () => void;
}

/**
 * Stores a new QR code and its `qr_created` ledger entry in one transaction. A code of the same kind with the same
 * correlationId under the same API key is refused with 409 DUPLICATE_CORRELATION_ID.
 */
function insertQrCode(ctx: SandboxContext, qr: NewQrCode): void {
  const path = qr.kind === 'DYNAMIC' ? DYNAMIC_QR_PATH : STATIC_QR_PATH;
  ctx.db.transaction(() => {
    if (findByCorrelation(ctx, qr.apiKeyId, qr.kind, qr.correlationId)) {
      throw codedError(
        409,
        'Conflict',
        'DUPLICATE_CORRELATION_ID',
        `A ${qr.kind.toLowerCase()} QR code with correlationId ${qr.correlationId} already exists; GET ${path}/${qr.correlationId} returns it.`,
      );
    }
    ctx.db
      .prepare(
        `INSERT INTO qr_codes (id, kind, correlation_id, api_key_id, txid, payload, amount_cents, pix_key, status,
           expires_at, record, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      )
      .run(
        qr.id,
        qr.kind,
        qr.correlationId,
        qr.apiKeyId,
        qr.id,
        qr.payload,
        qr.amountCents,
        qr.pixKey,
        qr.status,
        qr.expiresAt,
        JSON.stringify(qr.record),
        qr.createdAt,
        qr.createdAt,
      );
    ctx.ledger.record('qr_created', qr.ledgerKey, qr.id);
    qr.inTransaction?.();
  })();
}

/**
 * Records a payment of a QR code made here (call inside the payment's transaction). A dynamic code becomes
 * CONCLUDED; paying one that is not PENDING throws a 409 (code QR_CODE_NOT_ACTIVE). Records PIX_RECEIVED for the
 * receiver and the `charge_paid` effect keyed by the code's correlationId.
 */
export function markQrCodePaid(
  ctx: SandboxContext,
  qr: StoredQrCode,
  payment: { amountCents: number; endToEndId: string; at: Date },
): void {
  ctx.db.transaction(() => {
    const current = findQrCodeByTxid(ctx, qr.txid);
    if (!current) throw new Error(`QR code ${qr.txid} vanished`);
    if (current.kind === 'DYNAMIC' && current.status !== 'PENDING') {
      throw codedError(
        409,
        'QR code not active',
        'QR_CODE_NOT_ACTIVE',
        `Expected a dynamic QR code in status PENDING, got ${current.status}.`,
      );
    }
    const paidAt = payment.at.toISOString();
    ctx.db
      .prepare(
        'INSERT INTO qr_code_payments (id, qr_code_id, amount_cents, end_to_end_id, paid_at) VALUES (?, ?, ?, ?, ?)',
      )
      .run(randomUUID(), current.id, payment.amountCents, payment.endToEndId, paidAt);
    if (current.kind === 'DYNAMIC') {
      ctx.db
        .prepare(`UPDATE qr_codes SET status = 'CONCLUDED', paid_at = ?, updated_at = ? WHERE id = ?`)
        .run(paidAt, paidAt, current.id);
    } else {
      ctx.db.prepare('UPDATE qr_codes SET paid_at = ?, updated_at = ? WHERE id = ?').run(paidAt, paidAt, current.id);
    }
    ctx.events.record(
      'PIX_RECEIVED',
      {
        correlationId: current.correlationId,
        qrCodeType: current.kind === 'DYNAMIC' ? 'DYNAMIC_QR_CODE' : 'STATIC_QR_CODE',
        txid: current.txid,
        endToEndId: payment.endToEndId,
        amount: centsToWire(payment.amountCents),
        receivedAt: paidAt,
        key: current.pixKey,
      },
      payment.at,
    );
    ctx.ledger.record('charge_paid', current.correlationId, payment.endToEndId);
  })();
}

// ---------------------------------------------------------------------------------------------------------------
// Wire shapes

function dynamicToWire(qr: StoredQrCode): Record<string, unknown> {
  const out: Record<string, unknown> = { ...qr.record, status: qr.status };
  if (qr.paidAt) out.paidAt = qr.paidAt;
  return out;
}

async function withImage(
  record: Record<string, unknown>,
  payload: string,
  formatResponse: string | undefined,
  field: 'qrCodeImageBase64' | 'base64Image',
): Promise<Record<string, unknown>> {
  if (formatResponse !== 'PAYLOAD_AND_QRCODE') return record;
  const png = (await qrPng(payload)).toString('base64');
  return { ...record, [field]: field === 'base64Image' ? `data:image/png;base64,${png}` : png };
}

function readFormatResponse(errors: FieldErrors, value: unknown, fallback: string): string {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || !(QR_FORMAT_RESPONSES as readonly string[]).includes(value)) {
    errors.add('$.formatResponse', `Expected ONLY_PAYLOAD or PAYLOAD_AND_QRCODE, got ${JSON.stringify(value)}.`);
    return fallback;
  }
  return value;
}

// ---------------------------------------------------------------------------------------------------------------
// Routes

export function registerQrCodeRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const createDynamic = async (request: FastifyRequest) => {
    const body = bodyObject(request);
    const errors = new FieldErrors();
    const correlationId = readString(errors, '$.correlationId', body.correlationId);
    if (correlationId === undefined && errors.empty) {
      errors.add('$.correlationId', 'The correlationId is required: expected a GUID.');
    } else if (correlationId !== undefined && !isGuid(correlationId)) {
      errors.add('$.correlationId', `Expected a GUID, got ${JSON.stringify(correlationId.slice(0, 64))}.`);
    }
    const amountCents = readAmount(errors, '$.amount', body.amount, { required: true });
    const description = readString(errors, '$.description', body.description);
    const formatResponse = readFormatResponse(errors, body.formatResponse, 'ONLY_PAYLOAD');
    let expiresIn = DEFAULT_DYNAMIC_QR_EXPIRES_IN_SECONDS;
    if (body.expiresIn !== undefined && body.expiresIn !== null) {
      if (typeof body.expiresIn !== 'number' || !Number.isInteger(body.expiresIn) || body.expiresIn <= 0) {
        errors.add(
          '$.expiresIn',
          `Expected a whole number of seconds greater than 0, got ${JSON.stringify(body.expiresIn)}.`,
        );
      } else expiresIn = body.expiresIn;
    }
    if (body.type !== undefined && body.type !== null && body.type !== 'PIX_DYNAMIC') {
      errors.add('$.type', `Expected PIX_DYNAMIC (or no type), got ${JSON.stringify(body.type)}.`);
    }
    const payer = readPayer(errors, body.payer);
    const city = readCity(errors, body.city);
    const additionalInfos = readNameValues(errors, '$.additionalInfos', body.additionalInfos);
    errors.throwIfAny();

    const apiKeyId = request.sandboxAuth.keyId;
    const now = ctx.clock.now();
    const createdAt = now.toISOString();
    const expiresAt = new Date(now.getTime() + expiresIn * 1000).toISOString();
    const txid = randomUUID().replace(/-/g, '');
    const beneficiary = ctx.options.beneficiary;
    const payload = buildDynamicBrCode({
      locationUrl: `${ctx.options.pixLocationBase}${txid}`,
      merchantName: beneficiary.name,
      // A city name with nothing printable (accents and symbols are stripped) falls back to the beneficiary's city.
      merchantCity: city?.name && toBrCodeText(city.name, MAX_MERCHANT_CITY_LENGTH) ? city.name : beneficiary.city,
      amountCents: amountCents!,
      txid,
    });
    const record: Record<string, unknown> = {
      correlationId: correlationId!,
      ...(description !== undefined ? { description } : {}),
      amount: centsToWire(amountCents!),
      status: 'PENDING',
      expiresIn,
      createdAt,
      updatedAt: createdAt,
      expiresAt,
      qrCodePayload: payload,
      ...(payer ? { payer } : {}),
      ...(city ? { city } : {}),
      ...(additionalInfos ? { additionalInfos } : {}),
    };
    insertQrCode(ctx, {
      kind: 'DYNAMIC',
      id: txid,
      correlationId: correlationId!,
      apiKeyId,
      payload,
      amountCents: amountCents!,
      pixKey: beneficiary.pixKey,
      status: 'PENDING',
      expiresAt,
      record,
      createdAt,
      ledgerKey: correlationId!,
    });
    return withImage(record, payload, formatResponse, 'qrCodeImageBase64');
  };

  app.post(DYNAMIC_QR_PATH, createDynamic);
  app.post(DYNAMIC_QR_CHARGES_PATH, createDynamic);

  app.get(`${DYNAMIC_QR_PATH}/:correlationId`, async (request) => {
    const { correlationId } = request.params as { correlationId: string };
    // By correlationId, or by txid (the `delbank` clients' GET .../dynamic/{id}).
    const byTxid = findQrCodeByTxid(ctx, correlationId);
    const qr =
      findByCorrelation(ctx, request.sandboxAuth.keyId, 'DYNAMIC', correlationId) ??
      (byTxid?.kind === 'DYNAMIC' && byTxid.apiKeyId === request.sandboxAuth.keyId ? byTxid : undefined);
    if (!qr) throw new SandboxHttpError(404, { ...problem(404, 'Not Found'), code: 'QR_CODE_NOT_FOUND' });
    const { formatResponse } = request.query as { formatResponse?: string };
    return withImage(dynamicToWire(qr), qr.payload, formatResponse, 'qrCodeImageBase64');
  });

  // The `delbank` dialect sends no key here (src/sandbox/profiles.ts): the correlationId is the only guard.
  const staticKey = { required: idempotencyKeyRequired(ctx.options.profile, 'staticQr') };
  app.post(STATIC_QR_PATH, { ...idempotencyFor(ctx).hooks(staticKey) }, async (request) => {
    const body = bodyObject(request);
    const errors = new FieldErrors();
    const correlationId = readString(errors, '$.correlationId', body.correlationId);
    if ((correlationId === undefined || correlationId.trim() === '') && !errors.errors['$.correlationId']) {
      errors.add('$.correlationId', 'The correlationId is required: expected a non-empty string.');
    }
    const description = readString(errors, '$.description', body.description);
    const amountCents = readAmount(errors, '$.amount', body.amount, { required: false });
    const pixKey = readString(errors, '$.pixKey', body.pixKey);
    if (pixKey !== undefined && !isValidPixKey(pixKey)) {
      errors.add(
        '$.pixKey',
        'Expected a Pix key: CPF, CNPJ, +55 phone, e-mail or random key (EVP), got a value that is none of them.',
      );
    }
    const infoPath = body.additionalInformation !== undefined ? '$.additionalInformation' : '$.additionalInfo';
    const additionalInformation = readString(errors, infoPath, body.additionalInformation ?? body.additionalInfo);
    if (additionalInformation !== undefined && additionalInformation.length > STATIC_QR_ADDITIONAL_INFORMATION_MAX) {
      errors.add(
        infoPath,
        `Expected at most ${STATIC_QR_ADDITIONAL_INFORMATION_MAX} characters, got ${additionalInformation.length}.`,
      );
    }
    const formatResponse = readFormatResponse(errors, body.formatResponse, 'PAYLOAD_AND_QRCODE');
    if (body.type !== undefined && body.type !== null && body.type !== 'PIX_STATIC') {
      errors.add('$.type', `Expected PIX_STATIC (or no type), got ${JSON.stringify(body.type)}.`);
    }
    errors.throwIfAny();

    const apiKeyId = request.sandboxAuth.keyId;
    const beneficiary = ctx.options.beneficiary;
    const key = pixKey ?? beneficiary.pixKey;
    const transactionId = randomAlphanumeric(25);
    const createdAt = ctx.clock.nowIso();
    let payload: string;
    try {
      payload = buildStaticBrCode({
        key,
        ...(amountCents !== undefined ? { amountCents } : {}),
        merchantName: beneficiary.name,
        merchantCity: beneficiary.city,
        txid: transactionId,
        ...(additionalInformation ? { description: additionalInformation } : {}),
      });
    } catch (err) {
      if (!(err instanceof FormatError)) throw err;
      throw new SandboxHttpError(400, validationProblem({ '$.pixKey': [err.message] }));
    }
    const record: Record<string, unknown> = {
      transactionId,
      correlationId: correlationId!,
      ...(amountCents !== undefined ? { amount: centsToWire(amountCents) } : {}),
      pixKey: key,
      beneficiaryName: beneficiary.name,
      address: {
        cityName: beneficiary.city,
        zipCode: beneficiary.zipCode,
        uf: beneficiary.state,
        state: getStateNameByCode(beneficiary.state) ?? beneficiary.state,
        street: beneficiary.address,
      },
      additionalInfo: additionalInformation ?? '',
      ...(description !== undefined ? { description } : {}),
      createdAt,
      payloadPix: payload,
    };
    // The image first (it depends only on the payload), so the QR code and the stored answer of its key commit
    // together (src/sandbox/idempotency.ts).
    const answer = await withImage(record, payload, formatResponse, 'base64Image');
    const idempotency = idempotencyFor(ctx);
    insertQrCode(ctx, {
      kind: 'STATIC',
      id: transactionId,
      correlationId: correlationId!,
      apiKeyId,
      payload,
      amountCents: amountCents ?? null,
      pixKey: key,
      status: 'ACTIVE',
      expiresAt: null,
      record,
      createdAt,
      ledgerKey: String(request.headers.idempotencykey ?? correlationId),
      inTransaction: () => idempotency.commitAnswer(request, answer),
    });
    return answer;
  });

  /** A static code of the caller's by correlationId, or by transactionId (the `delbank` clients' identifier). */
  const findStatic = (request: FastifyRequest, id: string) => {
    const byTxid = findQrCodeByTxid(ctx, id);
    const qr =
      findByCorrelation(ctx, request.sandboxAuth.keyId, 'STATIC', id) ??
      (byTxid?.kind === 'STATIC' && byTxid.apiKeyId === request.sandboxAuth.keyId ? byTxid : undefined);
    if (!qr) throw new SandboxHttpError(404, { ...problem(404, 'Not Found'), code: 'QR_CODE_NOT_FOUND' });
    return qr;
  };
  // The Pix received on a static code, oldest first (a static code is reusable: each payment is one Pix received,
  // the code stays ACTIVE), so a client without webhooks learns them. In this dialect the time is `receivedAt`; the
  // `delbank` edge writes it `createdAt` (src/sandbox/profiles.ts).
  const staticPayments = (qr: StoredQrCode) =>
    (
      ctx.db
        .prepare(
          'SELECT end_to_end_id, amount_cents, paid_at FROM qr_code_payments WHERE qr_code_id = ? ORDER BY paid_at, id',
        )
        .all(qr.id) as Array<{ end_to_end_id: string; amount_cents: number; paid_at: string }>
    ).map((p) => ({ endToEndId: p.end_to_end_id, amount: centsToWire(p.amount_cents), receivedAt: p.paid_at }));

  app.get(`${STATIC_QR_PATH}/:correlationId`, async (request) => {
    const { correlationId } = request.params as { correlationId: string };
    const qr = findStatic(request, correlationId);
    const { formatResponse } = request.query as { formatResponse?: string };
    // `payments`: a sandbox addition in the interface (docs/service-gaps.md); the provider's clients read it too.
    const payments = staticPayments(qr);
    return withImage({ ...qr.record, payments }, qr.payload, formatResponse ?? 'PAYLOAD_AND_QRCODE', 'base64Image');
  });

  // The provider's clients' list of a static code's payments (provider-delbank.md): an array, each with the code's
  // correlationId.
  app.get(`${STATIC_QR_PATH}/:correlationId/payments`, async (request) => {
    const { correlationId } = request.params as { correlationId: string };
    const qr = findStatic(request, correlationId);
    return staticPayments(qr).map((p) => ({ ...p, correlationId: qr.correlationId }));
  });
}

function readPayer(errors: FieldErrors, value: unknown): { name?: string; document?: string } | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    errors.add('$.payer', 'Expected an object with name and document.');
    return undefined;
  }
  const v = value as Record<string, unknown>;
  const name = readString(errors, '$.payer.name', v.name);
  const document = readString(errors, '$.payer.document', v.document);
  if (document !== undefined) {
    const digits = document.replace(/[.\-/\s]/g, '');
    const ok = digits.length === 11 ? isValidCpf(digits) : digits.length === 14 ? isValidCnpj(digits) : false;
    if (!ok) {
      errors.add(
        '$.payer.document',
        `Expected a CPF (11 digits) or CNPJ (14 digits) with valid check digits, got ${digits.length} characters that are not one.`,
      );
    }
  }
  return { ...(name !== undefined ? { name } : {}), ...(document !== undefined ? { document } : {}) };
}

function readCity(errors: FieldErrors, value: unknown): { name?: string; zipCode?: string } | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    errors.add('$.city', 'Expected an object with name and zipCode.');
    return undefined;
  }
  const v = value as Record<string, unknown>;
  const name = readString(errors, '$.city.name', v.name);
  // Both spellings appear in the service's samples; the response always says zipCode.
  const zipPath = v.zipCode !== undefined ? '$.city.zipCode' : '$.city.zipcode';
  const zipCode = readString(errors, zipPath, v.zipCode ?? v.zipcode);
  if (zipCode !== undefined && !/^\d{5}-?\d{3}$/.test(zipCode.trim())) {
    errors.add(zipPath, `Expected a zip code (CEP) of 8 digits, got ${JSON.stringify(zipCode)}.`);
  }
  return { ...(name !== undefined ? { name } : {}), ...(zipCode !== undefined ? { zipCode } : {}) };
}

function readNameValues(
  errors: FieldErrors,
  path: string,
  value: unknown,
): Array<{ name: string; value: string }> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) {
    errors.add(path, 'Expected an array of objects with name and value.');
    return undefined;
  }
  const out: Array<{ name: string; value: string }> = [];
  value.forEach((item, i) => {
    const it = item as Record<string, unknown> | null;
    if (!it || typeof it !== 'object' || typeof it.name !== 'string' || typeof it.value !== 'string') {
      errors.add(`${path}[${i}]`, 'Expected an object with string name and string value.');
    } else out.push({ name: it.name, value: it.value });
  });
  return out;
}
