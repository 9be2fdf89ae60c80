/**
 * Intakes: each taking of a file, and the answers written for it.
 *
 * Identity. A batch is one taking of a file (a file moved from the inbox into the work area, or given to `remessa
 * run`), not its content: `cobrancas.csv` exported every day, or the same bytes under another name, is each time its
 * own batch with its own answer. The intake id is the work area's folder id, `<UTC stamp of the take>-<8 hex>`, so
 * it is the same across a crash and a restart (the work folder outlives both); a new batch's id is its intake's id.
 * The content's SHA-256 is kept: only to tell a person that a file repeats an earlier one. Rows that repeat earlier
 * rows are found by their natural keys (src/store/rows.ts rule 4): a byte-identical copy gets every row `duplicate`,
 * nothing sent, in its own answer. One exception: a file given to `run` from outside the inbox whose batch a person
 * approved is, given again with the same bytes, that same taking (`approvedIntakeOf`; src/store/approvals.ts).
 *
 * Answer versions. `answer_version` counts the versions written: 1 is `<answer_name>.result.csv`, N > 1 is
 * `<answer_name>.result.vN.csv` (with its summary). No version is ever overwritten or removed: a person may have read
 * it. The answer of a `result` intake is stale when `batches.changes` (bumped in the same transaction as every row
 * change the result shows, src/store/store.ts) differs from `answered_changes`; a stale answer of a finished batch is
 * written again as the next version, unless its result would hold the very bytes of the current one (a retried row
 * that stays uncertain): then the answer is only marked current again.
 *
 *     (taken) --register--> unanswered --first answer--> answered(v1) --row changes--> stale --rewrite--> answered(vN)
 *
 * The first answer waits for the batch to finish (`done`), but one: `run` answers a file whose rows wait because the
 * bank refused remessa's credentials (src/runner/commands.ts), its rows `waiting`. Such a taking is still unfinished:
 * the same file given to `run` again is that taking (`unansweredIntakeOf`), and its next version is written once its
 * batch is done.
 *
 * What must hold across a crash at any instant: the stale mark is durable before anyone could read the new outcome
 * (same transaction as the row), and is cleared only after the new version's files are renamed into place; so every
 * start re-answers what is stale (src/runner/commands.ts). A writer records `writing_version`/`writing_changes` before
 * writing; a crash after the renames but before the mark leaves both files there, and the next writer adopts them
 * when nothing changed since (instead of writing the same answer again as yet another version).
 */
import type { Store } from './store.js';

export type AnswerType = 'result' | 'rejected';

export interface NewIntake {
  /** The taking's id: `<UTC stamp>-<8 hex>` (src/intake/work-area.ts). */
  id: string;
  /** Outbox folder of its answers: the kind, the unknown inbox folder, or `_unknown`. */
  folder: string;
  fileName: string;
  /** Path as dropped (relative to the inbox), or the absolute path given to `run`. */
  source: string;
  contentSha256: string;
  takenAt: string;
  answerName: string;
}

export interface IntakeRecord extends NewIntake {
  batchId: string | null;
  answerType: AnswerType | null;
  answerVersion: number;
  answeredChanges: number;
  answeredAt: string | null;
  /** SHA-256 of the current version's result file. */
  answerSha256: string | null;
  writingVersion: number | null;
  writingChanges: number | null;
}

interface IntakeSql {
  id: string;
  batch_id: string | null;
  folder: string;
  file_name: string;
  source: string;
  content_sha256: string;
  taken_at: string;
  answer_name: string;
  answer_type: AnswerType | null;
  answer_version: number;
  answered_changes: number;
  answered_at: string | null;
  answer_sha256: string | null;
  writing_version: number | null;
  writing_changes: number | null;
}

function toIntake(r: IntakeSql): IntakeRecord {
  return {
    id: r.id,
    batchId: r.batch_id,
    folder: r.folder,
    fileName: r.file_name,
    source: r.source,
    contentSha256: r.content_sha256,
    takenAt: r.taken_at,
    answerName: r.answer_name,
    answerType: r.answer_type,
    answerVersion: r.answer_version,
    answeredChanges: r.answered_changes,
    answeredAt: r.answered_at,
    answerSha256: r.answer_sha256,
    writingVersion: r.writing_version,
    writingChanges: r.writing_changes,
  };
}

/** Records the taking (once: a second call with the same id returns the first record unchanged). */
export function registerIntake(store: Store, intake: NewIntake): Promise<IntakeRecord> {
  return store.transaction(async (s) => {
    await s.sql.run(
      `INSERT INTO intakes (id, folder, file_name, source, content_sha256, taken_at, answer_name)
       VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      [
        intake.id,
        intake.folder,
        intake.fileName,
        intake.source,
        intake.contentSha256,
        intake.takenAt,
        intake.answerName,
      ],
    );
    return (await getIntake(s, intake.id))!;
  });
}

export async function getIntake(store: Store, id: string): Promise<IntakeRecord | undefined> {
  const r = await store.sql.get<IntakeSql>('SELECT * FROM intakes WHERE id = ?', [id]);
  return r && toIntake(r);
}

/** The intake whose rows are the batch's (batches from before migration 003 have one too). */
export async function intakeForBatch(store: Store, batchId: string): Promise<IntakeRecord | undefined> {
  const r = await store.sql.get<IntakeSql>(
    'SELECT * FROM intakes WHERE batch_id = ? ORDER BY taken_at DESC, id LIMIT 1',
    [batchId],
  );
  return r && toIntake(r);
}

/**
 * A batch id as a person is shown it (commands' output, errors, log lines): a taking id
 * (`20261128T044444Z-3dc83e68`, maybe `~2`) whole, since its first characters are only the time it was taken and
 * every file taken in the same minutes shares them; a legacy SHA-256 id (stored before migration 003) by its first 12.
 */
export function shortBatchId(id: string): string {
  return /^[0-9a-f]{64}$/.test(id) ? id.slice(0, 12) : id;
}

/**
 * The batch an intake's rows go to: its own id, except for a batch stored before migration 003 (id = the content's
 * SHA-256) that was still unfinished and never answered: the new intake of its file (the work area resumed after an
 * upgrade) takes it over, so its stored rows are sent, not answered as duplicates of themselves.
 */
export async function batchIdForIntake(store: Store, intake: IntakeRecord): Promise<string> {
  if (intake.batchId !== null) return intake.batchId;
  return store.transaction(async (s) => {
    let batchId = intake.id;
    const legacy = await s.sql.get<{ id: string }>(
      `SELECT b.id FROM batches b JOIN intakes i ON i.id = b.id AND i.batch_id = b.id
       WHERE b.id = ? AND b.status NOT IN ('done', 'rejected') AND i.answer_version = 0`,
      [intake.contentSha256],
    );
    if (legacy && intake.contentSha256 !== intake.id) {
      batchId = legacy.id;
      await s.sql.run('UPDATE intakes SET batch_id = NULL WHERE id = ?', [legacy.id]);
    } else {
      // A taking read again after its file changed (retakeIntake) left its first batch behind under its own id.
      for (let n = 2; (await s.getBatch(batchId)) !== undefined; n++) batchId = `${intake.id}~${n}`;
    }
    await s.sql.run('UPDATE intakes SET batch_id = ? WHERE id = ?', [batchId, intake.id]);
    return batchId;
  });
}

/**
 * The same taking read again after its file changed under it (its writer was still at work): the content it now has
 * gets a batch of its own. The first batch is left behind, never answered: it was given up before a row was sent, or
 * its rows already sent are known by their natural keys and answered as duplicates in the new batch. An answered
 * taking is never retaken.
 */
export function retakeIntake(store: Store, id: string, contentSha256: string): Promise<IntakeRecord> {
  return store.transaction(async (s) => {
    await s.sql.run('UPDATE intakes SET content_sha256 = ?, batch_id = NULL WHERE id = ? AND answer_version = 0', [
      contentSha256,
      id,
    ]);
    return (await getIntake(s, id))!;
  });
}

/**
 * A taking of `source` with this content that was never answered (a `run FILE` stopped or killed before its answer),
 * or answered while its batch was not finished (`run` answers a file whose rows wait because the bank refused
 * remessa's credentials): running the same file again resumes it instead of starting a new batch.
 */
export async function unansweredIntakeOf(
  store: Store,
  source: string,
  contentSha256: string,
): Promise<IntakeRecord | undefined> {
  const r = await store.sql.get<IntakeSql>(
    `SELECT i.* FROM intakes i LEFT JOIN batches b ON b.id = i.batch_id
     WHERE i.source = ? AND i.content_sha256 = ?
       AND (i.answer_version = 0 OR (i.answer_type = 'result' AND b.status IS NOT NULL AND b.status <> 'done'))
     ORDER BY i.taken_at DESC, i.id LIMIT 1`,
    [source, contentSha256],
  );
  return r && toIntake(r);
}

/**
 * The latest taking of `source` with this content whose batch a person approved (src/store/approvals.ts, "Who drives
 * an approved batch"), answered or not: a file given to `run` again after its approval is that taking (driven, or
 * its answer reported), never a second batch of the same rows.
 */
export async function approvedIntakeOf(
  store: Store,
  source: string,
  contentSha256: string,
): Promise<IntakeRecord | undefined> {
  const r = await store.sql.get<IntakeSql>(
    `SELECT i.* FROM intakes i JOIN approvals a ON a.batch_id = i.batch_id
     WHERE i.source = ? AND i.content_sha256 = ? AND a.state = 'approved'
     ORDER BY i.taken_at DESC, i.id LIMIT 1`,
    [source, contentSha256],
  );
  return r && toIntake(r);
}

/** The first earlier taking with the same bytes that was answered with a result (for the summary of a copy). */
export async function earlierSameContent(store: Store, intake: IntakeRecord): Promise<IntakeRecord | undefined> {
  const r = await store.sql.get<IntakeSql>(
    `SELECT * FROM intakes WHERE content_sha256 = ? AND id <> ? AND (taken_at < ? OR (taken_at = ? AND id < ?))
       AND answer_type = 'result'
     ORDER BY taken_at, id LIMIT 1`,
    [intake.contentSha256, intake.id, intake.takenAt, intake.takenAt, intake.id],
  );
  return r && toIntake(r);
}

/** `batches.changes` of the batch now (0 when there is no batch). */
export async function batchChanges(store: Store, batchId: string): Promise<number> {
  const r = await store.sql.get<{ changes: number }>('SELECT changes FROM batches WHERE id = ?', [batchId]);
  return r?.changes ?? 0;
}

/** Before writing the files of `version`: remembers which version and at which changes (see the top). */
export async function beginAnswer(store: Store, intakeId: string, version: number, changes: number): Promise<void> {
  await store.sql.run('UPDATE intakes SET writing_version = ?, writing_changes = ? WHERE id = ?', [
    version,
    changes,
    intakeId,
  ]);
}

/**
 * After the files of `version` are in place: the answer is current as of `changes`; the daemon that wrote it lets its
 * claim go (src/store/leases.ts `claimAnswer`).
 */
export async function markAnswered(
  store: Store,
  intakeId: string,
  answer: { type: AnswerType; version: number; changes: number; at: string; sha256?: string | null },
): Promise<void> {
  await store.sql.run(
    `UPDATE intakes SET answer_type = ?, answer_version = ?, answered_changes = ?, answered_at = ?,
       answer_sha256 = COALESCE(?, answer_sha256), writing_version = NULL, writing_changes = NULL,
       answer_holder = NULL
     WHERE id = ?`,
    [answer.type, answer.version, answer.changes, answer.at, answer.sha256 ?? null, intakeId],
  );
}

/**
 * Intakes whose batch is finished (`done`) and whose result is missing or stale: what every start (and every retry
 * pass of the daemon) answers. Oldest first.
 */
export async function intakesToAnswer(store: Store): Promise<IntakeRecord[]> {
  return (
    await store.sql.all<IntakeSql>(
      `SELECT i.* FROM intakes i JOIN batches b ON b.id = i.batch_id
       WHERE b.status = 'done' AND (i.answer_type IS NULL OR i.answer_type = 'result')
         AND (i.answer_version = 0 OR b.changes <> i.answered_changes)
       ORDER BY i.taken_at, i.id`,
    )
  ).map(toIntake);
}
