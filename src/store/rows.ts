/**
 * The row and step state machines. They decide whether money may move, so they are drawn here, before any code.
 *
 * ROW STATES
 *
 *   (ingest) ──valid, key free──────────────► pending ──policy: batch has invalid rows──► rejected
 *      │  ├──invalid cells─────────────────► rejected                (nothing was ever sent)
 *      │  ├──key owned, other content──────► rejected  (NATURAL_KEY_REUSED, an invalid row: rule 4)
 *      │  └──own idempotencyKey another's──► rejected  (IDEMPOTENCY_KEY_REUSED, an invalid row: rule 4)
 *      └────natural key owned by another row► duplicate  (same operation: names the owner's outcome, no money of its own; nothing sent)
 *
 *   pending ──intent of a step committed──► in_flight ──step done, more steps──► in_flight
 *      │                                      │  ├──last step done──────────────► succeeded
 *      │                                      │  ├──the bank said no────────────► failed
 *      │                                      │  ├──outcome unknown after budget► uncertain
 *      │                                      │  └──stopped between steps───────► pending   (parked; resumes)
 *      ├──a lookup said no───────────────────► failed
 *      └──could not be driven (a bug)────────► uncertain
 *
 *   pending | in_flight | uncertain ──the bank unreachable, certainly nothing sent──► waiting
 *   pending | in_flight | uncertain ──the bank refused remessa's credentials (401/403), nothing done──► waiting
 *   pending | in_flight ──still answered 429 after the step's 429 attempts, certainly nothing sent──► waiting
 *   waiting ──the bank is back: sent──► in_flight | succeeded | failed       waiting ──still unreachable──► waiting
 *   waiting ──a lookup said no──► failed     waiting ──gave up waiting (`run`'s limit) or stopped──► waiting (stays)
 *
 *   uncertain ──next run: recover / resend with the same key / go on──► in_flight | succeeded | failed | uncertain
 *   uncertain ──settled by a person (`remessa resolve`), recorded in `resolutions`──► succeeded | failed
 *
 *   Terminal: succeeded, failed, rejected, duplicate. `pending`, `in_flight`, `waiting` and `uncertain` rows are
 *   picked up by the next run of their batch (a crash leaves rows `in_flight`: they are treated as having an unknown
 *   outcome). `waiting` is for a row of which certainly nothing was sent while the bank cannot be reached (connection
 *   refused, DNS, TLS handshake: src/bank/errors.ts `isCertainlyNotSent`), or while the bank refuses remessa's
 *   credentials (a 401/403 is a refusal before any processing: `isCredentialsRefusal`; never `failed`); a row whose
 *   step has an unknown outcome never becomes `waiting` (it stays in flight, and `uncertain` if it stops so). A batch
 *   with a waiting row is not finished: its file is not answered until every row has an outcome (src/runner/engine.ts),
 *   but by `run` when the bank refuses the credentials: then it is answered with the rows `waiting`, and again once
 *   they are sent (src/store/intakes.ts).
 *
 * STEP STATES (one record per row and step; absent = never attempted)
 *
 *   (none) ──intent committed (durably)────► intent ──answer──► done | failed
 *                                              │  └──timeout / dropped connection / 5xx──► unknown
 *                                              └──429, or certainly nothing sent──► not_sent ──► intent (again)
 *                                                 (unless an earlier attempt is unknown: then ──► unknown, rule 6)
 *   unknown ──recover() found it──► done       unknown ──recover() says absent / keyed resend──► intent
 *   intent (left by a crash) is handled exactly like unknown, hence also intent ──► intent
 *   (none) | not_sent ──read step answered──► done | failed   (read steps have no effect: no intent needed)
 *   A step in `not_sent` is treated as never attempted.
 *
 * RULES THAT MUST ALWAYS HOLD
 * 1. The intent of a step with an effect (its row, step name and the row's idempotency key) is committed durably
 *    (SQLite synchronous=FULL, PostgreSQL synchronous_commit=on: ./store.ts) before its request leaves. A crash
 *    therefore never loses a request that may have left: on restart a step in `intent` is treated exactly like
 *    `unknown`.
 * 2. A step in `intent`/`unknown` is never simply sent again: a step that carries the IdempotencyKey is resent with the
 *    same key (the bank answers the first outcome); a step without one is first `recover`ed (looked up) and only
 *    re-sent when the lookup says it certainly did not happen; a step with neither (a money step above all) is never
 *    resent: the row stays `uncertain` for a person to check.
 * 3. A row leaves `succeeded`, `failed`, `rejected` or `duplicate` never. Any other move not drawn above is a bug and
 *    throws `IllegalTransitionError`.
 * 4. At most one row owns a natural key of a kind (the `natural_keys` table): the owner while it is pending, in flight,
 *    uncertain or succeeded. A failed or rejected owner gives the key up to the next row that brings it. A row that
 *    brings an owned key is the owner's `duplicate` only when it is the same operation: the fields its kind says define
 *    it beyond the key (`mustMatch` in src/batches/kind.ts: a charge's type, amount, due date and payer) are equal,
 *    as parsed (formatting aside). A key reused with other content (a Seu número put on another payer's charge, in
 *    this file or an earlier one) is another operation: the row is `rejected` (NATURAL_KEY_REUSED, saying the key's
 *    column, the owner's line and file, and what differs), counted as an invalid row (the batch's policy applies: an
 *    all-or-nothing file sends nothing), claims nothing, and is never answered with the owner's outcome. Kinds whose
 *    key holds every defining field (bill payments: bar code, amount, date) have no `mustMatch`. A row that takes the
 *    key over from a `failed` row of an earlier file is sent under an idempotency key of its own
 *    (`renewedIdempotencyKey`, src/store/keys.ts): the failed one certainly did nothing (rule 5), and a bank that
 *    keeps every answer of a key would replay its old refusal forever. It keeps the old key when the key is the
 *    row's own explicit one, or when a person settled the owner `failed` (rule 7: should they be wrong, the old key
 *    makes the bank replay what it did, never do it twice).
    A row's own explicit idempotency key (its `idempotencyKey` column) is one operation for good: the bank knows a key
    once a request carried it, and would refuse a second operation under it, or answer it with the first one's
    outcome (a bill shown paid that nobody paid). The row that first brings it holds it (its entry in
    `natural_keys`, `explicitKeyDigest`) whatever becomes of it, failed included, unless it is `rejected` (nothing
    was sent). A later row of another natural key bringing that key is `rejected` (IDEMPOTENCY_KEY_REUSED, an
    invalid row, in this file or an earlier one); the same row dropped again is its natural key's business.
 *    Changes of one thing (`BatchKind.changes`: charge-updates, of a charge): the owner answers a repeat only while
 *    it is the last row that claimed a key changing that thing (the thing's entry in `natural_keys`). After another
 *    change of it (20/12, then 27/12), the owner's outcome no longer says what the bank holds: the same change asked
 *    again (20/12) takes the key over and is sent, under a renewed key, and never answered `duplicate` with the old
 *    result. Even after a later change that failed: which change the thing then holds is not kept. Not with the
 *    row's own explicit key (the bank would replay the owner's answer to it), and rows stored before the thing's
 *    entry existed keep the old rule. The engine drives a file's changes of one thing one after the other, in line
 *    order (src/runner/engine.ts, `changing`), so that the bank applies them in the file's order (on a store shared
 *    by several daemons, among the rows each one holds).
 *    Undone operations (`BatchKind.undoneBy`: a claim, by its claim-cancellations row): an owner whose operation a row
 *    of the undoing kind owns the key of (the claim's id, from the owner's outputs; that row not failed or rejected)
 *    answers no repeat either: the same claim asked again is started anew, under a renewed key. A cancellation the
 *    bank refused undoes nothing: the claim stands, and a repeat is its duplicate.
 * 5. `failed` means certainly not done. After an attempt of a step whose outcome is unknown, a refusal of a later
 *    attempt (bill already PAID, endToEndId already used, claim already open, ...) may be the trace of that first
 *    attempt, so it never makes the row `failed` by itself. The row fails only on proof that the first attempt did
 *    nothing: the bank replays a refusal as the first answer to the key (`Idempotent-Replayed`, and the key was not
 *    refused after an unknown outcome before), or the step's evidence says so (`settleRefusal`, else its `recover`
 *    lookup: a bill still unpaid, no payment with the row's endToEndId, the charge not there). This holds even when a
 *    lookup since said "absent" and the step was sent again (a lookup may lag behind the bank's writes).
 *    Evidence of the row's own effect makes the step `done`; anything else leaves the row `uncertain` with the refusal
 *    and the evidence in its message, and its step `unknown` (code REFUSED_AFTER_UNKNOWN_OUTCOME).
 * 6. An attempt that certainly did not act (not sent, 429) never erases an earlier unknown outcome: the step stays
 *    `unknown` (`not_sent` only when no earlier attempt of it may have acted).
 * 7. A person settles a row only from `uncertain` (the engine could not learn its outcome): `remessa resolve` (src/runner/settle.ts) records who, when and why in `resolutions` in the same
 *    transaction as the move, and refuses a row in any other state (a succeeded row is never re-declared failed, nor
 *    the reverse). Settling as `succeeded` needs a request of the row that may have acted (a step in `intent` or
 *    `unknown`): a row left uncertain before any (its lookup got no answer; its batch waits for approval) is
 *    refused, since the bank certainly did not do it. Settling as `failed` gives the natural key up (rule 4): the
 *    person vouches that the bank did not act, so the same row in a later file is sent again. It must run while no
 *    other process drives the store (the
 *    data folder's lock, src/runner/lock.ts), so the engine never races it for the row. On a store shared by several
 *    daemons (rule 8) the row's lock orders the settlement and a daemon's next write of the row: a daemon that finds
 *    it settled can move it no more (rule 3), so its next step is refused before anything is sent.
 * 8. Held by another daemon (several daemons on one PostgreSQL store, ./leases.ts): a daemon drives only the rows it
 *    holds (`rows.holder`, claimed in pages with FOR UPDATE SKIP LOCKED under its lease). An intent is recorded only
 *    for a row this daemon holds while the database says its lease is live (else STORE_ROW_NOT_HELD /
 *    STORE_LEASE_LOST, nothing sent), and no row held by another daemon is moved by it. When a daemon's lease passes
 *    (it died, froze or lost the database), another daemon takes its rows over, and their steps in `intent` become
 *    `unknown` (code TAKEN_OVER_FROM_DEAD_DAEMON): exactly what a restart does with them (rule 1), then rule 2 decides
 *    (resend with the same key, recover, or the row stays `uncertain`). Nothing else of the row changes hands.
 * 9. A read step's answer (a bill's lookup) need not be a commit of its own: the engine writes it in the same
 *    transaction as the row's next write, which is the next step's intent when the row goes on (one commit a row
 *    fewer). It is written whatever that next write is: the row parked (held for approval, stopped), waiting, failed
 *    or uncertain (a store failure included), and at the latest when the row's drive ends, so that previews and result
 *    files show the read's outputs. Lost in a crash before that write, nothing is lost but a read: the row is still
 *    `pending` (or as it was) with the step absent, and the read is done again (read steps have no effect). Never
 *    deferred: the last step's answer (the row's success), and any effect step's answer.
 */
import { RemessaError } from '../errors.js';
import type { RowOutcome } from '../types.js';

export const ROW_STATES = [
  'pending',
  'in_flight',
  'succeeded',
  'failed',
  'rejected',
  'duplicate',
  'uncertain',
  'waiting',
] as const;
export type RowState = (typeof ROW_STATES)[number];

export const STEP_STATES = ['intent', 'done', 'failed', 'unknown', 'not_sent'] as const;
export type StepState = (typeof STEP_STATES)[number];

/** Row states that still have work: the next run of the batch picks them up. */
export const UNFINISHED_ROW_STATES: readonly RowState[] = ['pending', 'in_flight', 'waiting', 'uncertain'];
/** Row states that own their natural key (a later row with the same key is a duplicate). */
export const OWNING_ROW_STATES: readonly RowState[] = ['pending', 'in_flight', 'waiting', 'uncertain', 'succeeded'];

/** `null` is the row/step before it exists (insertion). */
const ROW_TRANSITIONS: ReadonlyMap<RowState | null, readonly RowState[]> = new Map<RowState | null, RowState[]>([
  [null, ['pending', 'rejected', 'duplicate']],
  ['pending', ['in_flight', 'failed', 'rejected', 'uncertain', 'waiting']],
  ['in_flight', ['in_flight', 'succeeded', 'failed', 'uncertain', 'pending', 'waiting']],
  ['waiting', ['in_flight', 'failed', 'uncertain', 'waiting']],
  ['uncertain', ['in_flight', 'succeeded', 'failed', 'uncertain', 'waiting']],
  ['succeeded', []],
  ['failed', []],
  ['rejected', []],
  ['duplicate', []],
]);

const STEP_TRANSITIONS: ReadonlyMap<StepState | null, readonly StepState[]> = new Map<StepState | null, StepState[]>([
  [null, ['intent', 'done', 'failed']],
  ['intent', ['intent', 'done', 'failed', 'unknown', 'not_sent']],
  ['unknown', ['intent', 'done', 'failed', 'unknown']],
  ['not_sent', ['intent', 'done', 'failed']],
  ['done', []],
  ['failed', []],
]);

/** A state change the machine does not draw: a bug in the caller, never a condition to handle. */
export class IllegalTransitionError extends RemessaError {
  readonly from: string | null;
  readonly to: string;

  constructor(what: string, from: string | null, to: string) {
    super('STORE_ILLEGAL_TRANSITION', `Illegal ${what} transition: ${from ?? '(new)'} -> ${to}`);
    this.from = from;
    this.to = to;
  }
}

export function canTransitionRow(from: RowState | null, to: RowState): boolean {
  return ROW_TRANSITIONS.get(from)?.includes(to) ?? false;
}

export function assertRowTransition(from: RowState | null, to: RowState, where = 'row'): void {
  if (!canTransitionRow(from, to)) throw new IllegalTransitionError(where, from, to);
}

export function canTransitionStep(from: StepState | null, to: StepState): boolean {
  return STEP_TRANSITIONS.get(from)?.includes(to) ?? false;
}

export function assertStepTransition(from: StepState | null, to: StepState, where = 'step'): void {
  if (!canTransitionStep(from, to)) throw new IllegalTransitionError(where, from, to);
}

/**
 * The `status` a row shows in a result file. A row still pending or in flight when a result is written (the run was
 * stopped) shows as `uncertain`: it is not finished and is picked up by the next run.
 */
export function rowOutcome(state: RowState): RowOutcome {
  switch (state) {
    case 'succeeded':
    case 'failed':
    case 'rejected':
    case 'duplicate':
    case 'uncertain':
    case 'waiting':
      return state;
    default:
      return 'uncertain';
  }
}
