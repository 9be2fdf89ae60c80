/**
 * Charges routes (spec 4.1): create, get, list, PATCH, void, stream (PDF), staging pay, staging expire.
 *
 * This module validates requests and shapes responses; state and state rules live in src/sandbox/charges-store.ts
 * (the state machine is drawn there). Every rule the spec leaves open is listed in docs/service-gaps.md "Charges".
 *
 * Error shapes (spec 7): validation problem with `errors` keyed `$.field` (body) or `field` (query); Pix rules
 * (amount > 0, additionalInfo value <= 37 characters for PIX_STATIC) as `{errors, errorMessage}`; unknown
 * correlation id as the 404 problem; a state that forbids the order as a 409 problem.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  addDays,
  CHARGE_TYPES,
  type ChargeType,
  CORRELATION_ID_PATTERN,
  isIsoDate,
  isValidCep,
  isValidPhone,
  isValidUf,
  MAX_BANK_SLIP_AMOUNT_CENTS,
  MAX_CHARGES_PAGE_LIMIT,
  MAX_DUE_DATE_DAYS_AHEAD,
  MAX_EXPIRES_IN_SECONDS,
  oneYearAfter,
  PIX_STATIC_ADDITIONAL_INFO_MAX,
  validateDocument,
  wireToCents,
} from '../../formats/index.js';
import { chargeSlipCalculation } from '../bills.js';
import {
  type ChargeExtras,
  type ChargeUpdate,
  chargeToWire,
  createCharge,
  expireCharge,
  isBankSlip,
  listCharges,
  markChargePaid,
  requireCharge,
  updateCharge,
  voidCharge,
} from '../charges-store.js';
import { renderChargePdf } from '../pdf.js';
import { httpErrors } from '../problems.js';
import type { SandboxContext } from '../server.js';

/** Paging of GET /v1/charges: pages are 1-based; limit defaults to 20 and is at most 100 (spec 8). */
export const CHARGES_DEFAULT_PAGE = 1;
export const CHARGES_DEFAULT_LIMIT = 20;
/** Longest due date accepted at creation or update (src/formats/charges.ts, shared with remessa's checks). */
export { MAX_DUE_DATE_DAYS_AHEAD };

type Json = Record<string, unknown>;

/** Collects field errors under their JSON paths, then throws one validation problem. */
class FieldErrors {
  readonly map: Record<string, string[]> = {};

  add(path: string, message: string): void {
    this.map[path] ??= [];
    this.map[path].push(message);
  }

  get empty(): boolean {
    return Object.keys(this.map).length === 0;
  }

  throwIfAny(): void {
    if (!this.empty) throw httpErrors.validation(this.map);
  }
}

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nothing';
  if (v === null) return 'null';
  if (typeof v === 'string') return `"${v.length > 40 ? `${v.slice(0, 40)}...` : v}"`;
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  return String(v);
}

function optString(errs: FieldErrors, obj: Json, key: string, path: string, maxLength: number): string | undefined {
  const v = obj[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') {
    errs.add(path, `Expected a string, got ${describe(v)}.`);
    return undefined;
  }
  if (v.length > maxLength) errs.add(path, `Expected at most ${maxLength} characters, got ${v.length}.`);
  return v;
}

function reqString(errs: FieldErrors, obj: Json, key: string, path: string, maxLength: number): string | undefined {
  const v = optString(errs, obj, key, path, maxLength);
  if (v === undefined || v.trim() === '') {
    if (obj[key] === undefined || obj[key] === null || v !== undefined) errs.add(path, `The ${key} field is required.`);
    return undefined;
  }
  return v;
}

/**
 * A wire decimal (10.5) as integer cents (src/formats `wireToCents`: at most 2 decimals). Zero and negative values
 * come back as they are, for the caller to refuse in its own shape (Pix rules or a field error).
 */
function amountCents(errs: FieldErrors, v: unknown, path: string): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) {
    errs.add(path, `Expected a number, got ${describe(v)}.`);
    return undefined;
  }
  if (v <= 0) return Math.round(v * 100);
  try {
    return wireToCents(v);
  } catch (err) {
    errs.add(path, `${(err as Error).message}.`);
    return undefined;
  }
}

function checkDate(errs: FieldErrors, v: unknown, path: string): string | undefined {
  if (typeof v !== 'string' || !isIsoDate(v)) {
    errs.add(path, `Expected a date as yyyy-mm-dd, got ${describe(v)}.`);
    return undefined;
  }
  return v;
}

function checkDueDate(errs: FieldErrors, ctx: SandboxContext, v: unknown, path: string): string | undefined {
  const date = checkDate(errs, v, path);
  if (date === undefined) return undefined;
  const today = ctx.clock.today();
  if (date < today) errs.add(path, `Expected a due date on or after today (${today}), got ${date}.`);
  const latest = addDays(today, MAX_DUE_DATE_DAYS_AHEAD);
  if (date > latest) errs.add(path, `Expected a due date on or before ${latest}, got ${date}.`);
  return date;
}

function checkDocument(errs: FieldErrors, obj: Json, path: string, required: boolean): void {
  const doc = required ? reqString(errs, obj, 'document', path, 18) : optString(errs, obj, 'document', path, 18);
  const reason = doc === undefined ? null : validateDocument(doc);
  if (reason !== null) errs.add(path, `${reason}.`);
}

function checkZip(errs: FieldErrors, obj: Json, key: string, path: string, required: boolean): void {
  const zip = required ? reqString(errs, obj, key, path, 9) : optString(errs, obj, key, path, 9);
  if (zip !== undefined && !isValidCep(zip)) {
    errs.add(path, `Expected a zip code (CEP) of 8 digits, got "${zip}".`);
  }
}

function checkState(errs: FieldErrors, obj: Json, path: string, required: boolean): void {
  const uf = required ? reqString(errs, obj, 'state', path, 2) : optString(errs, obj, 'state', path, 2);
  if (uf !== undefined && !isValidUf(uf)) {
    errs.add(path, `Expected a two-letter state code (SP, RJ, ...), got "${uf}".`);
  }
}

function checkAddress(errs: FieldErrors, v: unknown, path: string, required: boolean): void {
  if (v === undefined || v === null) {
    if (required) errs.add(path, 'The address field is required.');
    return;
  }
  if (!isObject(v)) {
    errs.add(path, `Expected an object, got ${describe(v)}.`);
    return;
  }
  checkZip(errs, v, 'zipCode', `${path}.zipCode`, true);
  reqString(errs, v, 'publicPlace', `${path}.publicPlace`, 100);
  optString(errs, v, 'number', `${path}.number`, 20);
  optString(errs, v, 'complement', `${path}.complement`, 60);
  optString(errs, v, 'neighborhood', `${path}.neighborhood`, 60);
  reqString(errs, v, 'city', `${path}.city`, 60);
  checkState(errs, v, `${path}.state`, true);
}

function checkSlipPayer(errs: FieldErrors, v: unknown, path: string): void {
  if (!isObject(v)) {
    errs.add(
      path,
      v === undefined || v === null ? 'The payer field is required.' : `Expected an object, got ${describe(v)}.`,
    );
    return;
  }
  reqString(errs, v, 'name', `${path}.name`, 100);
  checkDocument(errs, v, `${path}.document`, true);
  const email = optString(errs, v, 'email', `${path}.email`, 100);
  if (email !== undefined && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) {
    errs.add(`${path}.email`, `Expected an e-mail address, got "${email}".`);
  }
  const phone = optObject(errs, v.phone, `${path}.phone`);
  if (phone !== undefined) {
    const prefix = optString(errs, phone, 'prefix', `${path}.phone.prefix`, 3);
    // src/formats isValidPhone judges the pair; each half is checked against a known-good other half.
    if (prefix !== undefined && !isValidPhone(prefix, '999999999')) {
      errs.add(`${path}.phone.prefix`, `Expected a 2-digit area code (11..99, not ending in 0), got "${prefix}".`);
    }
    const number = optString(errs, phone, 'number', `${path}.phone.number`, 12);
    if (number !== undefined && !isValidPhone('11', number)) {
      errs.add(
        `${path}.phone.number`,
        `Expected 8 digits starting 2..5 (landline) or 9 digits starting with 9 (mobile), got "${number}".`,
      );
    }
  }
  checkAddress(errs, v.address, `${path}.address`, true);
}

/** An optional object field: undefined when absent (no error) or when not an object (an error is recorded). */
function optObject(errs: FieldErrors, v: unknown, path: string): Json | undefined {
  if (v === undefined || v === null) return undefined;
  if (!isObject(v)) {
    errs.add(path, `Expected an object, got ${describe(v)}.`);
    return undefined;
  }
  return v;
}

function checkPixPayer(errs: FieldErrors, value: unknown, path: string): void {
  const v = optObject(errs, value, path);
  if (v === undefined) return;
  reqString(errs, v, 'name', `${path}.name`, 100);
  checkDocument(errs, v, `${path}.document`, true);
}

const FINE_TYPES = ['Fixed', 'Percentage'];

/** The required `type` of a fine or a discount. */
function checkFineType(errs: FieldErrors, v: Json, path: string): void {
  const type = reqString(errs, v, 'type', `${path}.type`, 20);
  if (type !== undefined && !FINE_TYPES.includes(type)) {
    errs.add(`${path}.type`, `Expected Fixed or Percentage, got "${type}".`);
  }
}

function checkFine(errs: FieldErrors, value: unknown, path: string): void {
  const v = optObject(errs, value, path);
  if (v === undefined) return;
  checkFineType(errs, v, path);
  if (v.date !== undefined) checkDate(errs, v.date, `${path}.date`);
  const cents = amountCents(errs, v.amount, `${path}.amount`);
  if (cents !== undefined && cents < 0) errs.add(`${path}.amount`, `Expected 0 or more, got ${v.amount}.`);
}

function checkDiscount(errs: FieldErrors, value: unknown, path: string): void {
  const v = optObject(errs, value, path);
  if (v === undefined) return;
  checkFineType(errs, v, path);
  if (!Array.isArray(v.items)) {
    errs.add(`${path}.items`, `Expected an array of up to 3 items, got ${describe(v.items)}.`);
    return;
  }
  if (v.items.length > 3) errs.add(`${path}.items`, `Expected at most 3 items, got ${v.items.length}.`);
  v.items.forEach((item, i) => {
    const p = `${path}.items[${i}]`;
    if (!isObject(item)) {
      errs.add(p, `Expected an object, got ${describe(item)}.`);
      return;
    }
    checkDate(errs, item.date, `${p}.date`);
    const cents = amountCents(errs, item.amount, `${p}.amount`);
    if (cents !== undefined && cents <= 0) errs.add(`${p}.amount`, `Expected more than 0, got ${item.amount}.`);
  });
}

function pickObject(v: unknown): Json | undefined {
  return isObject(v) ? v : undefined;
}

/** The body as an object, or a validation problem. */
function bodyObject(request: FastifyRequest): Json {
  if (!isObject(request.body)) {
    throw httpErrors.validation({ $: [`Expected a JSON object body, got ${describe(request.body)}.`] });
  }
  return request.body;
}

function parseCreate(ctx: SandboxContext, request: FastifyRequest) {
  const body = bodyObject(request);
  const errs = new FieldErrors();
  const type = body.type as ChargeType;
  if (typeof body.type !== 'string' || !CHARGE_TYPES.includes(type)) {
    errs.add('$.type', `Expected one of ${CHARGE_TYPES.join(', ')}, got ${describe(body.type)}.`);
  }
  const correlationId = reqString(errs, body, 'correlationId', '$.correlationId', 100);
  if (correlationId !== undefined && !CORRELATION_ID_PATTERN.test(correlationId)) {
    errs.add('$.correlationId', 'Expected 1..100 letters, digits or . _ ~ : - (it is used in URL paths).');
  }
  errs.throwIfAny();
  const extras: ChargeExtras = {};

  if (isBankSlip(type)) {
    // Bank slip samples spell the amount with a capital A; accept both, not two different values.
    const amountKey = body.Amount !== undefined ? 'Amount' : 'amount';
    if (body.Amount !== undefined && body.amount !== undefined && body.Amount !== body.amount) {
      errs.add(
        '$.amount',
        `Expected Amount and amount to agree when both are sent, got ${body.Amount} and ${body.amount}.`,
      );
    }
    let cents: number | undefined;
    if (body[amountKey] === undefined || body[amountKey] === null)
      errs.add('$.Amount', 'The Amount field is required.');
    else {
      cents = amountCents(errs, body[amountKey], `$.${amountKey}`);
      if (cents !== undefined && (cents <= 0 || cents > MAX_BANK_SLIP_AMOUNT_CENTS)) {
        errs.add(`$.${amountKey}`, `Expected more than 0 and at most 99999999.99, got ${body[amountKey]}.`);
      }
    }
    let dueDate: string | undefined;
    if (body.dueDate === undefined || body.dueDate === null) errs.add('$.dueDate', 'The dueDate field is required.');
    else dueDate = checkDueDate(errs, ctx, body.dueDate, '$.dueDate');
    const ourNumber = optString(errs, body, 'ourNumber', '$.ourNumber', 11);
    if (ourNumber !== undefined) {
      if (type === 'BANKSLIP_PIX') {
        errs.add(
          '$.ourNumber',
          'A BANKSLIP_PIX charge is issued in wallet 112: the service assigns ourNumber; do not send it.',
        );
      } else if (!/^\d{1,11}$/.test(ourNumber)) {
        errs.add('$.ourNumber', `Expected 1 to 11 digits (express charge, wallet 121), got "${ourNumber}".`);
      }
    }
    const yourNumber = optString(errs, body, 'yourNumber', '$.yourNumber', 20);
    checkSlipPayer(errs, body.payer, '$.payer');
    const beneficiary = optObject(errs, body.finalBeneficiary, '$.finalBeneficiary');
    if (beneficiary !== undefined) {
      reqString(errs, beneficiary, 'name', '$.finalBeneficiary.name', 100);
      checkDocument(errs, beneficiary, '$.finalBeneficiary.document', true);
      checkAddress(errs, beneficiary.address, '$.finalBeneficiary.address', false);
    }
    checkDiscount(errs, body.discount, '$.discount');
    checkFine(errs, body.lateFine, '$.lateFine');
    checkFine(errs, body.latePayment, '$.latePayment');
    errs.throwIfAny();
    extras.payer = body.payer as Json;
    for (const k of ['finalBeneficiary', 'discount', 'lateFine', 'latePayment'] as const) {
      const v = pickObject(body[k]);
      if (v) extras[k] = v;
    }
    return {
      type,
      correlationId: correlationId!,
      amountCents: cents!,
      dueDate: dueDate!,
      ...(ourNumber !== undefined && type === 'BANKSLIP' ? { ourNumber } : {}),
      ...(yourNumber !== undefined ? { yourNumber } : {}),
      extras,
    };
  }

  // Pix charges: structure first (validation problem), then the Pix rules (their own shape).
  const amountValue = body.amount ?? body.Amount;
  let cents: number | undefined;
  if (amountValue !== undefined && amountValue !== null) cents = amountCents(errs, amountValue, '$.amount');
  const description = optString(errs, body, 'description', '$.description', 140);
  let additionalInfo: Array<{ key: string; value: string }> | undefined;
  if (body.additionalInfo !== undefined && body.additionalInfo !== null) {
    if (!Array.isArray(body.additionalInfo)) {
      errs.add('$.additionalInfo', `Expected an array of {key, value}, got ${describe(body.additionalInfo)}.`);
    } else {
      additionalInfo = [];
      body.additionalInfo.forEach((item, i) => {
        const p = `$.additionalInfo[${i}]`;
        if (!isObject(item)) {
          errs.add(p, `Expected an object, got ${describe(item)}.`);
          return;
        }
        const key = reqString(errs, item, 'key', `${p}.key`, 50);
        const value = optString(errs, item, 'value', `${p}.value`, 200);
        if (value === undefined && (item.value === undefined || item.value === null))
          errs.add(`${p}.value`, 'The value field is required.');
        if (key !== undefined && value !== undefined) additionalInfo!.push({ key, value });
      });
    }
  }
  let expiresIn: number | undefined;
  if (type === 'PIX_DYNAMIC' && body.expiresIn !== undefined && body.expiresIn !== null) {
    if (
      typeof body.expiresIn !== 'number' ||
      !Number.isInteger(body.expiresIn) ||
      body.expiresIn < 1 ||
      body.expiresIn > MAX_EXPIRES_IN_SECONDS
    ) {
      errs.add(
        '$.expiresIn',
        `Expected whole seconds from 1 to ${MAX_EXPIRES_IN_SECONDS}, got ${describe(body.expiresIn)}.`,
      );
    } else expiresIn = body.expiresIn;
  }
  checkPixPayer(errs, body.payer, '$.payer');
  errs.throwIfAny();

  const rules: string[] = [];
  if (cents === undefined || cents <= 0) rules.push('The amount must be greater than 0.');
  if (type === 'PIX_STATIC') {
    additionalInfo?.forEach((item, i) => {
      if (item.value.length > PIX_STATIC_ADDITIONAL_INFO_MAX) {
        rules.push(
          `additionalInfo[${i}].value must have at most ${PIX_STATIC_ADDITIONAL_INFO_MAX} characters for PIX_STATIC, got ${item.value.length}.`,
        );
      }
    });
  }
  if (rules.length > 0) throw httpErrors.pixRule(rules);

  if (description !== undefined) extras.description = description;
  if (additionalInfo !== undefined) extras.additionalInfo = additionalInfo;
  const payer = pickObject(body.payer);
  if (payer) extras.payer = payer;
  return {
    type,
    correlationId: correlationId!,
    amountCents: cents!,
    ...(expiresIn !== undefined ? { expiresIn } : {}),
    extras,
  };
}

function parsePatch(
  ctx: SandboxContext,
  request: FastifyRequest,
  current: ReturnType<typeof requireCharge>,
): ChargeUpdate {
  const body = bodyObject(request);
  const errs = new FieldErrors();
  if (!isBankSlip(current.type)) {
    throw httpErrors.validation({
      $: [`Only bank slip charges (BANKSLIP, BANKSLIP_PIX) can be updated; this charge is ${current.type}.`],
    });
  }
  const update: ChargeUpdate = {};
  const wallet = optString(errs, body, 'walletNumber', '$.walletNumber', 3);
  if (wallet !== undefined && wallet !== current.wallet) {
    errs.add(
      '$.walletNumber',
      `Expected the charge's wallet ${current.wallet} (a wallet cannot change), got "${wallet}".`,
    );
  }
  const yourNumber = optString(errs, body, 'yourNumber', '$.yourNumber', 20);
  if (yourNumber !== undefined) update.yourNumber = yourNumber;
  const amountKey = body.amount !== undefined ? 'amount' : 'Amount';
  if (body[amountKey] !== undefined && body[amountKey] !== null) {
    const cents = amountCents(errs, body[amountKey], `$.${amountKey}`);
    if (cents !== undefined && (cents <= 0 || cents > MAX_BANK_SLIP_AMOUNT_CENTS)) {
      errs.add(`$.${amountKey}`, `Expected more than 0 and at most 99999999.99, got ${body[amountKey]}.`);
    } else if (cents !== undefined) update.amountCents = cents;
  }
  if (body.dueDate !== undefined && body.dueDate !== null) {
    const d = checkDueDate(errs, ctx, body.dueDate, '$.dueDate');
    if (d !== undefined) update.dueDate = d;
  }
  // 2.4's payer is flat (zipCode, address, neighborhood, state, city next to name and document); it is merged
  // into the charge's payer of 2.1's shape (address.publicPlace <- address).
  const p = optObject(errs, body.payer, '$.payer');
  if (p !== undefined) {
    const name = optString(errs, p, 'name', '$.payer.name', 100);
    checkDocument(errs, p, '$.payer.document', false);
    checkZip(errs, p, 'zipCode', '$.payer.zipCode', false);
    const street = optString(errs, p, 'address', '$.payer.address', 100);
    const neighborhood = optString(errs, p, 'neighborhood', '$.payer.neighborhood', 60);
    checkState(errs, p, '$.payer.state', false);
    const city = optString(errs, p, 'city', '$.payer.city', 60);
    const payer: Json = structuredClone(current.extras.payer ?? {});
    const address: Json = isObject(payer.address) ? payer.address : {};
    if (name !== undefined) payer.name = name;
    if (typeof p.document === 'string') payer.document = p.document;
    if (typeof p.zipCode === 'string') address.zipCode = p.zipCode;
    if (street !== undefined) address.publicPlace = street;
    if (neighborhood !== undefined) address.neighborhood = neighborhood;
    if (typeof p.state === 'string') address.state = p.state;
    if (city !== undefined) address.city = city;
    payer.address = address;
    update.payer = payer;
  }
  checkDiscount(errs, body.discount, '$.discount');
  checkFine(errs, body.lateFine, '$.lateFine');
  checkFine(errs, body.latePayment, '$.latePayment');
  for (const k of ['discount', 'lateFine', 'latePayment'] as const) {
    const v = pickObject(body[k]);
    if (v) update[k] = v;
  }
  if (body.allowPartialPayment !== undefined && body.allowPartialPayment !== null) {
    if (typeof body.allowPartialPayment !== 'boolean') {
      errs.add('$.allowPartialPayment', `Expected true or false, got ${describe(body.allowPartialPayment)}.`);
    } else update.allowPartialPayment = body.allowPartialPayment;
  }
  errs.throwIfAny();
  if (Object.keys(update).length === 0 && wallet === undefined) {
    throw httpErrors.validation({
      $: [
        'Expected at least one of walletNumber, yourNumber, amount, dueDate, payer, discount, lateFine, latePayment, allowPartialPayment.',
      ],
    });
  }
  return update;
}

function parseListQuery(request: FastifyRequest): { startDate: string; endDate: string; page: number; limit: number } {
  const q = request.query as Record<string, string | undefined>;
  const errs = new FieldErrors();
  const date = (key: 'startDate' | 'endDate'): string | undefined => {
    const v = q[key];
    if (v === undefined || v === '') {
      errs.add(key, `The ${key} field is required.`);
      return undefined;
    }
    return checkDate(errs, v, key);
  };
  const startDate = date('startDate');
  const endDate = date('endDate');
  if (startDate && endDate) {
    if (endDate < startDate)
      errs.add('endDate', `Expected endDate on or after startDate (${startDate}), got ${endDate}.`);
    else if (endDate > oneYearAfter(startDate)) {
      errs.add(
        'endDate',
        `Expected a date range of at most 1 year (endDate on or before ${oneYearAfter(startDate)}), got ${endDate}.`,
      );
    }
  }
  const int = (key: 'page' | 'limit', dflt: number, min: number, max: number): number => {
    const v = q[key];
    if (v === undefined || v === '') return dflt;
    const n = Number(v);
    if (!/^\d+$/.test(v) || n < min || n > max) {
      errs.add(key, `Expected a whole number from ${min} to ${max}, got "${v}".`);
      return dflt;
    }
    return n;
  };
  const page = int('page', CHARGES_DEFAULT_PAGE, 1, 1_000_000);
  const limit = int('limit', CHARGES_DEFAULT_LIMIT, 1, MAX_CHARGES_PAGE_LIMIT);
  errs.throwIfAny();
  return { startDate: startDate!, endDate: endDate!, page, limit };
}

interface IdParams {
  correlation_id: string;
}

/** Registers every charges route of spec 4.1. */
export function registerChargeRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  app.post('/v1/charges', async (request, reply) => {
    const input = parseCreate(ctx, request);
    const charge = createCharge(ctx, { ...input, apiKeyId: request.sandboxAuth.keyId });
    return reply.code(200).send(chargeToWire(charge));
  });

  app.get('/v1/charges', async (request) => listCharges(ctx, parseListQuery(request)).map(chargeToWire));

  app.get<{ Params: IdParams }>('/v1/charges/:correlation_id', async (request) =>
    chargeToWire(requireCharge(ctx, request.params.correlation_id)),
  );

  app.patch<{ Params: IdParams }>('/v1/charges/:correlation_id', async (request, reply) => {
    const current = requireCharge(ctx, request.params.correlation_id);
    const update = parsePatch(ctx, request, current);
    const charge = updateCharge(ctx, current.correlationId, update);
    // Spec 2.4: the response is text/plain. The sandbox sends the updated record as JSON text.
    return reply
      .code(200)
      .type('text/plain; charset=utf-8')
      .send(JSON.stringify(chargeToWire(charge)));
  });

  app.post<{ Params: IdParams }>('/v1/charges/:correlation_id/void', async (request) =>
    chargeToWire(voidCharge(ctx, request.params.correlation_id)),
  );

  app.get<{ Params: IdParams }>('/v1/charges/:correlation_id/stream', async (request, reply) => {
    const charge = requireCharge(ctx, request.params.correlation_id);
    const pdf = await renderChargePdf(charge, ctx.options);
    return reply
      .code(200)
      .type('application/pdf')
      .header('content-disposition', `inline; filename="charge-${charge.correlationId}.pdf"`)
      .send(pdf);
  });

  // Staging only: simulate a payment. Optional body {amount, method}: amount defaults to what the slip charges today
  // (its amount plus interest and fine less discount; a Pix charge's amount);
  // method PIX or BANKSLIP (default: PIX for Pix charges, BANKSLIP for slips, BANKSLIP_PIX may take either).
  app.post<{ Params: IdParams }>('/v1/charges/:correlation_id/pay', async (request) => {
    const charge = requireCharge(ctx, request.params.correlation_id);
    const body = isObject(request.body) ? request.body : {};
    const errs = new FieldErrors();
    let cents: number | undefined;
    if (body.amount !== undefined && body.amount !== null) {
      cents = amountCents(errs, body.amount, '$.amount');
      if (cents !== undefined && cents <= 0) errs.add('$.amount', `Expected more than 0, got ${body.amount}.`);
    }
    let method: 'PIX' | 'BANKSLIP' = charge.type === 'BANKSLIP' || charge.type === 'BANKSLIP_PIX' ? 'BANKSLIP' : 'PIX';
    if (body.method !== undefined && body.method !== null) {
      const allowed = charge.type === 'BANKSLIP_PIX' ? ['PIX', 'BANKSLIP'] : [method];
      if (typeof body.method !== 'string' || !allowed.includes(body.method)) {
        errs.add(
          '$.method',
          `Expected ${allowed.join(' or ')} for a ${charge.type} charge, got ${describe(body.method)}.`,
        );
      } else method = body.method as 'PIX' | 'BANKSLIP';
    }
    errs.throwIfAny();
    // A slip is paid as its bill lookup would charge it today (discount, interest, fine: src/sandbox/bills.ts), and
    // the payment records how its amount breaks down; a Pix charge has no such rules.
    const calculation = isBankSlip(charge.type) ? chargeSlipCalculation(ctx, charge) : undefined;
    const { charge: paid } = markChargePaid(ctx, charge.correlationId, {
      amountCents: cents ?? calculation?.chargedCents ?? charge.amountCents,
      method,
      source: 'staging',
      ...(calculation
        ? {
            breakdown: {
              discountCents: calculation.discountCents,
              interestCents: calculation.interestCents,
              fineCents: calculation.fineCents,
            },
          }
        : {}),
    });
    return chargeToWire(paid);
  });

  app.put<{ Params: IdParams }>('/v1/charges/:correlation_id/expire', async (request) =>
    chargeToWire(expireCharge(ctx, request.params.correlation_id)),
  );
}
