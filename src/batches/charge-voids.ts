/**
 * Kind `charge-voids`: one row voids (writes off) one charge (spec 4.1). Payments already made are not undone.
 *
 * Step: `void` (create, no IdempotencyKey: the operation takes none). After an unknown outcome `recover` GETs the
 * charge: a voided status means it happened; any other status means it did not, and the void is sent again (voiding
 * twice is harmless: the sandbox answers 200 unchanged). The status name after a void is not shown in the spec
 * (the sandbox says Voided); the statuses read as voided are VOIDED_STATUSES.
 *
 * Natural key: the correlationId. A sheet without a correlationId column may name each charge by the Seu número
 * (`yourNumber`) it was issued with from a charges sheet without correlationIds: the correlationId is derived from it
 * the same way (src/batches/supply.ts).
 */

import { NotFoundError } from '../bank/errors.js';
import { CORRELATION_ID_PATTERN } from '../formats/charges.js';
import { msg } from '../i18n/index.js';
import { CORRELATION_ID_FORMAT } from './charges.js';
import { column, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, recordParser } from './fields.js';
import type { BatchKind, ColumnSpec } from './kind.js';

/** Statuses (compared case-insensitively) that mean the charge is voided. */
export const VOIDED_STATUSES = ['voided', 'canceled', 'cancelled', 'writtenoff', 'written_off'];

export interface ChargeVoidRow {
  correlationId: string;
  idempotencyKey?: string;
}

export const CHARGE_VOID_COLUMNS: readonly ColumnSpec[] = [
  column('correlationId', CORRELATION_ID_FORMAT, 'INV-2026-0001', { required: true }),
  column(
    'yourNumber',
    'text, at most 20 characters: the Seu número of a charge issued from a sheet without a correlationId column; names the charge when the sheet has no correlationId column',
    'NF 3001/A',
  ),
  IDEMPOTENCY_KEY_COLUMN,
];

export function isVoidedStatus(status: string | undefined): boolean {
  return status !== undefined && VOIDED_STATUSES.includes(status.toLowerCase());
}

function parseChargeVoid(r: CellReader): ChargeVoidRow | undefined {
  const correlationId = r.pattern('correlationId', CORRELATION_ID_PATTERN, msg('EXPECT.correlationId'), {
    required: true,
  });
  // Only checked here: with a correlationId column it is informative (a charge issued with its own correlationId has a
  // Seu número unrelated to it); without one, the correlationId was derived from it before parsing.
  r.text('yourNumber', { max: 20 });
  const idempotencyKey = r.guid('idempotencyKey');
  if (correlationId === undefined) return undefined;
  return idempotencyKey === undefined ? { correlationId } : { correlationId, idempotencyKey };
}

/** The bank's `voidedAt` of a void answer or charge record (not shown in the spec; the sandbox sends it). */
function voidedAtOf(record: object): { voidedAt?: string } {
  const at = (record as Record<string, unknown>).voidedAt;
  return typeof at === 'string' && !Number.isNaN(Date.parse(at)) ? { voidedAt: at } : {};
}

export const chargeVoidsKind: BatchKind<ChargeVoidRow> = {
  name: 'charge-voids',
  group: 'charges',
  movesMoneyOut: false,
  columns: CHARGE_VOID_COLUMNS,
  parse: recordParser(parseChargeVoid),
  // No `mustMatch`: a void is only its charge (the key); the Seu número beside a correlationId is informative.
  naturalKey: (row) => row.correlationId,
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  steps: [
    {
      name: 'void',
      effect: 'create',
      usesIdempotencyKey: false,
      async run(ctx) {
        const result = await ctx.client.charges.void(ctx.row.correlationId, ctx.request);
        // The void body is not shown in the spec: ask the charge for its status when the body has none.
        const status = result.status ?? (await ctx.client.charges.get(ctx.row.correlationId, ctx.request)).status;
        // Kept for the retorno (not a result column): when the bank says the void happened, when it says so.
        return { chargeStatus: status ?? null, ...voidedAtOf(result) };
      },
      async recover(ctx) {
        try {
          const charge = await ctx.client.charges.get(ctx.row.correlationId, ctx.request);
          return isVoidedStatus(charge.status) ? { chargeStatus: charge.status, ...voidedAtOf(charge) } : undefined;
        } catch (err) {
          // Unknown charge: the void certainly did not happen; sending it again gives the bank's 404 as the outcome.
          if (err instanceof NotFoundError) return undefined;
          throw err;
        }
      },
    },
  ],
  resultColumns: ['chargeStatus'],
};
