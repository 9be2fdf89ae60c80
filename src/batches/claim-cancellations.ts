/**
 * Kind `claim-cancellations`: one row cancels one Pix key claim (spec 2.11, 4.5, 7).
 *
 * Step: `cancel` (create, IdempotencyKey = the row's key). The bank's refusals (CLAIM_NOT_FOUND, VALIDATION_ERROR,
 * CLAIM_CANCELLATION_IS_NOT_ALLOWED) end the row `failed` with that code, through the client's ServiceError.
 * Natural key: the claim id (cancelling a claim twice is one intent, whatever the reason given).
 */
import {
  CANCELLATION_REASONS,
  type CancellationReason,
  PARTICIPATION_FLOW_TYPES,
  type ParticipationFlowType,
} from '../formats/claims.js';
import { column, FORMATS, IDEMPOTENCY_KEY_COLUMN } from './columns.js';
import { type CellReader, recordParser } from './fields.js';
import type { BatchKind, ColumnSpec } from './kind.js';

export interface ClaimCancellationRow {
  claimId: string;
  participationFlowType: ParticipationFlowType;
  reason: CancellationReason;
  idempotencyKey?: string;
}

export const CLAIM_CANCELLATION_COLUMNS: readonly ColumnSpec[] = [
  column('claimId', `${FORMATS.guid}: the id returned when the claim started`, '0b6f7c2e-3a1d-4e8f-9b5c-6d7e8f9a0b1c', {
    required: true,
  }),
  column('participationFlowType', 'DONOR or CLAIMANT (our side of the claim)', 'CLAIMANT', { required: true }),
  column('reason', 'USER_REQUESTED, ACCOUNT_CLOSURE or FRAUD', 'USER_REQUESTED', { required: true }),
  IDEMPOTENCY_KEY_COLUMN,
];

export function parseClaimCancellation(r: CellReader): ClaimCancellationRow | undefined {
  const claimId = r.guid('claimId', { required: true });
  const participationFlowType = r.enumOf('participationFlowType', PARTICIPATION_FLOW_TYPES, { required: true });
  const reason = r.enumOf('reason', CANCELLATION_REASONS, { required: true });
  const idempotencyKey = r.guid('idempotencyKey');
  if (!claimId || !participationFlowType || !reason) return undefined;
  const row: ClaimCancellationRow = { claimId, participationFlowType, reason };
  if (idempotencyKey !== undefined) row.idempotencyKey = idempotencyKey;
  return row;
}

export const claimCancellationsKind: BatchKind<ClaimCancellationRow> = {
  name: 'claim-cancellations',
  group: 'claims',
  movesMoneyOut: false,
  columns: CLAIM_CANCELLATION_COLUMNS,
  parse: recordParser(parseClaimCancellation),
  // No `mustMatch`: a cancellation is only its claim (the key); whatever reason or side a second row gives, the claim
  // is cancelled once, and its answer is the first row's.
  naturalKey: (row) => row.claimId,
  explicitIdempotencyKey: (row) => row.idempotencyKey,
  steps: [
    {
      name: 'cancel',
      effect: 'create',
      usesIdempotencyKey: true,
      async run(ctx) {
        const result = await ctx.client.claims.cancel(
          ctx.row.claimId,
          { participationFlowType: ctx.row.participationFlowType, reason: ctx.row.reason },
          ctx.idempotencyKey,
          ctx.request,
        );
        return {
          claimStatus: result.status,
          cancelledAt: result.updatedAt ?? null,
          cancellationSource: result.cancellation?.source ?? null,
        };
      },
    },
  ],
  resultColumns: ['claimStatus', 'cancelledAt', 'cancellationSource'],
  resultColumnForms: { cancelledAt: 'instant' },
};
