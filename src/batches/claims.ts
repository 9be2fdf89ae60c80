/**
 * Kind `claims`: one row starts one Pix key claim (portability or ownership) for an indirect Pix participant
 * (spec 2.11, 4.5).
 *
 * Step: `start` (create, IdempotencyKey = the row's key: a resend replays the first answer). A refusal of a resend
 * after an attempt of unknown outcome (CLAIM_ALREADY_OPEN: by our first attempt?) is settled by `settleRefusal`
 * (src/store/rows.ts rule 5): an open claim of the row's key for the row's account, searched, is the row's claim;
 * none found leaves the row `uncertain`.
 * Natural key: key type + key (for DOCUMENT the key is the holder's document): one open claim per key is the intent.
 * Once a claim-cancellations row cancels (or is cancelling) the claim, the same claim asked again is a new claim, not
 * its duplicate (`undoneBy`).
 * Keys are read in their DICT canonical form: e-mail lower-cased (at most 77 characters), phone as +55 + DDD + 9
 * digits (from any usual writing of it: `(11) 98765-4321`, `11987654321`), document unmasked; a NATURAL holder has
 * a CPF, a LEGAL holder a CNPJ.
 */
import { randomUUID } from 'node:crypto';
import type { ClaimStatus, StartClaimInput } from '../bank/client.js';
import {
  ACCOUNT_TYPES,
  type AccountType,
  CLAIM_KEY_TYPES,
  type ClaimKeyType,
  HOLDER_TYPES,
  type HolderType,
} from '../formats/claims.js';
import { DICT_PHONE_KEY, dictPhoneKey } from '../formats/pix.js';
import { msg } from '../i18n/index.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { CELL_ERROR_CODES, type CellReader, naturalKeyWithExplicit, recordParser, shown } from './fields.js';
import type { BatchKind, ColumnSpec } from './kind.js';
import { textField } from './same-operation.js';
import { bareDocument } from './validators.js';

export const EMAIL_KEY_MAX_LENGTH = 77;
/** Statuses of an open claim searched for as evidence (the spec spells the first PENDIG). */
const SEARCHED_OPEN_STATUSES: readonly ClaimStatus[] = ['PENDIG', 'AWAITING_RESOLUTION', 'CONFIRMED'];
const ACCOUNT_NUMBER = /^\d{1,20}(-[\dXx])?$/;
const BRANCH = /^\d{1,5}(-[\dXx])?$/;

export interface ClaimRow {
  input: StartClaimInput & { key: string };
  idempotencyKey?: string;
}

export const CLAIM_COLUMNS: readonly ColumnSpec[] = [
  column('type', 'DOCUMENT, EMAIL or PHONE (the kind of key claimed)', 'EMAIL', { required: true }),
  column(
    'key',
    `e-mail (at most ${EMAIL_KEY_MAX_LENGTH} characters) or mobile phone (+5511987654321, or as written: (11) 98765-4321); for DOCUMENT empty or the holder's document`,
    'maria@example.com',
    { requiredWhen: 'when type is EMAIL or PHONE' },
  ),
  column('account.number', 'account number, up to 20 digits, optional check digit after a hyphen', '123456-7', {
    required: true,
  }),
  column('account.branch', 'branch, up to 5 digits', '0001', { required: true }),
  column('account.type', 'CURRENT, PAYMENT, SAVING or SALARY', 'CURRENT', { required: true }),
  column('account.holder.document', `${FORMATS.document}; CPF for NATURAL, CNPJ for LEGAL`, '123.456.789-09', {
    required: true,
  }),
  column('account.holder.name', 'text, 1 to 140 characters', 'Maria da Silva', { required: true }),
  column('account.holder.type', 'NATURAL (person) or LEGAL (company)', 'NATURAL', { required: true }),
  IDEMPOTENCY_KEY_COLUMN,
];

export function parseClaim(r: CellReader): ClaimRow | undefined {
  const type = r.enumOf('type', CLAIM_KEY_TYPES, { required: true });
  const number = r.pattern('account.number', ACCOUNT_NUMBER, msg('EXPECT.accountNumber'), { required: true });
  const branch = r.pattern('account.branch', BRANCH, msg('EXPECT.branch'), { required: true });
  const accountType = r.enumOf('account.type', ACCOUNT_TYPES, { required: true });
  const holderType = r.enumOf('account.holder.type', HOLDER_TYPES, { required: true });
  const document = r.document('account.holder.document', {
    required: true,
    ...(holderType === 'NATURAL' ? { only: 'cpf' as const } : holderType === 'LEGAL' ? { only: 'cnpj' as const } : {}),
  });
  const name = r.text('account.holder.name', { required: true, max: 140 });
  const idempotencyKey = r.guid('idempotencyKey');
  let key: string | undefined;
  if (type === 'EMAIL') {
    const email = r.email('key', {
      required: true,
      when: msg('WHEN.typeIs', { type: 'EMAIL' }),
      max: EMAIL_KEY_MAX_LENGTH,
    });
    key = email?.toLowerCase();
  } else if (type === 'PHONE') {
    // As the sheet writes it ((11) 98765-4321), read into the DICT form; else refused as the DICT form's pattern.
    const raw = r.record.key;
    key =
      (raw ? dictPhoneKey(raw) : undefined) ??
      r.pattern('key', DICT_PHONE_KEY, msg('EXPECT.phoneKey'), {
        required: true,
        when: msg('WHEN.typeIs', { type: 'PHONE' }),
      });
  } else if (type === 'DOCUMENT' && document !== undefined) {
    if (r.has('key') && bareDocument(r.record.key!) !== document) {
      r.error('key', CELL_ERROR_CODES.conflict, 'CONFLICT.claimDocument', { document, got: shown(r.record.key!) });
    }
    key = document;
  }
  if (!type || !key || !number || !branch || !accountType || !holderType || !document || !name) return undefined;
  const input: ClaimRow['input'] = {
    type: type as ClaimKeyType,
    key,
    account: {
      number,
      branch,
      type: accountType as AccountType,
      holder: { document, name, type: holderType as HolderType },
    },
  };
  return idempotencyKey === undefined ? { input } : { input, idempotencyKey };
}

export const claimsKind: BatchKind<ClaimRow> = {
  name: 'claims',
  group: 'claims',
  movesMoneyOut: false,
  columns: CLAIM_COLUMNS,
  parse: recordParser(parseClaim),
  naturalKey: (row) => naturalKeyWithExplicit(`${row.input.type}|${row.input.key}`, row.idempotencyKey),
  // A key is claimed for one account: a row claiming an owned key for another account (branch, number or holder) is
  // another claim, refused (src/batches/same-operation.ts), never answered with the other account's claim.
  mustMatch: {
    keyColumns: ['key', 'account.holder.document'],
    fields: ({ input }) => ({
      'account.branch': textField(input.account?.branch),
      'account.number': textField(input.account?.number),
      'account.holder.document': textField(input.account?.holder?.document),
    }),
  },
  // A claim cancelled by a claim-cancellations row (its natural key is the claim's id) is no longer the open claim a
  // repeat would ask for: the same claim asked again after it is started anew.
  undoneBy: {
    kind: 'claim-cancellations',
    naturalKey: (outputs) => (typeof outputs.claimId === 'string' ? outputs.claimId.toLowerCase() : undefined),
  },
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  steps: [
    {
      name: 'start',
      effect: 'create',
      usesIdempotencyKey: true,
      async run(ctx) {
        const claim = await ctx.client.claims.start(ctx.row.input, ctx.idempotencyKey, ctx.request);
        return {
          claimId: claim.id,
          claimStatus: claim.status,
          resolutionDeadline: claim.resolutionDeadline ?? null,
          donorParticipant: claim.donorParticipant?.name ?? null,
        };
      },
      async settleRefusal(ctx) {
        // An open claim of this row's key (its natural key) for this row's account: the one our first attempt started.
        const { account, key } = ctx.row.input;
        for (const status of SEARCHED_OPEN_STATUSES) {
          const items = await ctx.client.claims.search(
            {
              participationFlowType: 'CLAIMANT',
              status,
              account: {
                number: account.number,
                branch: account.branch,
                type: account.type,
                holder: { document: account.holder.document, type: account.holder.type },
              },
            },
            // A search changes nothing: a fresh key, so the bank answers today's claims, not a replay.
            randomUUID(),
            ctx.request,
          );
          const mine = items.find((c) => c.entry?.key === key);
          if (mine) {
            return {
              kind: 'done',
              evidence: msg('EVIDENCE.claimOpen', { id: mine.id, status: mine.status, key }),
              output: {
                claimId: mine.id,
                claimStatus: mine.status,
                resolutionDeadline: mine.resolutionDeadline ?? null,
                donorParticipant: mine.donorParticipant?.name ?? null,
              },
            };
          }
        }
        return { kind: 'unclear', evidence: msg('EVIDENCE.claimNone', { key }) };
      },
    },
  ],
  resultColumns: ['claimId', 'claimStatus', 'resolutionDeadline', 'donorParticipant'],
  resultColumnForms: { claimId: 'identifier', resolutionDeadline: 'instant', donorParticipant: 'identifier' },
};
