/**
 * Key claim routes (spec 4.5, 2.11, 7): start, search, cancel, plus the sandbox admin routes that move a claim
 * through its statuses. The rules (statuses, who may cancel, claim type) live in src/sandbox/claims-rules.ts, whose
 * header draws the state machine.
 *
 * Errors use the claim shape `{ title, code, errors: string[] }` with Portuguese messages on every public route:
 * - 400 VALIDATION_ERROR: a body field is missing or wrong, or the claim id is not a GUID.
 * - 404 CLAIM_NOT_FOUND: no claim with that id for this API key.
 * - 409 CLAIM_CANCELLATION_IS_NOT_ALLOWED: status, side or reason forbids the cancel (the claim's state conflicts
 *   with the request; 422 is left to the idempotency layer, whose "same key, other body" answer it is).
 * - 409 CLAIM_ALREADY_OPEN: start for a key that already has an open claim (setting `claimRejectDuplicateOpen`).
 * The IdempotencyKey header is required on the three public routes (src/sandbox/idempotency.ts answers for it).
 *
 * Admin (sandbox only, under SANDBOX_ADMIN_PREFIX):
 * - `GET /__sandbox/claims/{id}` -> the claim's full view.
 * - `PATCH /__sandbox/claims/{id}` body `{ status?, participationFlowType?, type?, reason?, force? }` -> the full view.
 *   A status move must follow the diagram unless `force: true`; CANCELED through the admin route means the other
 *   participant cancelled (source = the side opposite to the sandbox's), reason `reason` or USER_REQUESTED.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ACCOUNT_TYPES,
  CANCELLATION_REASONS,
  type CancellationReason,
  CLAIM_KEY_TYPES,
  CLAIM_TYPES,
  type ClaimKeyType,
  type ClaimType,
  HOLDER_TYPES,
  type HolderType,
  PARTICIPATION_FLOW_TYPES,
  type ParticipationFlowType,
} from '../../formats/claims.js';
import { isGuid } from '../../formats/ids.js';
import { seedClaimFixtures } from '../claim-fixtures.js';
import {
  CLAIM_RESOLUTION_PERIOD_MS,
  type ClaimStatus,
  canMoveClaim,
  claimTypeFor,
  decideCancellation,
  donorParticipantFor,
  FINAL_CLAIM_STATUSES,
  OPEN_CLAIM_STATUSES,
  parseClaimStatus,
  parseEmailKey,
  parseHolderDocument,
  parsePhoneKey,
  spellClaimStatus,
} from '../claims-rules.js';
import { idempotencyFor } from '../idempotency.js';
import { SANDBOX_ADMIN_PREFIX, SANDBOX_PUBLIC_API_KEY } from '../options.js';
import { httpErrors, SandboxHttpError, validationProblem } from '../problems.js';
import type { SandboxContext } from '../server.js';

export const CLAIMS_PATH = '/indirect-pix/api/v1/dict/claims';

/** Titles of the claim error bodies (Portuguese, as the service's messages are). */
const TITLES = {
  VALIDATION_ERROR: 'Requisição inválida',
  CLAIM_NOT_FOUND: 'Reivindicação não encontrada',
  CLAIM_CANCELLATION_IS_NOT_ALLOWED: 'Cancelamento não permitido',
  CLAIM_ALREADY_OPEN: 'Reivindicação já existente',
} as const;
type ClaimErrorCode = keyof typeof TITLES;

/** HTTP status of each claim error code (the spec does not show them; docs/service-gaps.md). */
export const CLAIM_ERROR_STATUS: Readonly<Record<ClaimErrorCode, number>> = {
  VALIDATION_ERROR: 400,
  CLAIM_NOT_FOUND: 404,
  CLAIM_CANCELLATION_IS_NOT_ALLOWED: 409,
  CLAIM_ALREADY_OPEN: 409,
};

function claimError(code: ClaimErrorCode, errors: string[]): SandboxHttpError {
  return httpErrors.claim(CLAIM_ERROR_STATUS[code], TITLES[code], code, errors);
}

interface ClaimRow {
  id: string;
  owner: string;
  type: ClaimType;
  status: ClaimStatus;
  participation_flow_type: ParticipationFlowType;
  key: string;
  key_type: ClaimKeyType;
  account_number: string;
  account_branch: string;
  account_type: string;
  holder_document: string;
  holder_name: string;
  holder_type: HolderType;
  counterparty_name: string;
  counterparty_ispb: string;
  resolution_deadline: string;
  cancellation_reason: CancellationReason | null;
  cancellation_source: ParticipationFlowType | null;
  created_at: string;
  updated_at: string;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === undefined) return 'nada';
  return JSON.stringify(v)?.slice(0, 80) ?? String(v);
}

/** The request body as an object; any other body is refused at once with 400 VALIDATION_ERROR. */
function objectBody(body: unknown): Obj {
  if (!isObj(body)) throw claimError('VALIDATION_ERROR', ['O corpo da requisição deve ser um objeto JSON.']);
  return body;
}

/** The required participationFlowType (DONOR or CLAIMANT) of a search or cancel body. */
function flowTypeField(body: Obj, errors: string[]): ParticipationFlowType | undefined {
  return enumField(body, 'participationFlowType', 'participationFlowType', PARTICIPATION_FLOW_TYPES, errors, true);
}

/** Reads an enum field; pushes a Portuguese message when absent (if required) or not a member. */
function enumField<T extends string>(
  obj: Obj,
  field: string,
  path: string,
  values: readonly T[],
  errors: string[],
  required: boolean,
): T | undefined {
  const v = obj[field];
  if (v === undefined || v === null) {
    if (required) errors.push(`O campo ${path} é obrigatório; valores aceitos: ${values.join(', ')}.`);
    return undefined;
  }
  if (typeof v !== 'string' || !(values as readonly string[]).includes(v)) {
    errors.push(`O campo ${path} deve ser um de ${values.join(', ')}; recebido ${describe(v)}.`);
    return undefined;
  }
  return v as T;
}

/** Reads a string field matching `pattern`; `what` names the expected form in the message. */
function textField(
  obj: Obj,
  field: string,
  path: string,
  pattern: RegExp,
  what: string,
  errors: string[],
  required: boolean,
): string | undefined {
  const v = obj[field];
  if (v === undefined || v === null) {
    if (required) errors.push(`O campo ${path} é obrigatório (${what}).`);
    return undefined;
  }
  if (typeof v !== 'string' || !pattern.test(v)) {
    errors.push(`O campo ${path} deve ser ${what}; recebido ${describe(v)}.`);
    return undefined;
  }
  return v;
}

const ACCOUNT_NUMBER = /^\d{1,20}(-[\dXx])?$/;
const BRANCH = /^\d{1,5}(-[\dXx])?$/;
const ACCOUNT_NUMBER_TEXT = 'o número da conta, até 20 dígitos (com dígito verificador opcional após hífen)';
const BRANCH_TEXT = 'o número da agência, até 5 dígitos';

interface StartInput {
  keyType: ClaimKeyType;
  key: string;
  account: { number: string; branch: string; type: string };
  holder: { document: string; name: string; type: HolderType };
}

/** Validates a start body (spec 2.11); throws 400 VALIDATION_ERROR listing every problem found. */
function parseStart(raw: unknown): StartInput {
  const errors: string[] = [];
  const body = objectBody(raw);
  const keyType = enumField(body, 'type', 'type', CLAIM_KEY_TYPES, errors, true);
  const accountRaw = body.account;
  let number: string | undefined;
  let branch: string | undefined;
  let accountType: string | undefined;
  let holder: StartInput['holder'] | undefined;
  if (!isObj(accountRaw)) {
    errors.push(
      accountRaw === undefined || accountRaw === null
        ? 'O campo account é obrigatório (number, branch, type, holder).'
        : `O campo account deve ser um objeto; recebido ${describe(accountRaw)}.`,
    );
  } else {
    number = textField(accountRaw, 'number', 'account.number', ACCOUNT_NUMBER, ACCOUNT_NUMBER_TEXT, errors, true);
    branch = textField(accountRaw, 'branch', 'account.branch', BRANCH, BRANCH_TEXT, errors, true);
    accountType = enumField(accountRaw, 'type', 'account.type', ACCOUNT_TYPES, errors, true);
    if (accountRaw.createdAt !== undefined && accountRaw.createdAt !== null) {
      const c = accountRaw.createdAt;
      if (typeof c !== 'string' || Number.isNaN(Date.parse(c))) {
        errors.push(`O campo account.createdAt deve ser uma data e hora ISO 8601; recebido ${describe(c)}.`);
      }
    }
    const h = accountRaw.holder;
    if (!isObj(h)) {
      errors.push(
        h === undefined || h === null
          ? 'O campo account.holder é obrigatório (document, name, type).'
          : `O campo account.holder deve ser um objeto; recebido ${describe(h)}.`,
      );
    } else {
      const holderType = enumField(h, 'type', 'account.holder.type', HOLDER_TYPES, errors, true);
      const name = h.name;
      if (typeof name !== 'string' || name.trim() === '' || name.length > 140) {
        errors.push(
          `O campo account.holder.name é obrigatório (texto de 1 a 140 caracteres); recebido ${describe(name)}.`,
        );
      }
      const docRaw = h.document;
      let document: string | undefined;
      if (typeof docRaw !== 'string' || docRaw.trim() === '') {
        errors.push(`O campo account.holder.document é obrigatório (CPF ou CNPJ); recebido ${describe(docRaw)}.`);
      } else if (holderType) {
        const parsed = parseHolderDocument(docRaw, holderType);
        if ('problem' in parsed) errors.push(parsed.problem);
        else document = parsed.document;
      }
      if (holderType && document && typeof name === 'string') {
        holder = { document, name: name.trim(), type: holderType };
      }
    }
  }

  let key: string | undefined;
  const keyRaw = body.key;
  if (keyType === 'EMAIL' || keyType === 'PHONE') {
    if (keyRaw === undefined || keyRaw === null || keyRaw === '') {
      errors.push(`O campo key é obrigatório quando type é ${keyType}.`);
    } else if (typeof keyRaw !== 'string') {
      errors.push(`O campo key deve ser um texto; recebido ${describe(keyRaw)}.`);
    } else if (keyType === 'EMAIL') {
      key = parseEmailKey(keyRaw);
      if (!key)
        errors.push(`O campo key deve ser um e-mail válido de até 77 caracteres; recebido ${describe(keyRaw)}.`);
    } else {
      key = parsePhoneKey(keyRaw);
      if (!key) {
        errors.push(
          `O campo key deve ser um celular no formato +55DDNNNNNNNNN (ex.: +5511987654321); recebido ${describe(keyRaw)}.`,
        );
      }
    }
  } else if (keyType === 'DOCUMENT' && holder) {
    // The key of a DOCUMENT claim is the holder's own document; a key sent anyway must be that document.
    key = holder.document;
    if (keyRaw !== undefined && keyRaw !== null && keyRaw !== '') {
      const sent = typeof keyRaw === 'string' ? keyRaw.replace(/[.\-/\s]/g, '').toUpperCase() : undefined;
      if (sent !== holder.document) {
        errors.push(
          'Com type DOCUMENT a chave é o documento do titular (account.holder.document); o campo key recebido é outro.',
        );
      }
    }
  }

  if (errors.length > 0 || !keyType || !key || !number || !branch || !accountType || !holder) {
    throw claimError('VALIDATION_ERROR', errors.length > 0 ? errors : ['Requisição inválida.']);
  }
  return { keyType, key, account: { number, branch, type: accountType }, holder };
}

interface SearchInput {
  participationFlowType: ParticipationFlowType;
  status: ClaimStatus;
  account: { number?: string; branch?: string; type?: string };
  holder?: { document: string; type: HolderType };
}

function parseSearch(raw: unknown): SearchInput {
  const errors: string[] = [];
  const body = objectBody(raw);
  const flow = flowTypeField(body, errors);
  let status: ClaimStatus | undefined = 'AWAITING_RESOLUTION';
  if (body.status !== undefined && body.status !== null) {
    status = parseClaimStatus(body.status);
    if (!status) {
      errors.push(
        `O campo status deve ser um de PENDIG (ou PENDING), AWAITING_RESOLUTION, CONFIRMED, CANCELED, COMPLETED; recebido ${describe(body.status)}.`,
      );
    }
  }
  const account: SearchInput['account'] = {};
  let holder: SearchInput['holder'];
  const a = body.account;
  if (a !== undefined && a !== null) {
    if (!isObj(a)) {
      errors.push(`O campo account deve ser um objeto; recebido ${describe(a)}.`);
    } else {
      account.number = textField(a, 'number', 'account.number', ACCOUNT_NUMBER, ACCOUNT_NUMBER_TEXT, errors, false);
      account.branch = textField(a, 'branch', 'account.branch', BRANCH, BRANCH_TEXT, errors, false);
      account.type = enumField(a, 'type', 'account.type', ACCOUNT_TYPES, errors, false);
      const h = a.holder;
      if (h !== undefined && h !== null) {
        if (!isObj(h)) {
          errors.push(`O campo account.holder deve ser um objeto; recebido ${describe(h)}.`);
        } else {
          const holderType = enumField(h, 'type', 'account.holder.type', HOLDER_TYPES, errors, true);
          const docRaw = h.document;
          if (typeof docRaw !== 'string' || docRaw.trim() === '') {
            errors.push(
              `O campo account.holder.document é obrigatório quando account.holder é informado; recebido ${describe(docRaw)}.`,
            );
          } else if (holderType) {
            const parsed = parseHolderDocument(docRaw, holderType);
            if ('problem' in parsed) errors.push(parsed.problem);
            else holder = { document: parsed.document, type: holderType };
          }
        }
      }
    }
  }
  if (errors.length > 0 || !flow || !status) {
    throw claimError('VALIDATION_ERROR', errors.length > 0 ? errors : ['Requisição inválida.']);
  }
  return { participationFlowType: flow, status, account, holder };
}

function parseCancel(raw: unknown): { participationFlowType: ParticipationFlowType; reason: CancellationReason } {
  const errors: string[] = [];
  const body = objectBody(raw);
  const flow = flowTypeField(body, errors);
  const reason = enumField(body, 'reason', 'reason', CANCELLATION_REASONS, errors, true);
  if (errors.length > 0 || !flow || !reason) throw claimError('VALIDATION_ERROR', errors);
  return { participationFlowType: flow, reason };
}

function opposite(side: ParticipationFlowType): ParticipationFlowType {
  return side === 'DONOR' ? 'CLAIMANT' : 'DONOR';
}

function idempotencyKeyOf(request: FastifyRequest): string {
  const raw = request.headers.idempotencykey;
  return String((Array.isArray(raw) ? raw[0] : raw) ?? '').toLowerCase();
}

export function registerClaimRoutes(app: FastifyInstance, ctx: SandboxContext): void {
  const { db, clock, ledger, options } = ctx;
  if (options.claimFixtures)
    seedClaimFixtures(ctx, [...(options.allowPublicKey ? [SANDBOX_PUBLIC_API_KEY] : []), ...options.apiKeys]);
  const sandboxParticipant = { name: options.participantName, ispb: options.ispb };

  const byId = db.prepare('SELECT * FROM claims WHERE id = ?');
  const openForKey = db.prepare(
    `SELECT id FROM claims WHERE key = ? AND status IN (${OPEN_CLAIM_STATUSES.map(() => '?').join(', ')}) LIMIT 1`,
  );
  const lastCompletedForKey = db.prepare(
    `SELECT holder_document FROM claims WHERE key = ? AND status = 'COMPLETED' ORDER BY updated_at DESC, rowid DESC LIMIT 1`,
  );
  const insert = db.prepare(
    `INSERT INTO claims (id, owner, type, status, participation_flow_type, key, key_type, account_number,
       account_branch, account_type, holder_document, holder_name, holder_type, counterparty_name, counterparty_ispb,
       resolution_deadline, created_at, updated_at)
     VALUES (@id, @owner, @type, 'PENDIG', 'CLAIMANT', @key, @key_type, @account_number, @account_branch,
       @account_type, @holder_document, @holder_name, @holder_type, @counterparty_name, @counterparty_ispb,
       @resolution_deadline, @now, @now)`,
  );
  const cancelStmt = db.prepare(
    `UPDATE claims SET status = 'CANCELED', cancellation_reason = ?, cancellation_source = ?, updated_at = ?
     WHERE id = ? AND status NOT IN ('CANCELED', 'COMPLETED')`,
  );

  const spell = (s: ClaimStatus) => spellClaimStatus(s, options.claimPendingSpelling);

  /** Donor and claimant participants as seen from the sandbox's side of the claim. */
  const participants = (row: ClaimRow) => {
    const counterparty = { name: row.counterparty_name, ispb: row.counterparty_ispb };
    return row.participation_flow_type === 'CLAIMANT'
      ? { donor: counterparty, claimant: sandboxParticipant }
      : { donor: sandboxParticipant, claimant: counterparty };
  };

  /** Search result item (spec 2.11). */
  const searchItem = (row: ClaimRow) => {
    const p = participants(row);
    return {
      id: row.id,
      type: row.type,
      status: spell(row.status),
      participationFlowType: row.participation_flow_type,
      entry: { key: row.key, type: row.key_type },
      updatedAt: row.updated_at,
      resolutionDeadline: row.resolution_deadline,
      donorParticipant: p.donor,
      claimantAccount: {
        number: row.account_number,
        branch: row.account_branch,
        type: row.account_type,
        participant: p.claimant,
        holder: { name: row.holder_name, document: row.holder_document, type: row.holder_type },
      },
    };
  };

  /** Admin view: the search item plus creation time and cancellation. */
  const fullView = (row: ClaimRow) => ({
    ...searchItem(row),
    createdAt: row.created_at,
    cancellation:
      row.cancellation_reason && row.cancellation_source
        ? { reason: row.cancellation_reason, source: row.cancellation_source }
        : null,
  });

  const hooks = () => idempotencyFor(ctx).hooks();

  // --- start ---
  const startTx = db.transaction((owner: string, input: StartInput, idempotencyKey: string) => {
    if (options.claimRejectDuplicateOpen) {
      const open = openForKey.get(input.key, ...OPEN_CLAIM_STATUSES) as { id: string } | undefined;
      if (open) {
        throw claimError('CLAIM_ALREADY_OPEN', [
          `Já existe uma reivindicação em aberto (${open.id}) para a chave ${input.key}.`,
        ]);
      }
    }
    const current = lastCompletedForKey.get(input.key) as { holder_document: string } | undefined;
    const type = claimTypeFor(input.keyType, input.holder.document, current?.holder_document);
    const donor = donorParticipantFor(input.key);
    const now = clock.now();
    const row = {
      id: randomUUID(),
      owner,
      type,
      key: input.key,
      key_type: input.keyType,
      account_number: input.account.number,
      account_branch: input.account.branch,
      account_type: input.account.type,
      holder_document: input.holder.document,
      holder_name: input.holder.name,
      holder_type: input.holder.type,
      counterparty_name: donor.name,
      counterparty_ispb: donor.ispb,
      resolution_deadline: new Date(now.getTime() + CLAIM_RESOLUTION_PERIOD_MS).toISOString(),
      now: now.toISOString(),
    };
    insert.run(row);
    ledger.record('claim_created', idempotencyKey || row.id, row.id);
    return byId.get(row.id) as ClaimRow;
  });

  app.post(CLAIMS_PATH, { ...hooks() }, async (request) => {
    const input = parseStart(request.body);
    // The claim and the stored answer of its key commit together (src/sandbox/idempotency.ts).
    return db.transaction(() => {
      const row = startTx(request.sandboxAuth.keyId, input, idempotencyKeyOf(request));
      return idempotencyFor(ctx).commitAnswer(request, {
        id: row.id,
        status: spell(row.status),
        resolutionDeadline: row.resolution_deadline,
        donorParticipant: participants(row).donor,
      });
    })();
  });

  // --- search ---
  app.post(`${CLAIMS_PATH}/search`, { ...hooks() }, async (request) => {
    const input = parseSearch(request.body);
    const where = ['owner = ?', 'participation_flow_type = ?', 'status = ?'];
    const args: string[] = [request.sandboxAuth.keyId, input.participationFlowType, input.status];
    const filters: Array<[string, string | undefined]> = [
      ['account_number', input.account.number],
      ['account_branch', input.account.branch],
      ['account_type', input.account.type],
      ['holder_document', input.holder?.document],
      ['holder_type', input.holder?.type],
    ];
    for (const [column, value] of filters) {
      if (value === undefined) continue;
      where.push(`${column} = ?`);
      args.push(value);
    }
    const rows = db
      .prepare(`SELECT * FROM claims WHERE ${where.join(' AND ')} ORDER BY created_at, rowid`)
      .all(...args) as ClaimRow[];
    return rows.map(searchItem);
  });

  // --- cancel ---
  const cancelTx = db.transaction(
    (
      owner: string,
      claimId: string,
      input: { participationFlowType: ParticipationFlowType; reason: CancellationReason },
      idempotencyKey: string,
    ) => {
      const row = byId.get(claimId) as ClaimRow | undefined;
      if (!row || row.owner !== owner) {
        throw claimError('CLAIM_NOT_FOUND', [`Reivindicação ${claimId} não encontrada.`]);
      }
      const decision = decideCancellation(
        { status: row.status, type: row.type, participationFlowType: row.participation_flow_type },
        input,
        { cancellableFromPending: options.claimCancellableFromPending },
      );
      if (!decision.allowed) throw claimError('CLAIM_CANCELLATION_IS_NOT_ALLOWED', [decision.message]);
      cancelStmt.run(input.reason, input.participationFlowType, clock.nowIso(), row.id);
      ledger.record('claim_cancelled', idempotencyKey || row.id, row.id);
      return byId.get(row.id) as ClaimRow;
    },
  );

  app.post(`${CLAIMS_PATH}/:claimId/cancel`, { ...hooks() }, async (request) => {
    const { claimId } = request.params as { claimId: string };
    if (!isGuid(claimId)) {
      throw claimError('VALIDATION_ERROR', [
        `O identificador da reivindicação deve ser um GUID (ex.: 3f2b8c1e-9d4a-4f6b-8e2a-1c5d7e9f0a1b); recebido "${claimId.slice(0, 80)}".`,
      ]);
    }
    const input = parseCancel(request.body);
    // The cancellation and the stored answer of its key commit together (src/sandbox/idempotency.ts).
    return db.transaction(() => {
      const row = cancelTx(request.sandboxAuth.keyId, claimId.toLowerCase(), input, idempotencyKeyOf(request));
      return idempotencyFor(ctx).commitAnswer(request, {
        id: row.id,
        status: row.status,
        updatedAt: row.updated_at,
        resolutionDeadline: row.resolution_deadline,
        cancellation: { reason: row.cancellation_reason, source: row.cancellation_source },
      });
    })();
  });

  // --- admin ---
  const adminPath = `${SANDBOX_ADMIN_PREFIX}/claims/:claimId`;
  const adminRow = (request: FastifyRequest): ClaimRow => {
    const { claimId } = request.params as { claimId: string };
    const row = byId.get(claimId.toLowerCase()) as ClaimRow | undefined;
    if (!row) throw claimError('CLAIM_NOT_FOUND', [`Reivindicação ${claimId} não encontrada.`]);
    return row;
  };

  app.get(adminPath, async (request) => fullView(adminRow(request)));

  const adminMove = db.transaction((row: ClaimRow, body: Obj) => {
    const problems: Record<string, string[]> = {};
    const bad = (field: string, message: string) => {
      problems[`$.${field}`] = [message];
    };
    let status: ClaimStatus | undefined;
    if (body.status !== undefined) {
      status = parseClaimStatus(body.status);
      if (!status)
        bad(
          'status',
          `Expected one of PENDIG (or PENDING), AWAITING_RESOLUTION, CONFIRMED, CANCELED, COMPLETED, got ${describe(body.status)}.`,
        );
    }
    const flow = body.participationFlowType;
    if (flow !== undefined && !(PARTICIPATION_FLOW_TYPES as readonly unknown[]).includes(flow)) {
      bad('participationFlowType', `Expected DONOR or CLAIMANT, got ${describe(flow)}.`);
    }
    const type = body.type;
    if (type !== undefined && !(CLAIM_TYPES as readonly unknown[]).includes(type)) {
      bad('type', `Expected PORTABILITY or OWNERSHIP, got ${describe(type)}.`);
    }
    const reason = body.reason;
    if (reason !== undefined && !(CANCELLATION_REASONS as readonly unknown[]).includes(reason)) {
      bad('reason', `Expected USER_REQUESTED, ACCOUNT_CLOSURE or FRAUD, got ${describe(reason)}.`);
    }
    if (body.force !== undefined && typeof body.force !== 'boolean')
      bad('force', `Expected a boolean, got ${describe(body.force)}.`);
    if (Object.keys(problems).length > 0) throw new SandboxHttpError(400, validationProblem(problems));

    const force = body.force === true;
    const newFlow = (flow as ParticipationFlowType | undefined) ?? row.participation_flow_type;
    if (status !== undefined && status !== row.status && !force) {
      const allowed =
        status === 'CANCELED' ? !FINAL_CLAIM_STATUSES.includes(row.status) : canMoveClaim(row.status, status);
      if (!allowed) {
        throw httpErrors.problem(
          409,
          'Conflict',
          `A claim in ${row.status} cannot move to ${status}; send "force": true to set it anyway.`,
        );
      }
    }
    const now = clock.nowIso();
    const cancelling = status === 'CANCELED' && row.status !== 'CANCELED';
    db.prepare(
      `UPDATE claims SET status = ?, participation_flow_type = ?, type = ?, updated_at = ?,
         cancellation_reason = ?, cancellation_source = ? WHERE id = ?`,
    ).run(
      status ?? row.status,
      newFlow,
      (type as ClaimType | undefined) ?? row.type,
      now,
      cancelling ? ((reason as CancellationReason | undefined) ?? 'USER_REQUESTED') : row.cancellation_reason,
      cancelling ? opposite(newFlow) : row.cancellation_source,
      row.id,
    );
    if (cancelling) ledger.record('claim_cancelled', `admin:${row.id}`, row.id);
    return byId.get(row.id) as ClaimRow;
  });

  app.patch(adminPath, async (request) => {
    const row = adminRow(request);
    const body = request.body ?? {};
    if (!isObj(body)) throw new SandboxHttpError(400, validationProblem({ $: ['Expected a JSON object.'] }));
    return fullView(adminMove(row, body));
  });
}
