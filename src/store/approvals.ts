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
 *   ready (approved) ──gate: within the limits the approver saw in the preview: RELEASE──► running
 *   ready (approved) ──gate: passes a limit its preview did not show (the day's other files let go since, or a day
 *            that began since)──► awaiting_approval (the decision voided: `holdAgain`; a new preview, decided again)
 *
 *   running ──no row pending or in flight──► done ──uncertain rows retried──► running
 *
 * RELEASE is one transaction: the batch becomes `running` and the amount of its unfinished rows is written in
 * `released_amounts` for its kind and its calendar day in America/Sao_Paulo. The per-day limit is the sum of that
 * table for the kind and day, read in the same transaction, which holds the write lock from its start (`immediate`:
 * SQLite BEGIN IMMEDIATE; PostgreSQL a lock on released_amounts), so two files released at once, by two
 * processes or across a restart, cannot both pass a limit that only one of them fits. An amount released counts for
 * the day whatever the rows' outcomes (a failed payment still used the allowance: the limit is on what was let go).
 *
 * RULES THAT MUST ALWAYS HOLD
 * 1. No effect step (create, money) of a batch that waits for approval ever starts: the statement that moves the row
 *    to `in_flight` for a step's intent (./store.ts recordIntent) does so only when `EFFECT_ALLOWED` holds for its
 *    batch, and otherwise nothing is written and `assertEffectAllowed` says why, in the same transaction. It refuses
 *    while the batch is `awaiting_approval` or its approval record is not `approved`. The engine holds effect steps of a
 *    held batch on its own (it parks the row before them); this rule is the last line, and it holds across crashes
 *    and restarts because it reads only what is committed.
 * 2. A batch leaves `awaiting_approval` only by a recorded decision (who, when, how) or, for a rejection, with every
 *    unfinished row rejected in the same transaction. A decision is taken once: a second one is refused. An approval
 *    covers the limits its preview showed (approving is their override), not one passed only since: the gate then
 *    voids it before anything is sent (`holdAgain`, who approved and when kept in the new reasons) and the batch
 *    waits for a decision on its new preview (`<name>.preview.v2.csv`, ...: the first one is kept as it was read).
 * 3. Who approves is who the OS says did it (`Decision.user`): the owner of the `.approved` marker, or the OS user
 *    running `remessa approve`; never only the name written (`--by`, the marker's line), which anyone able to write
 *    a marker can make up. A command started by `sudo -u remessa` is the sudo caller's (SUDO_UID; why it is trusted:
 *    src/runner/os-users.ts), checked as any approver, the account it ran as kept beside (`Decision.ranAs`). The
 *    name written is kept beside it (`decided_by`); the OS user in `decided_user`: the person's name, and through sudo
 *    `<person> via sudo as <account>` (`maria via sudo as remessa`: the first word is always the person). With
 *    `approval.forbidSameAsOwner` (default on) the approver's OS user must differ from the file's OS owner (its
 *    maker, `owner`), and both must be told apart: an owner or approver unknown (null: unreadable, a link) or
 *    INDISTINCT (`nobody`, the overflow uid every unmapped user reads as under a user namespace such as systemd's
 *    `PrivateUsers=true`, or NFS squashing) refuses the approval, saying why and what to do: fail closed, never
 *    let through. The name written may not be the owner's either. Neither the OS user nor the name written may be
 *    one of `approval.makers`. Names compare trimmed and case-insensitively (`uid N` for a uid without a name). A
 *    refused decision changes nothing. A rejection is never refused by these (it sends nothing). A marker's owner says
 *    who approved only where nobody else can give it its name (a rename keeps the owner): a marker whose folders let
 *    others than its writer, remessa's account and root rename it is refused before any of this
 *    (src/runner/approval.ts `markerFolderRefusal`).
 * 4. A decision is taken only once the preview is written (`preview_at`): a person approves what could be seen. A
 *    decision made before it (`Decision.madeAt`: an `.approved` marker's time, a marker dropped with its file or left
 *    from an earlier one) is refused, so the account that uploads files cannot approve what it uploads unseen.
 *
 * WHO DRIVES AN APPROVED BATCH (ready (approved) ──gate──► running above)
 * - A file taken from the inbox waits in the work area: its handling (the daemon's look for decisions, or the next
 *   `run` resuming the work area) drives it, writes its answer and archives it. A resume without the file leaves it.
 * - A file given to `run` from outside the inbox (its intake's `source` an absolute path outside it) has no such
 *   handling: its rows are all stored, so the resume drives it like any stored batch (the next plain `run`, `retry`,
 *   and the daemon within `approval.pollMs`), and its answer is written then. `approve` says "the daemon, or the next
 *   run" for both kinds of file.
 * - The same file given to `run` again (same path, same bytes) is the approved taking (`approvedIntakeOf`): driven if
 *   it was not yet, else its answer is reported. It never becomes a second batch of the same rows (which would be
 *   answered `duplicate` with nothing paid, and the approved one left behind); nothing is paid twice either way (the
 *   rows' natural keys and idempotency keys, ./rows.ts).
 *
 * The sentences a decision leaves (a refusal, the rejected rows' message in the answer) are in the decider's locale,
 * given in the Decision (the command's or the daemon's `locale`); the store never guesses one (default pt-BR).
 */
import { brasiliaDay } from '../formats/brasilia-time.js';
import { DEFAULT_LOCALE, instant, type Locale, t } from '../i18n/index.js';
import type { Cents, KindName } from '../types.js';
import { StoreError } from './db.js';
import { shortBatchId } from './intakes.js';
import { UNFINISHED_ROW_STATES } from './rows.js';
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
  /** The name the person wrote (`--by`, the marker's line). */
  decidedBy: string | null;
  /** The OS user who decided (rule 3): the marker's owner, or who ran the command. */
  decidedUser: string | null;
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
  beforePreview: 'APPROVAL_BEFORE_PREVIEW',
  /** An `.approved` marker without a name (src/runner/approval.ts): refused, nothing decided. */
  markerEmpty: 'APPROVAL_MARKER_EMPTY',
  /** An `.approved` marker whose name fits several files that wait (src/runner/approval.ts): refused. */
  markerAmbiguous: 'APPROVAL_MARKER_AMBIGUOUS',
  /** An `.approved` marker that is a link (src/runner/approval.ts): refused unread, its owner says nothing. */
  markerLink: 'APPROVAL_MARKER_LINK',
  /**
   * An `.approved` marker in a folder where others than its writer can rename files (src/runner/approval.ts): refused,
   * its owner does not say it was written for this file.
   */
  markerFolder: 'APPROVAL_MARKER_FOLDER',
  /** An approval voided at release: the batch would pass a limit its preview did not show (rule 2). */
  previewStale: 'APPROVAL_PREVIEW_STALE',
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
  decided_user: string | null;
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
    decidedUser: r.decided_user ?? null,
    decidedAt: r.decided_at,
    decidedVia: r.decided_via,
    note: r.note,
  };
}

export async function getApproval(store: Store, batchId: string): Promise<ApprovalRecord | undefined> {
  const r = await store.sql.get<ApprovalSql>('SELECT * FROM approvals WHERE batch_id = ?', [batchId]);
  return r && toApproval(r);
}

/** Every batch waiting for a decision, oldest first. */
export async function awaitingApprovals(
  store: Store,
): Promise<Array<{ batch: BatchRecord; approval: ApprovalRecord }>> {
  const rows = await store.sql.all<{ batch_id: string }>(
    `SELECT batch_id FROM approvals WHERE state = 'awaiting' ORDER BY held_at, batch_id`,
  );
  const out: Array<{ batch: BatchRecord; approval: ApprovalRecord }> = [];
  for (const r of rows) {
    const batch = await store.getBatch(r.batch_id);
    const approval = await getApproval(store, r.batch_id);
    if (batch && approval) out.push({ batch, approval });
  }
  return out;
}

/**
 * Batches approved and not run yet (`ready` with an approved decision), each with where its file was taken from (the
 * intake's `source`): whoever drives them (src/runner/approval.ts `resumeGate`) tells an inbox file from a file given
 * to `run` from elsewhere by it.
 */
export async function approvedNotRun(
  store: Store,
): Promise<Array<{ batchId: string; intakeId: string; source: string }>> {
  return store.sql.all<{ batchId: string; intakeId: string; source: string }>(
    `SELECT b.id AS "batchId", i.id AS "intakeId", i.source AS source FROM approvals a JOIN batches b ON b.id = a.batch_id
       JOIN intakes i ON i.batch_id = b.id
     WHERE a.state = 'approved' AND b.status = 'ready'
     ORDER BY i.taken_at, i.id`,
  );
}

/** A taking held for approval (decided or not), with where its file was dropped and where it is answered. */
export interface HeldTaking {
  batchId: string;
  state: ApprovalState;
  decidedBy: string | null;
  decidedAt: string | null;
  fileName: string;
  /** Path as dropped (relative to the inbox), or the absolute path given to `run`. */
  source: string;
  /** Outbox folder of its answers. */
  folder: string;
  answerName: string;
}

/**
 * The takings held for approval of files named `name` or `<name>.<extension>` (which a `<name>.approved` marker's
 * name fits), newest first; the caller compares names exactly (LIKE ignores case in SQLite).
 */
export function heldTakingsNamed(store: Store, name: string): Promise<HeldTaking[]> {
  const like = `${name.replace(/[\\%_]/g, (c) => `\\${c}`)}.%`;
  return store.sql.all<HeldTaking>(
    `SELECT a.batch_id AS "batchId", a.state AS state, a.decided_by AS "decidedBy", a.decided_at AS "decidedAt",
       i.file_name AS "fileName", i.source AS source, i.folder AS folder, i.answer_name AS "answerName"
     FROM approvals a JOIN intakes i ON i.batch_id = a.batch_id
     WHERE i.file_name = ? OR i.file_name LIKE ? ESCAPE '\\'
     ORDER BY i.taken_at DESC, i.id DESC`,
    [name, like],
  );
}

/**
 * Sum of the amounts of the batch's rows that may still be sent: every unfinished state (./rows.ts), `waiting`
 * among them (a row left waiting for an unreachable bank is sent as soon as it is back: it is let go like the others).
 */
export async function unfinishedAmount(store: Store, batchId: string): Promise<Cents> {
  const r = await store.sql.get<{ total: number }>(
    `SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) AS total FROM rows
     WHERE batch_no = ? AND state IN (${UNFINISHED_ROW_STATES.map((st) => `'${st}'`).join(', ')})`,
    [await store.batchNo(batchId)],
  );
  return r!.total;
}

/** Amount released for `kind` on `day` (America/Sao_Paulo), across every batch. */
export async function releasedOnDay(store: Store, kind: KindName, day: string): Promise<Cents> {
  const r = await store.sql.get<{ total: number }>(
    'SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) AS total FROM released_amounts WHERE kind = ? AND day = ?',
    [kind, day],
  );
  return r!.total;
}

/** Whether the batch was released (its amount counted, effect steps allowed). */
export async function isReleased(store: Store, batchId: string): Promise<boolean> {
  return (
    (await store.sql.get('SELECT 1 AS released FROM released_amounts WHERE batch_id = ?', [batchId])) !== undefined
  );
}

/**
 * Runs `fn` in a transaction that holds the write lock from its start, so no read-then-write race between processes:
 * on SQLite every transaction of the driver begins IMMEDIATE; on PostgreSQL the table of released amounts is locked
 * first (EXCLUSIVE: reads of others go on, a second release waits), so two releases read the day's sum one after the
 * other. fn awaits only the view it is given.
 */
export function immediate<T>(store: Store, fn: (s: Store) => Promise<T>): Promise<T> {
  return store.transaction(async (s) => {
    if (s.driver.dialect === 'postgres') await s.sql.run('LOCK TABLE released_amounts IN EXCLUSIVE MODE');
    return fn(s);
  });
}

/** ready -> awaiting_approval, with the reasons and the file's owner. */
export async function holdBatch(
  store: Store,
  batchId: string,
  hold: { reasons: ApprovalReason[]; owner: string | null; amountCents: Cents; now: Date },
): Promise<void> {
  const { changes } = await store.sql.run(
    `UPDATE batches SET status = 'awaiting_approval' WHERE id = ? AND status = 'ready'`,
    [batchId],
  );
  if (changes === 0) throw new StoreError('STORE_BATCH_NOT_READY', `Batch ${batchId} is not ready: it cannot be held`);
  await store.sql.run(
    `INSERT INTO approvals (batch_id, state, reasons, owner, amount_cents, held_at)
     VALUES (?, 'awaiting', ?, ?, ?, ?)`,
    [batchId, JSON.stringify(hold.reasons), hold.owner, hold.amountCents, hold.now.toISOString()],
  );
}

/**
 * RELEASE: ready -> running, and the amount of the unfinished rows counted for the kind and day. Once per batch (a
 * batch released before, then stopped and resumed, is not counted twice).
 */
export async function releaseBatch(store: Store, batch: BatchRecord, now: Date): Promise<void> {
  if (!(await isReleased(store, batch.id))) {
    await store.sql.run(
      `INSERT INTO released_amounts (batch_id, kind, day, amount_cents, released_at) VALUES (?, ?, ?, ?, ?)`,
      [batch.id, batch.kind, brasiliaDay(now), await unfinishedAmount(store, batch.id), now.toISOString()],
    );
  }
  await store.sql.run(
    `UPDATE batches SET status = 'running', started_at = COALESCE(started_at, ?), finished_at = NULL
     WHERE id = ? AND status = 'ready'`,
    [now.toISOString(), batch.id],
  );
}

/**
 * Every unfinished row of a batch that was never released becomes `rejected` with `error`, and the batch is done.
 * Safe because nothing of an unreleased batch was sent (rule 1): its rows are pending, or uncertain after a read step
 * (a lookup) that could not be done, which moves through in_flight and pending as the row machine draws.
 */
export function rejectUnsentBatch(store: Store, batchId: string, error: RowError): Promise<void> {
  return store.transaction(async (s) => {
    if (await isReleased(s, batchId)) {
      throw new StoreError('STORE_BATCH_RELEASED', `Batch ${batchId} was let go already: its rows cannot be rejected`);
    }
    for (const row of await s.sql.all<{ line: number; state: 'in_flight' | 'uncertain' }>(
      `SELECT line, state FROM rows WHERE batch_no = ? AND state IN ('in_flight', 'uncertain') ORDER BY line`,
      [await s.batchNo(batchId)],
    )) {
      if (row.state === 'uncertain') await s.transitionRow(batchId, row.line, 'in_flight');
      await s.transitionRow(batchId, row.line, 'pending');
    }
    for (const row of await s.sql.all<{ line: number }>(
      `SELECT line FROM rows WHERE batch_no = ? AND state = 'pending' ORDER BY line`,
      [await s.batchNo(batchId)],
    )) {
      await s.transitionRow(batchId, row.line, 'rejected', { error, currentStep: null });
    }
    await s.sql.run(`UPDATE batches SET status = 'ready' WHERE id = ? AND status = 'awaiting_approval'`, [batchId]);
    await s.markBatchDone(batchId);
  });
}

/**
 * ready (approved) -> awaiting_approval: the approval is voided before anything of the batch was sent, because
 * releasing it now would pass a limit its preview did not show (rule 2). The reasons are replaced by `hold.reasons`
 * (which say who approved and when); the preview must be written again before a new decision (rule 4).
 */
export async function holdAgain(
  store: Store,
  batchId: string,
  hold: { reasons: ApprovalReason[]; amountCents: Cents; now: Date },
): Promise<void> {
  const { changes } = await store.sql.run(
    `UPDATE batches SET status = 'awaiting_approval' WHERE id = ? AND status = 'ready'`,
    [batchId],
  );
  if (changes === 0) throw new StoreError('STORE_BATCH_NOT_READY', `Batch ${batchId} is not ready: it cannot be held`);
  const voided = await store.sql.run(
    `UPDATE approvals SET state = 'awaiting', reasons = ?, amount_cents = ?, held_at = ?, preview_at = NULL,
       decided_by = NULL, decided_user = NULL, decided_at = NULL, decided_via = NULL, note = NULL
     WHERE batch_id = ? AND state = 'approved'`,
    [JSON.stringify(hold.reasons), hold.amountCents, hold.now.toISOString(), batchId],
  );
  if (voided.changes === 0) {
    throw new StoreError('STORE_BATCH_NOT_APPROVED', `Batch ${batchId} is not approved: there is no approval to void`);
  }
}

/** The preview was written: a decision may now be taken (rule 4). */
export async function markPreviewWritten(store: Store, batchId: string, now: Date): Promise<void> {
  await store.sql.run('UPDATE approvals SET preview_at = COALESCE(preview_at, ?) WHERE batch_id = ?', [
    now.toISOString(),
    batchId,
  ]);
}

export interface ApproverRules {
  /** Refuse an approver whose OS user is the file's OS owner, or either unknown or indistinct (rule 3). */
  forbidSameAsOwner: boolean;
  /** Names that prepare files and may never approve. */
  makers: readonly string[];
}

/**
 * `by`: the name the person wrote (`--by`, the marker's line), kept for the record. `user`: who the OS says decided
 * (rule 3), the one the rules check: the marker's owner, or the OS user running the command; null when it cannot be
 * read. `locale`: the language of the refusals and of the rejected rows' message (the decider's). @defaultValue pt-BR
 */
export type Decision = (
  | { approve: true; by: string; via: 'command' | 'marker'; locale?: Locale | undefined }
  | { approve: false; by: string; via: 'command' | 'marker'; note: string; locale?: Locale | undefined }
) & {
  user: string | null;
  /** The account a command ran as when started by sudo as another one (`user` is then the caller of sudo). */
  ranAs?: string | undefined;
  /** When the person decided, if not now: an `.approved` marker's modification time (rule 4). */
  madeAt?: Date;
  /** The marker's file name, to say which file's owner was read (via 'marker'). */
  marker?: string;
};

function sameName(a: string, b: string): boolean {
  return a.trim().toLowerCase() === b.trim().toLowerCase();
}

/**
 * OS user names that stand for many people at once (rule 3): the overflow uid (65534, `nobody`; `nfsnobody` on older
 * systems), which every uid not mapped into a user namespace reads as (systemd's `PrivateUsers=true`), and NFS squashes
 * to. `uid N` is how a uid without a name is written (src/runner/os-users.ts).
 */
const INDISTINCT_USERS = new Set(['nobody', 'nfsnobody', 'uid 65534', 'uid 4294967294']);

/** Whether an OS user name says who did something: not unknown (null, empty), not INDISTINCT_USERS. */
export function distinctUser(name: string | null | undefined): name is string {
  return name !== null && name !== undefined && name.trim() !== '' && !INDISTINCT_USERS.has(name.trim().toLowerCase());
}

/** `decided_user` (rule 3): the person; through sudo, the account beside (`maria via sudo as remessa`). */
export function decidedUserOf(decision: Pick<Decision, 'user' | 'ranAs'>): string | null {
  const user = decision.user?.trim() || null;
  return user !== null && decision.ranAs ? `${user} via sudo as ${decision.ranAs}` : user;
}

/** The decider's OS user as a message says it: through sudo, with the account it ran as (`APPROVAL.viaSudo`). */
export function saidUser(user: string, ranAs: string | undefined, locale: Locale): string {
  return ranAs ? t(locale, 'APPROVAL.viaSudo', { user, as: ranAs }) : user;
}

/** Why this decision may not approve this batch, or undefined when allowed (rule 3). */
export function approverRefusal(
  approval: ApprovalRecord,
  decision: Pick<Decision, 'by' | 'user' | 'via' | 'marker' | 'ranAs'>,
  rules: ApproverRules,
  locale: Locale = DEFAULT_LOCALE,
): string | undefined {
  const by = decision.by.trim();
  const user = decision.user?.trim() ?? null;
  const viaMarker = decision.via === 'marker';
  const said = (name: string) => saidUser(name, viaMarker ? undefined : decision.ranAs, locale);
  if (rules.forbidSameAsOwner) {
    if (!distinctUser(approval.owner)) {
      return t(locale, 'APPROVAL.ownerUnknown', {
        owner: approval.owner ?? t(locale, 'PREVIEW.ownerUnknown'),
      });
    }
    if (!distinctUser(user)) {
      return t(locale, viaMarker ? 'APPROVAL.approverUnknown.marker' : 'APPROVAL.approverUnknown.command', {
        marker: decision.marker ?? '.approved',
        user: said(user ?? t(locale, 'PREVIEW.ownerUnknown')),
      });
    }
    if (sameName(approval.owner, user)) {
      return t(locale, viaMarker ? 'APPROVAL.sameUser.marker' : 'APPROVAL.sameUser.command', {
        marker: decision.marker ?? '.approved',
        user: said(user),
        by,
      });
    }
    if (sameName(approval.owner, by)) return t(locale, 'APPROVAL.owner', { by });
  }
  for (const name of user === null ? [by] : [user, by]) {
    if (rules.makers.some((m) => sameName(m, name))) return t(locale, 'APPROVAL.maker', { by: name });
  }
  return undefined;
}

/**
 * Records a person's decision on a batch that waits (rules 2 to 4), in one IMMEDIATE transaction. Approve: the batch
 * is ready again, approved, and the next gate releases it. Reject: every unfinished row `rejected` with the note,
 * the batch done (answered with nothing sent). Throws ApprovalError, changing nothing, when not allowed.
 */
export function decideApproval(
  store: Store,
  batchId: string,
  decision: Decision,
  rules: ApproverRules,
  now: Date,
): Promise<ApprovalRecord> {
  const locale = decision.locale ?? DEFAULT_LOCALE;
  return immediate(store, async (s) => {
    const batch = await s.getBatch(batchId);
    const approval = await getApproval(s, batchId);
    const named = { batch: shortBatchId(batchId), file: batch?.fileName ?? '?' };
    if (!batch || !approval || batch.status !== 'awaiting_approval' || approval.state !== 'awaiting') {
      throw new ApprovalError(
        APPROVAL_CODES.notAwaiting,
        !approval
          ? t(locale, 'APPROVAL.notHeld', named)
          : approval.state === 'awaiting'
            ? t(locale, 'APPROVAL.notAwaiting', { ...named, status: batch?.status ?? 'gone' })
            : t(locale, 'APPROVAL.decidedAlready', {
                ...named,
                state: approval.state,
                by: approval.decidedBy ?? '?',
                at: approval.decidedAt ? instant(approval.decidedAt) : '?',
              }),
      );
    }
    const by = decision.by.trim();
    if (by === '') throw new ApprovalError(APPROVAL_CODES.refused, t(locale, 'APPROVAL.noName'));
    if (approval.previewAt === null)
      throw new ApprovalError(APPROVAL_CODES.noPreview, t(locale, 'APPROVAL.noPreview', named));
    if (decision.madeAt !== undefined && decision.madeAt.getTime() < Date.parse(approval.previewAt)) {
      throw new ApprovalError(
        APPROVAL_CODES.beforePreview,
        t(locale, 'APPROVAL.beforePreview', {
          ...named,
          made: decision.madeAt.toISOString(),
          preview: approval.previewAt,
        }),
      );
    }
    if (decision.approve) {
      const refusal = approverRefusal(approval, decision, rules, locale);
      if (refusal) throw new ApprovalError(APPROVAL_CODES.refused, refusal);
    }
    await s.sql.run(
      `UPDATE approvals SET state = ?, decided_by = ?, decided_user = ?, decided_at = ?, decided_via = ?, note = ?
       WHERE batch_id = ?`,
      [
        decision.approve ? 'approved' : 'rejected',
        by,
        decidedUserOf(decision),
        now.toISOString(),
        decision.via,
        decision.approve ? null : decision.note,
        batchId,
      ],
    );
    if (decision.approve) {
      await s.sql.run(`UPDATE batches SET status = 'ready' WHERE id = ?`, [batchId]);
    } else {
      await rejectUnsentBatch(s, batchId, {
        code: APPROVAL_CODES.rejected,
        message: t(locale, APPROVAL_CODES.rejected, {
          by,
          at: instant(now.toISOString()),
          note: decision.note || undefined,
        }),
      });
    }
    return (await getApproval(s, batchId))!;
  });
}

/** Rule 1's refusal, on a batch `b` joined with its approval record `a` (none: `a.state` NULL). */
const EFFECT_BLOCKED = `(b.status = 'awaiting_approval' OR (a.state IS NOT NULL AND a.state <> 'approved'))`;

/**
 * Rule 1 as a condition of a write's WHERE on the batch whose id is the SQL expression `batchId`: true when an effect
 * step of the batch may start (a batch that does not exist refuses nothing, as `assertEffectAllowed`). A write under
 * it that changed nothing asks `assertEffectAllowed` why.
 */
export function effectAllowed(batchNo: string): string {
  return `NOT EXISTS (SELECT 1 FROM batches b LEFT JOIN approvals a ON a.batch_id = b.id
  WHERE b.batch_no = ${batchNo} AND ${EFFECT_BLOCKED})`;
}

/** `effectAllowed` of the batch whose number (./store.ts `batchNo`) is the condition's one parameter. */
export const EFFECT_ALLOWED = effectAllowed('?');

/**
 * Rule 1: throws STORE_AWAITING_APPROVAL when an effect step of the batch may not start. Called inside the
 * transaction that commits the intent, when its write under `EFFECT_ALLOWED` changed nothing.
 */
export async function assertEffectAllowed(store: Store, batchId: string): Promise<void> {
  const r = await store.sql.get<{ status: string; approval: ApprovalState | null; blocked: number | string }>(
    `SELECT b.status AS status, a.state AS approval, CASE WHEN ${EFFECT_BLOCKED} THEN 1 ELSE 0 END AS blocked
     FROM batches b LEFT JOIN approvals a ON a.batch_id = b.id WHERE b.id = ?`,
    [batchId],
  );
  if (r && Number(r.blocked) === 1) {
    throw new StoreError(
      APPROVAL_CODES.awaiting,
      `Batch ${shortBatchId(batchId)} is not approved (${r.approval ?? r.status}): no request with an effect may start`,
    );
  }
}

/** The batches `ref` names (Store.findBatches: an id, a prefix or tag of one, a file name or a path ending in it). */
export function findBatches(store: Store, ref: string): Promise<BatchRecord[]> {
  return store.findBatches(ref);
}
