/**
 * Kind `qr-codes`: one row creates a dynamic (PIX_DYNAMIC, immediate payment) or static (PIX_STATIC) Pix QR code
 * (spec 2.9, 2.10, 4.4), and saves its PNG when `formatResponse` is PAYLOAD_AND_QRCODE.
 *
 * One step, `create`, whose request depends on the type:
 * - dynamic: POST .../pix/qrcode/dynamic (v1 in `interface`, v2 in `delbank`) takes no IdempotencyKey. After an
 *   unknown outcome it is recovered by GET .../dynamic/{correlationId} (`qrCodes.getDynamic`, not in the spec, served
 *   by the sandbox; docs/service-gaps.md) and created only when that says 404. correlationId must be a GUID (spec 2.9).
 * - static: POST /baas/api/v2/pix/qrcode/static. In `interface` with the row's IdempotencyKey: a resend replays the
 *   first answer. In `delbank` without (the provider's clients send none): after an unknown outcome it is looked up
 *   by GET .../static/{correlationId} and created only when that says 404, like the dynamic one
 *   (`qrCodes.recoverStatic`). Whether the provider finds a static code by correlationId there is not known
 *   (docs/providers.md): if it answered 404 for a code that exists, a second code would be created (no money moves;
 *   the bank may also refuse the repeated correlationId, and the row then fails with its answer).
 * The PNG is written inside the step (a local, repeatable effect), so a recovered or replayed creation writes it too.
 *
 * Natural key: the correlationId.
 */

import type { CreateDynamicQrInput, CreateStaticQrInput, DynamicQrCode, StaticQrCode } from '../bank/client.js';
import { NotFoundError } from '../bank/errors.js';
import { CORRELATION_ID_PATTERN } from '../formats/charges.js';
import { QR_FORMAT_RESPONSES, STATIC_QR_ADDITIONAL_INFORMATION_MAX } from '../formats/pix.js';
import { msg } from '../i18n/index.js';
import type { Cents } from '../types.js';
import { CORRELATION_ID_FORMAT } from './charges.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, type Phrase, recordParser, shown } from './fields.js';
import { writePng } from './images.js';
import { type BatchKind, type ColumnSpec, type StepContext, StepOutcomeError, type StepOutput } from './kind.js';
import { centsField, textField } from './same-operation.js';
import * as v from './validators.js';

export const QR_TYPES = ['PIX_DYNAMIC', 'PIX_STATIC'] as const;
/**
 * QR code types as sheets write them (case, accents, spaces, `-` and `_` do not count): `Pix dinâmico`, `Dinâmico`,
 * `Pix estático`, `Estático`, as the charges kind reads them. `Pix` alone names neither here (every QR code is Pix):
 * INVALID_ENUM, never guessed.
 */
const QR_TYPE_WORDS: Readonly<Record<string, (typeof QR_TYPES)[number]>> = {
  pixdinamico: 'PIX_DYNAMIC',
  dinamico: 'PIX_DYNAMIC',
  pixestatico: 'PIX_STATIC',
  estatico: 'PIX_STATIC',
};
/** Spec 2.10 and 8. */
export const MAX_ADDITIONAL_INFOS = 3;

export type QrCodeRow =
  | { type: 'PIX_DYNAMIC'; input: CreateDynamicQrInput; idempotencyKey?: string }
  | { type: 'PIX_STATIC'; input: CreateStaticQrInput; idempotencyKey?: string };

const DYNAMIC = 'PIX_DYNAMIC only';
const STATIC = 'PIX_STATIC only';
const WHY_DYNAMIC = msg('WHY.dynamicOnly');
const WHY_STATIC = msg('WHY.staticOnly');

export const QR_CODE_COLUMNS: readonly ColumnSpec[] = [
  column(
    'type',
    'PIX_DYNAMIC (immediate payment) or PIX_STATIC; also as sheets write them: Pix dinâmico or Dinâmico (PIX_DYNAMIC), Pix estático or Estático (PIX_STATIC), case and accents aside',
    'PIX_DYNAMIC',
    { required: true },
  ),
  column(
    'correlationId',
    `${FORMATS.guid} for PIX_DYNAMIC; ${CORRELATION_ID_FORMAT} for PIX_STATIC`,
    '5f0c2a9e-8d41-4c7b-9a3e-2b6d1f8e4c10',
    {
      required: true,
    },
  ),
  column('amount', `${FORMATS.amount}; for PIX_STATIC leave empty to let the payer choose`, '150,00', {
    requiredWhen: 'when type is PIX_DYNAMIC',
  }),
  column('description', 'text, at most 140 characters (internal)', 'Pedido 998'),
  column(
    'formatResponse',
    'ONLY_PAYLOAD (default) or PAYLOAD_AND_QRCODE (also saves the PNG image)',
    'PAYLOAD_AND_QRCODE',
  ),
  column('expiresIn', `whole seconds > 0 (default 86400); ${DYNAMIC}`, '3600'),
  column('payer.name', `text, at most 100 characters; ${DYNAMIC}`, 'Maria da Silva', {
    requiredWhen: 'with payer.document',
  }),
  column('payer.document', `${FORMATS.document}; ${DYNAMIC}`, '123.456.789-09', { requiredWhen: 'with payer.name' }),
  column('city.name', `text, at most 60 characters; ${DYNAMIC}`, 'São Paulo', { requiredWhen: 'with city.zipCode' }),
  column('city.zipCode', `${FORMATS.zipCode}; ${DYNAMIC}`, '01310-100', { requiredWhen: 'with city.name' }),
  ...[1, 2, 3].flatMap((i) => [
    column(`additionalInfos.${i}.name`, `text, at most 50 characters; ${DYNAMIC}`, `Campo${i}`, {
      requiredWhen: `with additionalInfos.${i}.value`,
    }),
    column(`additionalInfos.${i}.value`, `text, at most 200 characters; ${DYNAMIC}`, `Valor ${i}`, {
      requiredWhen: `with additionalInfos.${i}.name`,
    }),
  ]),
  column(
    'pixKey',
    `Pix key to receive on (CPF, CNPJ, mobile phone, e-mail or random key), at most 77 characters; sent as the DICT writes it: (11) 98765-4321 as +5511987654321, Maria@Example.com as maria@example.com, 123.456.789-09 as 12345678909; ${STATIC}`,
    'maria@example.com',
  ),
  column(
    'additionalInformation',
    `text shown to the payer, at most ${STATIC_QR_ADDITIONAL_INFORMATION_MAX} characters; ${STATIC}`,
    'Obrigado pela compra',
  ),
  IDEMPOTENCY_KEY_COLUMN,
];

function forbid(r: CellReader, columns: readonly string[], why: Phrase): void {
  for (const c of Object.keys(r.record)) if (columns.some((p) => c === p || c.startsWith(`${p}.`))) r.forbid(c, why);
}

export function parseQrCode(r: CellReader): QrCodeRow | undefined {
  const type = r.enumOf('type', QR_TYPES, { required: true, words: QR_TYPE_WORDS });
  const description = r.text('description', { max: 140 });
  const formatResponse = r.enumOf('formatResponse', QR_FORMAT_RESPONSES);
  const idempotencyKey = r.guid('idempotencyKey');
  const key = idempotencyKey === undefined ? {} : { idempotencyKey };
  if (type === 'PIX_DYNAMIC') {
    forbid(r, ['pixKey', 'additionalInformation'], WHY_STATIC);
    const correlationId = r.guid('correlationId', { required: true, when: msg('WHEN.guidForDynamic') });
    const amountCents = r.amount('amount', { required: true, when: msg('WHEN.typeIs', { type: 'PIX_DYNAMIC' }) });
    const expiresInSeconds = r.integer('expiresIn', { min: 1, max: 31_536_000 });
    const anyPayer = r.has('payer.name') || r.has('payer.document');
    const payerName = r.text('payer.name', {
      required: anyPayer,
      when: msg('WHEN.with', { column: 'payer.document' }),
      max: 100,
    });
    const payerDocument = r.document('payer.document', {
      required: anyPayer,
      when: msg('WHEN.with', { column: 'payer.name' }),
    });
    const anyCity = r.has('city.name') || r.has('city.zipCode');
    const cityName = r.text('city.name', {
      required: anyCity,
      when: msg('WHEN.with', { column: 'city.zipCode' }),
      max: 60,
    });
    const cityZip = r.zipCode('city.zipCode', { required: anyCity, when: msg('WHEN.with', { column: 'city.name' }) });
    const additionalInfos: Array<{ name: string; value: string }> = [];
    for (let i = 1; i <= MAX_ADDITIONAL_INFOS; i++) {
      const n = `additionalInfos.${i}.name`;
      const v = `additionalInfos.${i}.value`;
      if (!r.has(n) && !r.has(v)) continue;
      const name = r.text(n, { required: true, when: msg('WHEN.with', { column: v }), max: 50 });
      const value = r.text(v, { required: true, when: msg('WHEN.with', { column: n }), max: 200 });
      if (name !== undefined && value !== undefined) additionalInfos.push({ name, value });
    }
    if (correlationId === undefined || amountCents === undefined) return undefined;
    const input: CreateDynamicQrInput = { correlationId, amountCents };
    if (description !== undefined) input.description = description;
    if (formatResponse !== undefined) input.formatResponse = formatResponse;
    if (expiresInSeconds !== undefined) input.expiresInSeconds = expiresInSeconds;
    if (payerName !== undefined && payerDocument !== undefined)
      input.payer = { name: payerName, document: payerDocument };
    if (cityName !== undefined && cityZip !== undefined) input.city = { name: cityName, zipCode: cityZip };
    if (additionalInfos.length > 0) input.additionalInfos = additionalInfos;
    return { type, input, ...key };
  }
  if (type === 'PIX_STATIC') {
    forbid(r, ['expiresIn', 'payer', 'city', 'additionalInfos'], WHY_DYNAMIC);
    const correlationId = r.pattern('correlationId', CORRELATION_ID_PATTERN, msg('EXPECT.correlationId'), {
      required: true,
    });
    const amountCents: Cents | undefined = r.amount('amount');
    const pixKeyText = r.text('pixKey', { max: 77 });
    // Sent in its DICT form: the bank writes the key into the code as sent, and "(11) 98765-4321" there is a key no
    // payer's bank finds.
    const pixKey = pixKeyText === undefined ? undefined : v.canonicalPixKey(pixKeyText);
    if (pixKeyText !== undefined && pixKey === undefined) {
      const lost = v.pixKeyLostZeros(pixKeyText);
      if (lost) r.errorMessage('pixKey', 'INVALID_PIX_KEY', lost);
      else r.error('pixKey', 'INVALID_PIX_KEY', 'INVALID_PIX_KEY', { got: shown(pixKeyText) });
    }
    const additionalInformation = r.text('additionalInformation', { max: STATIC_QR_ADDITIONAL_INFORMATION_MAX });
    if (correlationId === undefined || (pixKeyText !== undefined && pixKey === undefined)) return undefined;
    const input: CreateStaticQrInput = { correlationId };
    if (amountCents !== undefined) input.amountCents = amountCents;
    if (description !== undefined) input.description = description;
    if (pixKey !== undefined) input.pixKey = pixKey;
    if (additionalInformation !== undefined) input.additionalInformation = additionalInformation;
    if (formatResponse !== undefined) input.formatResponse = formatResponse;
    return { type, input, ...key };
  }
  return undefined;
}

/** Writes the bank's image (base64 or a data URI) with the shared PNG writer; returns the file name. */
async function savePng(ctx: StepContext<QrCodeRow>, image: string): Promise<string> {
  const bytes = Buffer.from(image.replace(/^data:[^,]*,/, ''), 'base64');
  return writePng(ctx, ctx.row.input.correlationId, bytes);
}

function wantsImage(row: QrCodeRow): boolean {
  return row.input.formatResponse === 'PAYLOAD_AND_QRCODE';
}

/**
 * The image of a created code saved as a PNG next to the results: its file name, or null when the row asked for no
 * image. A row that asked for one (PAYLOAD_AND_QRCODE) and got none fails with QR_IMAGE_MISSING.
 */
async function imageFileOf(
  ctx: StepContext<QrCodeRow>,
  base64Image: string | null | undefined,
): Promise<string | null> {
  if (!wantsImage(ctx.row)) return null;
  if (!base64Image) {
    throw new StepOutcomeError('failed', 'QR_IMAGE_MISSING', 'Expected a QR code image (PAYLOAD_AND_QRCODE), got none');
  }
  return savePng(ctx, base64Image);
}

async function dynamicOutput(ctx: StepContext<QrCodeRow>, qr: DynamicQrCode): Promise<StepOutput> {
  const imageFile = await imageFileOf(ctx, qr.qrCodeImageBase64);
  return {
    qrCodePayload: qr.qrCodePayload,
    transactionId: null,
    qrStatus: qr.status ?? null,
    expiresAt: qr.expiresAt ?? null,
    imageFile,
  };
}

async function staticOutput(ctx: StepContext<QrCodeRow>, qr: StaticQrCode): Promise<StepOutput> {
  const imageFile = await imageFileOf(ctx, qr.base64Image);
  return {
    qrCodePayload: qr.payloadPix,
    transactionId: qr.transactionId ?? null,
    qrStatus: null,
    expiresAt: null,
    imageFile,
  };
}

export const qrCodesKind: BatchKind<QrCodeRow> = {
  name: 'qr-codes',
  group: 'pix',
  movesMoneyOut: false,
  columns: QR_CODE_COLUMNS,
  parse: recordParser(parseQrCode),
  naturalKey: (row) => row.input.correlationId,
  // One correlationId is one code: a row with an owned id is its duplicate only when it is the same code (type,
  // amount, the key a static code pays into, the payer of a dynamic one); else it is refused
  // (src/batches/same-operation.ts), never answered with the other row's code.
  mustMatch: {
    keyColumns: ['correlationId'],
    fields: ({ type, input }) => ({
      type: textField(type),
      amount: centsField(input.amountCents),
      pixKey: textField((input as { pixKey?: unknown }).pixKey),
      'payer.document': textField((input as { payer?: { document?: unknown } }).payer?.document),
    }),
  },
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  amountCents: (row) => row.input.amountCents,
  steps: [
    {
      name: 'create',
      effect: 'create',
      // The static request carries the key; the dynamic one cannot and is recovered instead.
      usesIdempotencyKey: false,
      async run(ctx) {
        if (ctx.row.type === 'PIX_DYNAMIC') {
          return dynamicOutput(ctx, await ctx.client.qrCodes.createDynamic(ctx.row.input, ctx.request));
        }
        return staticOutput(ctx, await ctx.client.qrCodes.createStatic(ctx.row.input, ctx.idempotencyKey, ctx.request));
      },
      async recover(ctx) {
        if (ctx.row.type === 'PIX_STATIC') {
          // Keyed profile: a resend with the same key replays the first answer; keyless: a lookup (404 = absent).
          const qr = await ctx.client.qrCodes.recoverStatic(ctx.row.input, ctx.idempotencyKey, ctx.request);
          return qr === undefined ? undefined : staticOutput(ctx, qr);
        }
        try {
          const qr = await ctx.client.qrCodes.getDynamic(ctx.row.input.correlationId, {
            ...ctx.request,
            ...(wantsImage(ctx.row) ? { formatResponse: 'PAYLOAD_AND_QRCODE' } : {}),
          });
          return dynamicOutput(ctx, qr);
        } catch (err) {
          if (err instanceof NotFoundError) return undefined;
          throw err;
        }
      },
    },
  ],
  resultColumns: ['qrCodePayload', 'transactionId', 'qrStatus', 'expiresAt', 'imageFile'],
  resultFileColumns: ['imageFile'],
  resultColumnForms: { transactionId: 'identifier', expiresAt: 'instant' },
};
