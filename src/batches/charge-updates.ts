/**
 * Kind `charge-updates`: one row changes a charge's due date or other PATCH fields (spec 2.4, 4.1).
 *
 * Steps:
 * - `patch` (create, no IdempotencyKey: PATCH takes none). A PATCH is idempotent by nature: sending the same values
 *   twice leaves the charge in the same state. So after an unknown outcome `recover` simply sends it again.
 * - `confirm` (read): GET the charge, to report its status and, after a due date or amount change, its new bar code
 *   and digitable line (the due-date factor and the amount are part of them) and, for a slip with Pix, its Pix code.
 *
 * Natural key: correlationId + the changed values in canonical form (keys sorted, amounts in cents, dates
 * yyyy-mm-dd): the same change asked twice is one intent; a different change of the same charge is another. A change
 * asked again after another change of its charge is not a repeat: the bank holds the other (`changes`, rule 4 of
 * src/store/rows.ts), so it is sent again (20/12, then 27/12, then 20/12 again: three changes).
 */

import type { ChargePatchInput } from '../bank/client.js';
import { CORRELATION_ID_PATTERN } from '../formats/charges.js';
import { msg } from '../i18n/index.js';
import {
  CORRELATION_ID_FORMAT,
  chargeOutput,
  compact,
  DISCOUNT_COLUMNS,
  dueDateRange,
  readDiscount,
  readRule,
  ruleColumns,
  SLIP_AMOUNT,
} from './charges.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, canonicalJson, naturalKeyWithExplicit, recordParser } from './fields.js';
import type { BatchKind, ColumnSpec, StepContext, StepOutput } from './kind.js';

/** The wallets a bank slip is issued in (spec 1): a PATCH naming another is refused. */
const WALLETS = ['112', '121'] as const;
const SLIP_UPDATE_AMOUNT = { ...SLIP_AMOUNT, required: false };

export interface ChargeUpdateRow {
  correlationId: string;
  patch: ChargePatchInput;
  idempotencyKey?: string;
}

export const CHARGE_UPDATE_COLUMNS: readonly ColumnSpec[] = [
  column('correlationId', CORRELATION_ID_FORMAT, 'INV-2026-0001', { required: true }),
  column('dueDate', `${FORMATS.date}, from today to 10 years ahead`, '20/12/2026'),
  column('amount', `${FORMATS.amount}, at most 99.999.999,99`, '1.300,00'),
  column('yourNumber', 'text, at most 20 characters', 'NF-123-A'),
  column('walletNumber', "112 or 121: the charge's wallet (it cannot change)", '112'),
  column('payer.name', 'text, at most 100 characters', 'Maria da Silva'),
  column('payer.document', FORMATS.document, '123.456.789-09'),
  column('payer.zipCode', FORMATS.zipCode, '01310-100'),
  column('payer.address', 'text, at most 100 characters (street and number)', 'Avenida Paulista, 1000'),
  column('payer.neighborhood', 'text, at most 60 characters', 'Bela Vista'),
  column('payer.city', 'text, at most 60 characters', 'São Paulo'),
  column('payer.state', FORMATS.state, 'SP'),
  ...DISCOUNT_COLUMNS,
  ...ruleColumns('lateFine'),
  ...ruleColumns('latePayment'),
  column('allowPartialPayment', 'true or false', 'false'),
  IDEMPOTENCY_KEY_COLUMN,
];

export function parseChargeUpdate(r: CellReader): ChargeUpdateRow | undefined {
  const correlationId = r.pattern('correlationId', CORRELATION_ID_PATTERN, msg('EXPECT.correlationId'), {
    required: true,
  });
  const idempotencyKey = r.guid('idempotencyKey');
  const payer = compact({
    name: r.text('payer.name', { max: 100 }),
    document: r.document('payer.document'),
    zipCode: r.zipCode('payer.zipCode'),
    address: r.text('payer.address', { max: 100 }),
    neighborhood: r.text('payer.neighborhood', { max: 60 }),
    city: r.text('payer.city', { max: 60 }),
    state: r.state('payer.state'),
  });
  const patch: ChargePatchInput = compact({
    dueDate: r.date('dueDate', { range: dueDateRange() }),
    // Only bank slips can be updated (the bank refuses a Pix charge): the slip's limit applies.
    amountCents: r.amount('amount', SLIP_UPDATE_AMOUNT),
    yourNumber: r.text('yourNumber', { max: 20 }),
    walletNumber: r.enumOf('walletNumber', WALLETS),
    payer: Object.keys(payer).length > 0 ? payer : undefined,
    discount: readDiscount(r),
    lateFine: readRule(r, 'lateFine'),
    latePayment: readRule(r, 'latePayment'),
    allowPartialPayment: r.boolean('allowPartialPayment'),
  });
  const changes = Object.keys(r.record).filter((c) => c !== 'correlationId' && c !== 'idempotencyKey');
  if (changes.length === 0) {
    r.error(undefined, 'NOTHING_TO_CHANGE', 'NOTHING_TO_CHANGE');
  }
  if (correlationId === undefined) return undefined;
  const row: ChargeUpdateRow = { correlationId, patch };
  if (idempotencyKey !== undefined) row.idempotencyKey = idempotencyKey;
  return row;
}

async function sendPatch(ctx: StepContext<ChargeUpdateRow>): Promise<StepOutput> {
  const text = await ctx.client.charges.patch(ctx.row.correlationId, ctx.row.patch, ctx.request);
  return { patchResponse: text.slice(0, 200) };
}

export const chargeUpdatesKind: BatchKind<ChargeUpdateRow> = {
  name: 'charge-updates',
  group: 'charges',
  movesMoneyOut: false,
  columns: CHARGE_UPDATE_COLUMNS,
  parse: recordParser(parseChargeUpdate),
  // No `mustMatch`: the key holds the whole change (the charge and every changed value), so a row with an owned key
  // asks for the same change.
  naturalKey: (row) => naturalKeyWithExplicit(`${row.correlationId}|${canonicalJson(row.patch)}`, row.idempotencyKey),
  // Each row sets values of its charge: a change asked again after another change of it is sent again.
  changes: (row) => row.correlationId,
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  amountCents: (row) => row.patch.amountCents,
  steps: [
    {
      name: 'patch',
      effect: 'create',
      usesIdempotencyKey: false,
      run: sendPatch,
      // Same values twice = same state: resending is the recovery.
      recover: sendPatch,
    },
    {
      name: 'confirm',
      effect: 'read',
      usesIdempotencyKey: false,
      async run(ctx) {
        const charge = await ctx.client.charges.get(ctx.row.correlationId, ctx.request);
        const out = chargeOutput(charge);
        return {
          chargeStatus: out.chargeStatus ?? null,
          chargeDueDate: charge.dueDate ?? null,
          barCode: out.barCode ?? null,
          digitableLine: out.digitableLine ?? null,
          // A slip with Pix carries the amount in its Pix code too: after an amount change the first code asks the
          // payer for the old amount, so the new one is answered beside the new bar code.
          qrCode: out.qrCode ?? null,
        };
      },
    },
  ],
  resultColumns: ['chargeStatus', 'chargeDueDate', 'barCode', 'digitableLine', 'qrCode'],
  resultColumnForms: { chargeDueDate: 'date', barCode: 'identifier', digitableLine: 'digitableLine' },
};
