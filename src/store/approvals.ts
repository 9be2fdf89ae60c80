/**
 * Money controls in the store: which batches wait for a person's approval, who decided and when, and the amounts let
 * go per kind and day (for `limits.<kind>.perDay`). The policy (which files wait, which limits apply) lives in
 * src/runner/approval.ts; this file holds the states and the rules that must always hold.
 *
 * BATCH STATES (batches.status; the row and step machines are in ./rows.ts and are not changed by this)
 *
 *   ingesting ──every row stored, policy applied──► ready
 *   ingesting ──file broken further down (nothing sent)──► rejected
 *
 *   ready ──gate: approval on for the kind (or a file limit passed with approval on)──► awaiting_approval
 *   ready ──gate: nothing to approve, within limits: RELEASE──► running
 *   ready ──gate: over limits.<kind>.perFile / .perDay, approval off for the kind──► done
 *            (every unfinished row `rejected` with the limit in its message: nothing was sent)
 *
 *   awaiting_approval ──read steps (bill lookups) run; effect steps are held; preview written──► awaiting_approval
 *   awaiting_approval ──`remessa approve` / `<name>.approved` marker, by an allowed person──► ready (approved)
 *   awaiting_approval ──`remessa reject`──► done (every unfinished row `rejected` with the person's note)
 *   ready (approved) ──gate: RELEASE (limits not checked again: the approver saw them in the preview)──► running
 *
 *   running ──no row pending or in flight──► done ──uncertain rows retried──► running
 *
 * RELEASE is one transaction: the batch becomes `running` and the amount of its unfinished rows is written in
 * `released_amounts` for its kind and its calendar day in America/Sao_Paulo. The per-day limit is the sum of that
 * table for the kind and day, read in the same (IMMEDIATE) transaction, so two files released at once, by two
 * processes or across a restart, cannot both pass a limit that only one of them fits. An amount released counts for
 * the day whatever the rows' outcomes (a failed payment still used the allowance: the limit is on what was let go).
 *
 * RULES THAT MUST ALWAYS HOLD
 * 1. No effect step (create, money) of a batch that waits for approval ever starts: `assertEffectAllowed` is called
 *    by the store in the same transaction that commits a step's intent (./store.ts recordIntent), and refuses while
 *    the batch is `awaiting_approval` or its approval record is not `approved`. The engine holds effect steps of a
 *    held batch on its own (it parks the row before them); this rule is the last line, and it holds across crashes
 *    and restarts because it reads only what is committed.
 * 2. A batch leaves `awaiting_approval` only by a recorded decision (who, when, how) or, for a rejection, with every
 *    unfinished row rejected in the same transaction. A decision is taken once: a second one is refused.
 * 3. An approver may be required to differ from the file's owner (`approval.forbidSameAsOwner`) and from every
 *    configured maker (`approval.makers`); names compare trimmed and case-insensitively. A refused decision changes
 *    nothing.
 * 4. A decision is taken only once the preview is written (`preview_at`): a person approves what could be seen.
 */
import type { Cents, KindName } from '../types.js';
import { type SqliteDatabase, StoreError } from './db.js';
import type { BatchRecord, RowError, Store } from './store.js';

export type ApprovalState = 'awaiting' | 'approved' | 'rejected';

/** Why a batch waits (or was refused): a stable code and a message with the amounts. */
export interface ApprovalReason {
  code: string;
  message: string;
}

export interface ApprovalRecord {
  batchId: string;
  state: ApprovalState;
  reasons: ApprovalReason[];
  owner: string | null;
  amountCents: Cents;
  heldAt: string;
  previewAt: string | null;
  decidedBy: string | null;
  decidedAt: string | null;
  decidedVia: 'command' | 'marker' | null;
  note: string | null;
}

/** Codes of the money controls (reasons, row errors, refusals). */
export const APPROVAL_CODES = {
  required: 'APPROVAL_REQUIRED',
  perFile: 'LIMIT_PER_FILE',
  perDay: 'LIMIT_PER_DAY',
  rejected: 'APPROVAL_REJECTED',
  awaiting: 'STORE_AWAITING_APPROVAL',
  refused: 'APPROVAL_REFUSED',
  notAwaiting: 'APPROVAL_NOT_AWAITING',
  noPreview: 'APPROVAL_NO_PREVIEW',
} as const;

/** A decision that is not allowed (same person as the maker, not awaiting, no preview yet). Nothing was changed. */
export class ApprovalError extends StoreError {}

interface ApprovalSql {
  batch_id: string;
  state: ApprovalState;
  reasons: string;
  owner: string | null;
  amount_cents: number;
  held_at: string;
  preview_at: string | null;
  decided_by: string | null;
  decided_at: string | null;
  decided_via: 'command' | 'marker' | null;
  note: string | null;
}

function toApproval(r: ApprovalSql): ApprovalRecord {
  return {
    batchId: r.batch_id,
    state: r.state,
    reasons: JSON.parse(r.reasons) as ApprovalReason[],
    owner: r.owner,
    amountCents: r.amount_cents,
    heldAt: r.held_at,
    previewAt: r.preview_at,
    decidedBy: r.decided_by,
    decidedAt: r.decided_at,
    decidedVia: r.decided_via,
    note: r.note,
  };
}

export function getApproval(store: Store, batchId: string): ApprovalRecord | undefined {
  const r = store.db.prepare('SELECT * FROM approvals WHERE batch_id = ?').get(batchId) as ApprovalSql | undefined;
  return r && toApproval(r);
}

/** Every batch waiting for a decision, oldest first. */
export function awaitingApprovals(store: Store): Array<{ batch: BatchRecord; approval: ApprovalRecord }> {
  const rows = store.db
    .prepare(`SELECT batch_id FROM approvals WHERE state = 'awaiting' ORDER BY held_at, batch_id`)
    .all() as Array<{ batch_id: string }>;
  return rows.flatMap((r) => {
    const batch = store.getBatch(r.batch_id);
    const approval = getApproval(store, r.batch_id);
    return batch && approval ? [{ batch, approval }] : [];
  });
}

/** The calendar day (yyyy-mm-dd) of `at` in America/Sao_Paulo: the day of the per-day limits. */
export function saoPauloDay(at: Date): string {
  return new Intl.DateTimeFormat('en-CA', {
    timeZone: 'America/Sao_Paulo',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).format(at);
}

/** Sum of the amounts of the batch's rows that may still be sent (pending, in flight, uncertain). */
export function unfinishedAmount(store: Store, batchId: string): Cents {
  const r = store.db
    .prepare(
      `SELECT COALESCE(SUM(amount_cents), 0) AS total FROM rows
       WHERE batch_id = ? AND state IN ('pending', 'in_flight', 'uncertain')`,
    )
    .get(batchId) as { total: number };
  return r.total;
}

/** Amount released for `kind` on `day` (America/Sao_Paulo), across every batch. */
export function releasedOnDay(store: Store, kind: KindName, day: string): Cents {
  const r = store.db
    .prepare('SELECT COALESCE(SUM(amount_cents), 0) AS total FROM released_amounts WHERE kind = ? AND day = ?')
    .get(kind, day) as { total: number };
  return r.total;
}

/** Whether the batch was released (its amount counted, effect steps allowed). */
export function isReleased(store: Store, batchId: string): boolean {
  return store.db.prepare('SELECT 1 FROM released_amounts WHERE batch_id = ?').get(batchId) !== undefined;
}

/** Runs `fn` in an IMMEDIATE transaction (the write lock taken first: no read-then-upgrade race between processes). */
export function immediate<T>(store: Store, fn: () => T): T {
  return store.db.transaction(fn).immediate();
}

/** ready -> awaiting_approval, with the reasons and the file's owner. */
export function holdBatch(
  store: Store,
  batchId: string,
  hold: { reasons: ApprovalReason[]; owner: string | null; amountCents: Cents; now: Date },
): void {
  const changed = store.db
    .prepare(`UPDATE batches SET status = 'awaiting_approval' WHERE id = ? AND status = 'ready'`)
    .run(batchId).changes;
  if (changed === 0) throw new StoreError('STORE_BATCH_NOT_READY', `Batch ${batchId} is not ready: it cannot be held`);
  store.db
    .prepare(
      `INSERT INTO approvals (batch_id, state, reasons, owner, amount_cents, held_at)
       VALUES (?, 'awaiting', ?, ?, ?, ?)`,
    )
    .run(batchId, JSON.stringify(hold.reasons), hold.owner, hold.amountCents, hold.now.toISOString());
}

/**
 * RELEASE: ready -> running, and the amount of the unfinished rows counted for the kind and day. Once per batch (a
 * batch released before, then stopped and resumed, is not counted twice).
 */
export function releaseBatch(store: Store, batch: BatchRecord, now: Date): void {
  if (!isReleased(store, batch.id)) {
    store.db
      .prepare(`INSERT INTO released_amounts (batch_id, kind, day, amount_cents, released_at) VALUES (?, ?, ?, ?, ?)`)
      .run(batch.id, batch.kind, saoPauloDay(now), unfinishedAmount(store, batch.id), now.toISOString());
  }
  store.db
    .prepare(
      `UPDATE batches SET status = 'running', started_at = COALESCE(started_at, ?), finished_at = NULL
       WHERE id = ? AND status = 'ready'`,
    )
    .run(now.toISOString(), batch.id);
}

/**
 * Every unfinished row of a batch that was never released becomes `rejected` with `error`, and the batch is done.
 * Safe because nothing of an unreleased batch was sent (rule 1): its rows are pending, or uncertain after a read step
 * (a lookup) that could not be done, which moves through in_flight and pending as the row machine draws.
 */
export function rejectUnsentBatch(store: Store, batchId: string, error: RowError): void {
  if (isReleased(store, batchId)) {
    throw new StoreError('STORE_BATCH_RELEASED', `Batch ${batchId} was let go already: its rows cannot be rejected`);
  }
  for (const row of store.db
    .prepare(`SELECT line, state FROM rows WHERE batch_id = ? AND state IN ('in_flight', 'uncertain') ORDER BY line`)
    .all(batchId) as Array<{ line: number; state: 'in_flight' | 'uncertain' }>) {
    if (row.state === 'uncertain') store.transitionRow(batchId, row.line, 'in_flight');
    store.transitionRow(batchId, row.line, 'pending');
  }
  for (const row of store.db
    .prepare(`SELECT line FROM rows WHERE batch_id = ? AND state = 'pending' ORDER BY line`)
    .all(batchId) as Array<{ line: number }>) {
    store.transitionRow(batchId, row.line, 'rejected', { error, currentStep: null });
  }
  store.db.prepare(`UPDATE batches SET status = 'ready' WHERE id = ? AND status = 'awaiting_approval'`).run(batchId);
  store.markBatchDone(batchId);
}

/** The preview was written: a decision may now be taken (rule 4). */
export function markPreviewWritten(store: Store, batchId: string, now: Date): void {
  store.db
    .prepare('UPDATE approvals SET preview_at = COALESCE(preview_at, ?) WHERE batch_id = ?')
    .run(now.toISOString(), batchId);
}

export interface ApproverRules {
  /** Refuse an approver whose name is the file's owner's. */
  forbidSameAsOwner: boolean;
  /** Names that prepare files and may never approve. */
  makers: readonly string[];
}

export type Decision =
  | { approve: true; by: string; via: 'command' | 'marker' }
  | { approve: false; by: string; via: 'command' | 'marker'; note: string };

function sameName(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/** Why `by` may not approve this batch, or undefined when allowed (rule 3). */
export function approverRefusal(approval: ApprovalRecord, by: string, rules: ApproverRules): string | undefined {
  if (rules.forbidSameAsOwner && approval.owner !== null && sameName(approval.owner, by)) {
    return `${by} owns the file (its maker) and approval.forbidSameAsOwner is on: another person must approve it`;
  }
  if (rules.makers.some((m) => sameName(m, by))) {
    return `${by} is listed in approval.makers (prepares files): another person must approve it`;
  }
  return undefined;
}

/**
 * Records a person's decision on a batch that waits (rules 2 to 4), in one IMMEDIATE transaction. Approve: the batch
 * is ready again, approved, and the next gate releases it. Reject: every unfinished row `rejected` with the note,
 * the batch done (answered with nothing sent). Throws ApprovalError, changing nothing, when not allowed.
 */
export function decideApproval(store: Store, batchId: string, decision: Decision, rules: ApproverRules, now: Date) {
  return immediate(store, () => {
    const batch = store.getBatch(batchId);
    const approval = getApproval(store, batchId);
    if (!batch || !approval || batch.status !== 'awaiting_approval' || approval.state !== 'awaiting') {
      const what = approval
        ? approval.state === 'awaiting'
          ? `is ${batch?.status ?? 'gone'}`
          : `was ${approval.state} already by ${approval.decidedBy ?? '?'} at ${approval.decidedAt ?? '?'}`
        : 'does not wait for approval';
      throw new ApprovalError(APPROVAL_CODES.notAwaiting, `Batch ${batchId.slice(0, 12)} (${batch?.fileName}) ${what}`);
    }
    const by = decision.by.trim();
    if (by === '') throw new ApprovalError(APPROVAL_CODES.refused, 'Expected the name of the person who decides');
    if (approval.previewAt === null) {
      throw new ApprovalError(
        APPROVAL_CODES.noPreview,
        `Batch ${batchId.slice(0, 12)} (${batch.fileName}) has no preview yet (its bills are still being looked up): decide once the preview is in the outbox`,
      );
    }
    if (decision.approve) {
      const refusal = approverRefusal(approval, by, rules);
      if (refusal) throw new ApprovalError(APPROVAL_CODES.refused, refusal);
    }
    store.db
      .prepare(
        `UPDATE approvals SET state = ?, decided_by = ?, decided_at = ?, decided_via = ?, note = ? WHERE batch_id = ?`,
      )
      .run(
        decision.approve ? 'approved' : 'rejected',
        by,
        now.toISOString(),
        decision.via,
        decision.approve ? null : decision.note,
        batchId,
      );
    if (decision.approve) {
      store.db.prepare(`UPDATE batches SET status = 'ready' WHERE id = ?`).run(batchId);
    } else {
      rejectUnsentBatch(store, batchId, {
        code: APPROVAL_CODES.rejected,
        message: `Rejected by ${by} at ${now.toISOString()}${decision.note ? `: ${decision.note}` : ''}; nothing was sent`,
      });
    }
    return getApproval(store, batchId)!;
  });
}

/**
 * Rule 1: throws STORE_AWAITING_APPROVAL when an effect step of the batch may not start. Called inside the
 * transaction that commits the intent.
 */
export function assertEffectAllowed(db: SqliteDatabase, batchId: string): void {
  const r = db
    .prepare(
      `SELECT b.status AS status, a.state AS approval FROM batches b LEFT JOIN approvals a ON a.batch_id = b.id
       WHERE b.id = ?`,
    )
    .get(batchId) as { status: string; approval: ApprovalState | null } | undefined;
  if (r && (r.status === 'awaiting_approval' || (r.approval !== null && r.approval !== 'approved'))) {
    throw new StoreError(
      APPROVAL_CODES.awaiting,
      `Batch ${batchId.slice(0, 12)} is not approved (${r.approval ?? r.status}): no request with an effect may start`,
    );
  }
}

/** The batches `ref` names (Store.findBatches: an id, a prefix or tag of one, a file name or a path ending in it). */
export function findBatches(store: Store, ref: string): BatchRecord[] {
  return store.findBatches(ref);
}
