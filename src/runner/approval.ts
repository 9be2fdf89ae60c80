/**
 * Money controls (maker-checker and limits): which files wait for a person, what the person sees before deciding,
 * and the commands that decide. The batch states and the rules that must always hold are drawn in
 * src/store/approvals.ts; this file is the policy.
 *
 * - `approval.kinds`: every file of these kinds waits (default: bill-payments and pix-payments against a real bank,
 *   none with the embedded sandbox). It is read, validated and stored, its read steps run (a bill's lookup: status,
 *   beneficiary, due and charged amounts), every row is parked before its first effect step, and its preview
 *   `<outbox>/<kind>/<name>.preview.csv` is written. A Pix payment's `initialize` is an effect (it creates an
 *   endToEndId at the bank, which expires) and is held too: its preview shows what the BR Code itself says.
 * - Decisions: `remessa approve BATCH --by NAME`, or a `<name>.approved` marker (holding the approver's name on its
 *   first non-blank line; an empty one is refused with a note saying so) dropped beside where the file was in the
 *   inbox, or in the same place under `approval.markersFrom` when set (a folder only approvers can write: markers in
 *   the inbox are then not looked at); `remessa reject BATCH --by NAME --note TEXT`. A marker that comes after its
 *   file was decided (a second approver's, or after `remessa approve`) is archived by the daemon with a note beside
 *   the preview saying who decided (`archiveLateMarkers`), never left to be refused beside the next file of its name.
 * - Who decided is who the OS says did it (rule 3 of src/store/approvals.ts): a marker's OS owner, the OS user running
 *   the command; the name written (`--by`, the marker's line) is kept beside it, and may differ (a person's name,
 *   "Maria Silva", is not their login). The file's maker is its OS owner in the inbox, read by the intake from the file
 *   it takes before a copy across file systems (an inbox on an SFTP mount) makes it remessa's own
 *   (src/intake/work-area.ts `ownerUid`, ./os-users.ts), except when that is the account remessa itself runs as (a file
 *   it put there, or one every user of that account writes): then the maker is unknown. With
 *   `approval.forbidSameAsOwner` on, an unknown or indistinct (`nobody`) maker or approver refuses the approval with a
 *   message saying why and what to do; never let through. A marker that is a link (symbolic, or hard: its owner is not
 *   who put it there) is refused unread (`APPROVAL_MARKER_LINK`), and so is one in a folder where others than its
 *   writer can rename it (`APPROVAL_MARKER_FOLDER`, `markerFolderRefusal`): a rename keeps the owner, so another file's
 *   marker renamed onto this file's name would approve it in its writer's name. `remessa approve` run through sudo is
 *   the caller of sudo's (./os-users.ts `commandUser`).
 * - Limits (`limits.<kind>.perRow`, `.perFile`, `.perDay`, reais in the config, cents here): a row over perRow is
 *   invalid (a cell error naming the limit, so all-or-nothing rejects the file, as for any invalid row); a file whose
 *   unfinished rows add up to more than perFile, or that would take the kind's day (America/Sao_Paulo) past perDay,
 *   waits for approval when approval is on for its kind (the reasons are in its preview: approving it is the
 *   override), else is answered with every row `rejected` and the limit in the message. A file of a kind in
 *   `approval.kinds` waits whatever its amounts. The limits are checked again when an approved file is let go: one
 *   its preview did not show (the day's other files let go since) voids the approval, and it waits again with a new
 *   preview (`<name>.preview.v2.csv`, ...) saying who approved what.
 */

import { lstat, mkdir, readdir, readFile, rename, stat } from 'node:fs/promises';
import path from 'node:path';
import { crashPoint } from '../crash-point.js';
import { createResultWriter, type ResultCell } from '../csv/writer.js';
import { RemessaError } from '../errors.js';
import { brasiliaDay } from '../formats/brasilia-time.js';
import { parseBrCode } from '../formats/brcode.js';
import { formatMoney } from '../formats/money.js';
import { DEFAULT_LOCALE, instant, type Locale, t } from '../i18n/index.js';
import { APPROVED_MARKER_SUFFIX, stemOf } from '../intake/classify.js';
import { moveFile, type WorkMeta } from '../intake/work-area.js';
import type { Logger } from '../log.js';
import { dayFirstDate, identifierCell, inputCell, type ResultFormSettings, resultForms } from '../outbox/cell-forms.js';
import { answerPaths, writeFileAtomic } from '../outbox/result.js';
import {
  APPROVAL_CODES,
  ApprovalError,
  type ApprovalReason,
  type ApproverRules,
  awaitingApprovals,
  type Decision,
  decideApproval,
  findBatches,
  getApproval,
  heldTakingsNamed,
  holdAgain,
  holdBatch,
  immediate,
  markPreviewWritten,
  rejectUnsentBatch,
  releaseBatch,
  releasedOnDay,
  saidUser,
  unfinishedAmount,
} from '../store/approvals.js';
import { intakeForBatch, shortBatchId } from '../store/intakes.js';
import type { StorePlace } from '../store/place.js';
import type { BatchRecord, Store } from '../store/store.js';
import type { Cents, KindName } from '../types.js';
import type { MoneyControlOptions } from './options.js';
import { fileOwner, processUser, userNameOfUid } from './os-users.js';

export { withRowLimit } from './row-limit.js';

export const EXIT_DECIDED = 0;

// ------------------------------------------------------------------------------------------------ the gate

/** Why a file of `kind` whose unfinished rows add up to `amount` cannot go by itself (file and day limits). */
async function limitReasons(
  store: Store,
  kind: KindName,
  amount: Cents,
  controls: MoneyControlOptions | undefined,
  now: Date,
  locale: Locale,
): Promise<ApprovalReason[]> {
  const limits = controls?.limits[kind];
  const reasons: ApprovalReason[] = [];
  const brl = (cents: Cents) => formatMoney(locale, cents);
  if (limits?.perFile !== undefined && amount > limits.perFile) {
    reasons.push({
      code: APPROVAL_CODES.perFile,
      message: t(locale, 'APPROVAL.perFile', {
        amount: brl(amount),
        setting: `limits.${kind}.perFile`,
        limit: brl(limits.perFile),
      }),
    });
  }
  if (limits?.perDay !== undefined) {
    const day = brasiliaDay(now);
    const used = await releasedOnDay(store, kind, day);
    if (used + amount > limits.perDay) {
      reasons.push({
        code: APPROVAL_CODES.perDay,
        message: t(locale, 'APPROVAL.perDay', {
          used: brl(used),
          kind,
          day,
          amount: brl(amount),
          setting: `limits.${kind}.perDay`,
          limit: brl(limits.perDay),
        }),
      });
    }
  }
  return reasons;
}

/**
 * Decides, in one transaction that holds the write lock from its start (`immediate`), whether a stored batch may run (see the machine in src/store/approvals.ts):
 * 'go' once released (or answered with every row rejected over a limit), 'hold' while it waits for approval.
 */
export function gateBatch(
  store: Store,
  batchId: string,
  controls: MoneyControlOptions | undefined,
  owner: string | null,
  now: Date = new Date(),
  locale: Locale = DEFAULT_LOCALE,
): Promise<'go' | 'hold'> {
  return immediate(store, async (s): Promise<'go' | 'hold'> => {
    const batch = await s.getBatch(batchId);
    if (!batch) throw new RemessaError('STORE_NO_BATCH', `No batch ${batchId}`);
    if (batch.status === 'awaiting_approval') return 'hold';
    if (batch.status !== 'ready') return 'go';
    const approval = await getApproval(s, batchId);
    if (approval?.state !== 'approved' && (await s.countUnfinished(batchId)) === 0) {
      await releaseBatch(s, batch, now);
      return 'go';
    }
    const amount = await unfinishedAmount(s, batchId);
    const reasons = await limitReasons(s, batch.kind, amount, controls, now, locale);
    if (approval?.state === 'approved') {
      // Approving overrides the limits the preview showed; one passed only since (other files of the day let go
      // meanwhile, or another day) was seen by nobody: the approval is voided and the file waits again.
      const unseen = reasons.filter((r) => !approval.reasons.some((seen) => seen.code === r.code));
      if (unseen.length === 0) {
        await releaseBatch(s, batch, now);
        return 'go';
      }
      await holdAgain(s, batchId, {
        reasons: [
          ...approval.reasons.filter((r) => r.code === APPROVAL_CODES.required),
          ...reasons,
          {
            code: APPROVAL_CODES.previewStale,
            message: t(locale, 'APPROVAL.previewStale', {
              by: approval.decidedBy ?? '?',
              at: approval.decidedAt ? instant(approval.decidedAt) : '?',
              codes: unseen.map((r) => r.code).join(', '),
            }),
          },
        ],
        amountCents: amount,
        now,
      });
      return 'hold';
    }
    if (controls?.approvalKinds.includes(batch.kind)) {
      await holdBatch(s, batchId, {
        reasons: [
          {
            code: APPROVAL_CODES.required,
            message: t(locale, 'APPROVAL.required', { kind: batch.kind }),
          },
          ...reasons,
        ],
        owner,
        amountCents: amount,
        now,
      });
      return 'hold';
    }
    if (reasons.length > 0) {
      await rejectUnsentBatch(s, batchId, {
        code: reasons[0]!.code,
        message: t(locale, 'APPROVAL.notSent', { reasons: reasons.map((r) => r.message).join('; '), kind: batch.kind }),
      });
      return 'go';
    }
    await releaseBatch(s, batch, now);
    return 'go';
  });
}

/**
 * The gate for batches resumed without their file (`resumeUncertain`): a batch that waits, was decided but not yet
 * run, or would be held, is left to its file's handling (which writes its preview and its answer): 'skip'. Except an
 * approved batch whose file was given to `run` from outside the inbox (`givenOutside`, by its taking's source): no
 * handling waits for it, so it is released and driven here (src/store/approvals.ts, "Who drives an approved batch").
 */
export function resumeGate(
  store: Store,
  controls: MoneyControlOptions | undefined,
  locale: Locale = DEFAULT_LOCALE,
  givenOutside: (source: string) => boolean = () => false,
): (batch: BatchRecord) => Promise<'go' | 'hold' | 'skip'> {
  return async (batch) => {
    if (batch.status === 'awaiting_approval') return 'skip';
    const approval = await getApproval(store, batch.id);
    if (approval) {
      const source = (await intakeForBatch(store, batch.id))?.source;
      if (approval.state !== 'approved' || source === undefined || !givenOutside(source)) return 'skip';
      return gateBatch(store, batch.id, controls, null, new Date(), locale);
    }
    if (controls?.approvalKinds.includes(batch.kind)) return 'skip';
    return gateBatch(store, batch.id, controls, null, new Date(), locale);
  };
}

// ------------------------------------------------------------------------------------------------ the file's maker

/**
 * The maker of a taken file, for `approval.forbidSameAsOwner`: its OS owner in the inbox, as the intake read it from
 * the file it moved (`WorkMeta.ownerUid`: a take across file systems is a copy, owned by this process), else the owner
 * of `item.file` itself (a file `run` reads where it is, or a work item from before `ownerUid`) (./os-users.ts). Null
 * when that cannot be read, the file is a link, or the owner is the account this process runs as (`me`): a file
 * remessa itself put in the inbox, and an account every uploader shares, tell none of them apart. Null refuses every
 * approval while `forbidSameAsOwner` is on (rule 3 of src/store/approvals.ts).
 */
export async function makerOf(
  item: { file: string; meta: Pick<WorkMeta, 'ownerUid'> },
  me?: string | null,
): Promise<string | null> {
  const { ownerUid } = item.meta;
  const owner =
    ownerUid === undefined ? await fileOwner(item.file) : ownerUid === null ? null : await userNameOfUid(ownerUid);
  const self = me === undefined ? await processUser() : me;
  return owner !== null && owner === self ? null : owner;
}

// ------------------------------------------------------------------------------------------------ the preview

/** The columns every preview has after the input's own. */
export const PREVIEW_COLUMNS = ['preview', 'errorCode', 'errorMessage', 'amountToPay'] as const;

interface KindPreview {
  columns: readonly string[];
  money: ReadonlySet<string>;
  /** Identifiers of digits (written `="..."` in the spreadsheet form) and due dates (dd/mm/yyyy there). */
  identifiers?: ReadonlySet<string>;
  dueDates?: ReadonlySet<string>;
  values(row: { outputs: Record<string, unknown>; parsed: unknown }): Record<string, ResultCell>;
}

/** What each money kind adds to its preview: the bill as looked up; the Pix QR code as its payload says. */
const KIND_PREVIEWS: Partial<Record<KindName, KindPreview>> = {
  'bill-payments': {
    columns: ['beneficiary', 'beneficiaryDocument', 'dueDate', 'chargedAmount', 'billAmount', 'billStatus', 'billType'],
    money: new Set(['chargedAmount', 'billAmount']),
    identifiers: new Set(['beneficiaryDocument']),
    dueDates: new Set(['dueDate']),
    values: ({ outputs }) => outputs as Record<string, ResultCell>,
  },
  'pix-payments': {
    columns: ['beneficiary', 'beneficiaryCity', 'qrAmount'],
    money: new Set(['qrAmount']),
    values: ({ parsed }) => {
      const payload = (parsed as { payload?: unknown } | null)?.payload;
      if (typeof payload !== 'string') return {};
      try {
        const code = parseBrCode(payload);
        return { beneficiary: code.merchantName, beneficiaryCity: code.merchantCity, qrAmount: code.amountCents };
      } catch {
        return {};
      }
    },
  },
};

const PREVIEW_STATUS: Record<string, string> = {
  pending: 'to pay',
  in_flight: 'to pay',
  uncertain: 'to pay',
  // Left waiting for an unreachable bank: paid on approval all the same, so in the total to pay, not looked up.
  waiting: 'to pay',
  succeeded: 'succeeded',
  failed: 'failed',
  rejected: 'rejected',
  duplicate: 'duplicate',
};

/** `<outbox>/<kind>/<name>.preview.csv`, or version N's `<name>.preview.vN.csv` (a file held again). */
export function previewPath(outboxDir: string, kind: string, name: string, version = 1): string {
  return path.join(outboxDir, kind, `${name}.preview${version === 1 ? '' : `.v${version}`}.csv`);
}

/** The highest version of the batch's preview written so far (0: none). */
async function latestPreviewVersion(outboxDir: string, kind: string, name: string): Promise<number> {
  let version = 0;
  while (await stat(previewPath(outboxDir, kind, name, version + 1)).catch(() => undefined)) version++;
  return version;
}

/** The path of the batch's current preview (its highest version; the first one's name when none was written). */
export async function currentPreviewPath(outboxDir: string, kind: string, name: string): Promise<string> {
  return previewPath(outboxDir, kind, name, Math.max(1, await latestPreviewVersion(outboxDir, kind, name)));
}

/**
 * Writes the preview of a batch that waits for approval (atomically, in the input's dialect, formula-safe: the
 * result writer): each row as it would be paid (its input cells, `to pay` or why not, the amount, and what the bank
 * said of the bill), then totals by status, the reasons it waits, its owner and how to decide. Marks the preview
 * written in the store (a decision needs it). A batch held again after an approval was voided (no preview since:
 * `previewAt` null) gets the next version, `<name>.preview.v2.csv`, ...: the one the approver read stays as it was.
 * A batch whose preview was written and is there (a restart holds it again) keeps it as it is: nothing is written.
 */
export async function writePreview(
  store: Store,
  batchId: string,
  options: {
    outboxDir: string;
    name: string;
    now?: Date;
    locale?: Locale;
    /**
     * The folder this file's `.approved` marker is read from when it is not beside the file in the inbox
     * (`approval.markersFrom` and the file's subfolder): the DECIDE line names it, since markers in the inbox are then
     * not looked at.
     */
    markersIn?: string | undefined;
    /**
     * Without `markersIn`: the folder of the inbox where a marker beside the file would be refused, since others can
     * rename in it (`unsafeMarkerFolder`). The DECIDE line then does not send the approver there.
     */
    inboxRefusesMarkers?: string | undefined;
    /** The form of identifiers and dates (config `results`), as the file's answer has them. @defaultValue auto */
    results?: Partial<ResultFormSettings>;
  },
): Promise<string> {
  // Its labels (TOTAL, WAITS, FILE, DECIDE) and status words (`to pay`) are markers, like a result's statuses; the
  // sentences beside them are in the person's locale.
  const locale = options.locale ?? DEFAULT_LOCALE;
  const batch = await store.getBatch(batchId);
  const approval = await getApproval(store, batchId);
  if (!batch || !approval) throw new RemessaError('APPROVAL_NO_BATCH', `Batch ${batchId} does not wait for approval`);
  const extra = KIND_PREVIEWS[batch.kind];
  const width = batch.header.length;
  const header = [...batch.header, ...PREVIEW_COLUMNS, ...(extra?.columns ?? [])];
  const written = await latestPreviewVersion(options.outboxDir, batch.kind, options.name);
  // The preview the approver may be reading is never written over (a restart finds the batch held again, and its
  // rows may read otherwise by now: a lookup answered since). It stays as it was; a decision is taken on it.
  if (approval.previewAt !== null && written > 0)
    return previewPath(options.outboxDir, batch.kind, options.name, written);
  const version = approval.previewAt === null ? written + 1 : 1;
  const file = previewPath(options.outboxDir, batch.kind, options.name, version);
  await mkdir(path.dirname(file), { recursive: true });
  const writer = await createResultWriter(file, { dialect: batch.dialect, header });
  // Read in Excel as the answer is (src/outbox/cell-forms.ts): a bar code or CNPJ that Excel would turn into
  // 3,41913E+43 is text, a due date dd/mm/yyyy in a Brazilian sheet. A due date is a day: the bank's midnight
  // (`2030-12-31T00:00:00`) is that day, not an instant moved to Brasília time.
  const forms = resultForms(batch.dialect, options.results);
  const totals = new Map<string, { rows: number; cents: Cents }>();
  let shownAt: Date;
  try {
    for (let after = 0; ; ) {
      const page = await store.rowsAfter(batchId, after, 500);
      if (page.length === 0) break;
      for (const row of page) {
        after = row.line;
        const status = PREVIEW_STATUS[row.state] ?? row.state;
        const total = totals.get(status) ?? { rows: 0, cents: 0 };
        total.rows++;
        total.cents += row.amountCents ?? 0;
        totals.set(status, total);
        const input = row.cells ?? batch.header.map((h) => row.record[h] ?? '');
        const cells: ResultCell[] = Array.from({ length: width }, (_, i) => inputCell(input[i] ?? '', forms));
        const notLookedUp = row.state === 'uncertain' || row.state === 'waiting';
        cells.push(
          status,
          status === 'to pay' && !notLookedUp ? null : row.errorCode,
          status === 'to pay' && !notLookedUp
            ? null
            : notLookedUp
              ? t(locale, 'PREVIEW.notLookedUp', { reason: row.errorMessage ?? t(locale, 'PREVIEW.noAnswer') })
              : row.errorMessage,
          status === 'to pay' && row.amountCents !== null ? { cents: row.amountCents } : null,
        );
        if (extra) {
          const values = extra.values({ outputs: row.outputs, parsed: row.parsed });
          for (const col of extra.columns) {
            const v = values[col] ?? null;
            if (extra.money.has(col) && typeof v === 'number' && Number.isInteger(v)) cells.push({ cents: v });
            else if (typeof v === 'string' && v !== '' && extra.identifiers?.has(col))
              cells.push(identifierCell(v, forms));
            else if (typeof v === 'string' && forms.dates === 'dayFirst' && extra.dueDates?.has(col))
              cells.push(/^\d{4}-\d{2}-\d{2}/.test(v) ? dayFirstDate(v.slice(0, 10)) : v);
            else cells.push(v);
          }
        }
        await writer.write(cells);
      }
    }
    const summary = (label: string, text: string, cents?: Cents): ResultCell[] => {
      const cells: ResultCell[] = Array.from({ length: header.length }, () => null);
      cells[0] = label;
      cells[width] = text;
      if (cents !== undefined) cells[width + 3] = { cents };
      return cells;
    };
    const toPay = totals.get('to pay') ?? { rows: 0, cents: 0 };
    const rowCount = (rows: number) => t(locale, 'PREVIEW.rows', { count: rows });
    await writer.write(summary('TOTAL to pay', rowCount(toPay.rows), toPay.cents));
    for (const [status, total] of totals) {
      if (status !== 'to pay')
        await writer.write(summary(`TOTAL ${status} (not paid)`, rowCount(total.rows), total.cents));
    }
    for (const reason of approval.reasons) await writer.write(summary(`WAITS: ${reason.code}`, reason.message));
    await writer.write(
      summary(
        'FILE',
        t(locale, 'PREVIEW.file', {
          file: batch.fileName,
          batch: batchId,
          owner: approval.owner ?? t(locale, 'PREVIEW.ownerUnknown'),
        }),
      ),
    );
    await writer.write(
      summary(
        'DECIDE',
        t(
          locale,
          options.markersIn !== undefined
            ? 'PREVIEW.decideIn'
            : options.inboxRefusesMarkers !== undefined
              ? 'PREVIEW.decideNoMarker'
              : 'PREVIEW.decide',
          {
            // The whole id: a prefix of it names every file taken in the same ten minutes.
            batch: batchId,
            marker: `${stemOf(batch.fileName)}${APPROVED_MARKER_SUFFIX}`,
            dir: options.markersIn ?? options.inboxRefusesMarkers,
          },
        ),
      ),
    );
    // The preview's time is the instant before it can be seen (close renames it into place): a marker made by
    // someone who read it is never older than it (rule 4 of src/store/approvals.ts), however soon it is dropped.
    shownAt = options.now ?? new Date();
    await writer.close();
  } catch (error) {
    await writer.abort();
    throw error;
  }
  await markPreviewWritten(store, batchId, shownAt);
  return file;
}

// ------------------------------------------------------------------------------------------------ the .approved marker

/**
 * The `.approved` marker beside where the file was dropped (`<name>.approved` or `<stem>.approved`), if any, under
 * `markersDir` (the inbox, or `approval.markersFrom`). A link is found too (never followed): it is refused with a note.
 */
export async function findApprovalMarker(markersDir: string, meta: WorkMeta): Promise<string | undefined> {
  for (const file of markerPaths(markersDir, meta)) {
    const st = await lstat(file).catch(() => undefined);
    if (st?.isFile() || st?.isSymbolicLink()) return file;
  }
  return undefined;
}

/** Where `meta`'s file's marker may be under `markersDir`: `<name>.approved`, then `<stem>.approved`. */
function markerPaths(markersDir: string, meta: WorkMeta): string[] {
  const dir = path.join(markersDir, path.dirname(meta.relativePath));
  return [`${meta.name}${APPROVED_MARKER_SUFFIX}`, `${stemOf(meta.name)}${APPROVED_MARKER_SUFFIX}`].map((name) =>
    path.join(dir, name),
  );
}

/**
 * The name a marker is claimed under for `batchId` (a dot file beside it, never taken): by its batch's handling, or
 * (`late.claimed`) as one that came after the decision (`archiveLateMarkers`).
 */
function claimedName(marker: string, batchId: string, suffix = 'claimed'): string {
  return path.join(path.dirname(marker), `.${path.basename(marker)}.${batchId.slice(0, 12)}.${suffix}`);
}

/** Where a used marker is kept: `<archive>/approvals/<batch>-<ms>-<name>`, its folder made. */
async function archivedMarkerPath(archive: string, batchId: string, marker: string): Promise<string> {
  const dir = path.join(archive, 'approvals');
  await mkdir(dir, { recursive: true });
  return path.join(dir, `${batchId.slice(0, 12)}-${Date.now()}-${path.basename(marker)}`);
}

/** A marker of `meta`'s file claimed for `batchId` and left so by a crash before its decision, if there is one. */
async function claimedMarkerOf(
  markersDir: string,
  meta: WorkMeta,
  batchId: string,
): Promise<{ marker: string; claimed: string } | undefined> {
  for (const marker of markerPaths(markersDir, meta)) {
    const claimed = claimedName(marker, batchId);
    const st = await lstat(claimed).catch(() => undefined);
    if (st?.isFile() || st?.isSymbolicLink()) return { marker, claimed };
  }
  return undefined;
}

/**
 * Why a marker found under `markersDir` may have been put under its name by someone else than its owner, or undefined
 * when it cannot (rule 3 of src/store/approvals.ts). A rename keeps a file's owner: whoever can rename entries of the
 * marker's folder can turn a manager's `a.csv.approved` into `b.csv.approved` (their own file), approved in the
 * manager's name. So every folder from the marker's up to `markersDir` (renaming a folder moves every marker in it)
 * must let nobody but the marker's owner, remessa's account (`meUid`) and root rename its entries: owned by one of
 * them (a folder's owner can always rename in it, after a chmod if need be), and writable by its group or others only
 * with the sticky bit (then only a file's owner, the folder's owner and root rename it). A POSIX ACL granting write
 * shows in the group bits (its mask), so it counts as group-writable. Who can rename `markersDir` itself (its parent's
 * writers) is the operator's to keep to root and remessa. Null `meUid`: no uids on this system, nothing checked.
 */
export async function markerFolderRefusal(
  markersDir: string,
  marker: string,
  markerUid: number,
  meUid: number | null,
  locale: Locale = DEFAULT_LOCALE,
): Promise<string | undefined> {
  const unsafe = await unsafeMarkerFolder(markersDir, marker, markerUid, meUid);
  if (unsafe === undefined) return undefined;
  const said = { marker: path.basename(marker), dir: unsafe.dir, mode: unsafe.mode };
  if (unsafe.why === 'unreadable') return t(locale, 'APPROVAL.markerFolder.unreadable', said);
  if (unsafe.why === 'owner') {
    return t(locale, 'APPROVAL.markerFolder.owner', { ...said, owner: await userNameOfUid(unsafe.ownerUid!) });
  }
  return t(locale, 'APPROVAL.markerFolder.writable', said);
}

/** The first folder that lets others rename `marker` (see `markerFolderRefusal`), and why; undefined when none. */
export async function unsafeMarkerFolder(
  markersDir: string,
  marker: string,
  markerUid: number,
  meUid: number | null,
): Promise<{ why: 'unreadable' | 'owner' | 'writable'; dir: string; mode: string; ownerUid?: number } | undefined> {
  if (meUid === null) return undefined;
  const root = path.resolve(markersDir);
  for (let dir = path.dirname(path.resolve(marker)); ; dir = path.dirname(dir)) {
    const st = await stat(dir).catch(() => undefined);
    if (!st) return { why: 'unreadable', dir, mode: '?' };
    const mode = (st.mode & 0o7777).toString(8).padStart(4, '0');
    if (![0, meUid, markerUid].includes(st.uid)) return { why: 'owner', dir, mode, ownerUid: st.uid };
    if ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0) return { why: 'writable', dir, mode };
    if (dir === root || path.dirname(dir) === dir || path.relative(root, dir).startsWith('..')) return undefined;
  }
}

/**
 * Applies the `.approved` marker of a batch that waits, if there is one (under `folders.markers`, else the inbox): its
 * OS owner is the approver (rule 3 of src/store/approvals.ts); its first non-empty line is the name they wrote, kept
 * beside. A marker that is a link (symbolic, or a file with more than one name) is refused before it is read
 * (`APPROVAL_MARKER_LINK`): its owner is not who put it there, and its target is never read. So is one whose folder
 * lets others rename it (`APPROVAL_MARKER_FOLDER`, `markerFolderRefusal`). A marker with no name (0 bytes, or only
 * blanks) is left for the next look while it may still be being written (changed within `emptyAfterMs`, the intake's
 * `stableMs`); once it stays so, it is refused like a marker naming the wrong person (`APPROVAL_MARKER_EMPTY`, its note
 * saying what it must hold), not waited on forever without a word. Once used (approved, or refused: a refusal is
 * written beside the file's preview, `<outbox>/<kind>/<answer name>.approval-refused.txt`, then `.v2.txt`, ...: never
 * overwritten), the marker is moved to `<archive>/approvals/`. It is claimed first (renamed beside itself to a dot
 * file, never taken), so one marker decides once; one a crash left claimed and undecided is found by the next look
 * at its batch and used as claimed (it was lost so before). A marker whose name fits several takings that wait (two
 * files of one name) is refused (`APPROVAL_MARKER_AMBIGUOUS`): which preview its author read cannot be told.
 * Returns whether the batch was decided.
 */
export async function applyApprovalMarker(
  store: Store,
  batchId: string,
  meta: WorkMeta,
  folders: { inbox: string; outbox: string; archive: string; markers?: string | undefined },
  rules: ApproverRules,
  log: Logger,
  locale: Locale = DEFAULT_LOCALE,
  emptyAfterMs = 0,
): Promise<boolean> {
  const markersDir = folders.markers ?? folders.inbox;
  // A marker this batch's handling claimed before a crash cut it short (renamed, its decision not recorded): it is
  // used as it was claimed. Looked for first: the approver gave it once, and nothing else would find it again.
  const left = await claimedMarkerOf(markersDir, meta, batchId);
  const marker = left?.marker ?? (await findApprovalMarker(markersDir, meta));
  if (!marker) return false;
  const nameIn = (text: string) =>
    text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .find((l) => l !== '');
  // The marker's time is when its author decided: one older than the preview (dropped with the file, or left from
  // an earlier file of the same name) is refused (rule 4 of src/store/approvals.ts).
  const found = await lstat(left?.claimed ?? marker).catch(() => undefined);
  const madeAt = found?.mtime;
  if (!found || !madeAt) return false; // gone meanwhile
  if (
    left === undefined &&
    found.isFile() &&
    !nameIn(await readFile(marker, 'utf8').catch(() => '')) &&
    Date.now() - madeAt.getTime() < emptyAfterMs
  ) {
    return false; // no name yet: perhaps still being written
  }
  // Claimed before it is used, by a rename beside it to a name never taken (a dot file): one marker decides once,
  // whichever handling sees it first (two takings of one file name are handled at the same time at a start).
  const claimed = left?.claimed ?? claimedName(marker, batchId);
  if (left === undefined) {
    try {
      await rename(marker, claimed);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false; // taken by another handling meanwhile
      throw err;
    }
    crashPoint('marker-claimed');
  }
  // Who wrote it is its owner, read from the claimed file itself (not followed): a link says nothing of who put it
  // there, and is never read.
  const claimedStat = await lstat(claimed).catch(() => undefined);
  const linked = !claimedStat?.isFile() || claimedStat.nlink > 1;
  const user = linked ? null : await fileOwner(claimed);
  const text = linked ? '' : await readFile(claimed, 'utf8').catch(() => '');
  const by = nameIn(text);
  /** Writes why the marker did not approve the file beside its preview, as the next version of that note. */
  const refuse = async (code: string, reason: string) => {
    const kind = meta.kind ?? meta.folder ?? '_unknown';
    // Named as the preview is (its answer name), so two files of one name keep theirs apart; a later refusal of the
    // same file is its next version (each says why that marker was refused).
    const name = (await intakeForBatch(store, batchId))?.answerName ?? stemOf(meta.name);
    const note = `${t(locale, 'APPROVAL.markerRefused', { marker: path.basename(marker), file: meta.name })}\n\n${code}: ${reason}\n`;
    await writeMarkerNote(folders.outbox, kind, name, note);
  };
  // The marker's name fits every taking of this file name that waits: which preview its author read cannot be told.
  const alike = by ? await takingsTheMarkerNames(store, markersDir, marker) : [];
  // Whether someone else than its writer may have given it this name (a rename keeps the owner): then it says nothing.
  const folderRefusal = linked
    ? undefined
    : await markerFolderRefusal(markersDir, marker, claimedStat!.uid, process.getuid?.() ?? null, locale);
  let decided = false;
  if (linked) {
    log.warn(
      { file: meta.relativePath, marker, code: APPROVAL_CODES.markerLink },
      'approval marker refused: it is a link (its owner is not who put it there); not read',
    );
    await refuse(APPROVAL_CODES.markerLink, t(locale, 'APPROVAL.markerLink', { marker: path.basename(marker) }));
  } else if (folderRefusal) {
    log.warn(
      { file: meta.relativePath, marker, code: APPROVAL_CODES.markerFolder, user },
      'approval marker refused: others than its writer can rename files in its folder; not used',
    );
    await refuse(APPROVAL_CODES.markerFolder, folderRefusal);
  } else if (alike.length > 1) {
    log.warn(
      { file: meta.relativePath, marker, code: APPROVAL_CODES.markerAmbiguous, batches: alike.map((b) => b.id) },
      'approval marker refused: it names several files that wait',
    );
    await refuse(
      APPROVAL_CODES.markerAmbiguous,
      t(locale, 'APPROVAL.markerAmbiguous', {
        marker: path.basename(marker),
        count: alike.length,
        batches: alike.map((b) => `${b.id} (${b.fileName})`).join(', '),
      }),
    );
  } else if (!by) {
    log.warn(
      { file: meta.relativePath, marker, code: APPROVAL_CODES.markerEmpty },
      "approval marker refused: it is empty (the approver's name is expected on its first line)",
    );
    await refuse(
      APPROVAL_CODES.markerEmpty,
      t(locale, 'APPROVAL.markerEmpty', {
        marker: path.basename(marker),
        got: text === '' ? t(locale, 'APPROVAL.markerEmpty.nothing') : t(locale, 'APPROVAL.markerEmpty.blanks'),
      }),
    );
  } else {
    try {
      await decideApproval(
        store,
        batchId,
        { approve: true, by: by.slice(0, 100), user, via: 'marker', marker: path.basename(marker), locale, madeAt },
        rules,
        new Date(),
      );
      decided = true;
      log.info({ file: meta.relativePath, by, user, batch: shortBatchId(batchId) }, 'batch approved by marker file');
    } catch (err) {
      if (!(err instanceof ApprovalError)) throw err;
      if (err.code === APPROVAL_CODES.noPreview) return false;
      log.warn({ file: meta.relativePath, by, user, code: err.code, reason: err.message }, 'approval marker refused');
      await refuse(err.code, err.message);
    }
  }
  const archived = await archivedMarkerPath(folders.archive, batchId, marker);
  await moveFile(claimed, archived).catch((err: unknown) => log.warn({ err, marker }, 'could not archive the marker'));
  return decided;
}

/** Writes `note` as the next `<outbox>/<kind>/<name>.approval-refused.txt` (`.v2.txt`, ...: none overwritten). */
async function writeMarkerNote(outbox: string, kind: string, name: string, note: string): Promise<string> {
  const noteOf = (version: number) => answerPaths(outbox, kind, name, version).approvalRefusedPath;
  await mkdir(path.dirname(noteOf(1)), { recursive: true });
  for (let version = 1; ; version++) {
    try {
      await writeFileAtomic(noteOf(version), note, { noClobber: true });
      return noteOf(version);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}

/**
 * Markers left over (the daemon, every `approval.pollMs`): an `.approved` marker under `folders.markers` (else the
 * inbox) whose name fits only takings already decided (approved or rejected: by a command, another marker, or a
 * marker of the other name, `lote.csv.approved` beside `lote.approved`) approves nothing; left there, it would stay
 * unmentioned, then be refused as older than the preview of the next file of that name, beside that file's preview.
 * It is claimed (renamed to a dot file, as a used marker is), moved to `<archive>/approvals/`, and a note beside the
 * latest decided taking's preview (its next `.approval-refused.txt` version) says it came after the decision and who
 * decided. A marker fitting a taking that waits is its handling's (`applyApprovalMarker`); one fitting no taking held
 * for approval is left where it is (it may be for a file not dropped yet: rule 4 of src/store/approvals.ts judges it
 * then). Returns how many were archived.
 */
export async function archiveLateMarkers(
  store: Store,
  folders: { inbox: string; outbox: string; archive: string; markers?: string | undefined },
  log: Logger,
  locale: Locale = DEFAULT_LOCALE,
): Promise<number> {
  const markersDir = folders.markers ?? folders.inbox;
  const entries = await readdir(markersDir, { recursive: true, withFileTypes: true }).catch(() => []);
  let archived = 0;
  for (const entry of entries) {
    const name = entry.name;
    if (name.startsWith('.') || !name.toLowerCase().endsWith(APPROVED_MARKER_SUFFIX)) continue;
    if (!entry.isFile() && !entry.isSymbolicLink()) continue;
    const dir = entry.parentPath ?? entry.path;
    const relativeDir = path.relative(markersDir, dir) || '.';
    const named = name.slice(0, -APPROVED_MARKER_SUFFIX.length);
    const takings = (await heldTakingsNamed(store, named)).filter(
      (h) =>
        !path.isAbsolute(h.source) &&
        path.dirname(h.source) === relativeDir &&
        (h.fileName === named || stemOf(h.fileName) === named),
    );
    if (takings.length === 0 || takings.some((h) => h.state === 'awaiting')) continue;
    const decided = takings[0]!;
    const marker = path.join(dir, name);
    const claimed = claimedName(marker, decided.batchId, 'late.claimed');
    try {
      await rename(marker, claimed);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // taken by a handling meanwhile
      throw err;
    }
    const target = await archivedMarkerPath(folders.archive, decided.batchId, marker);
    const said = {
      batch: shortBatchId(decided.batchId),
      file: decided.fileName,
      state: decided.state,
      by: decided.decidedBy ?? '?',
      at: decided.decidedAt ? instant(decided.decidedAt) : '?',
    };
    const note =
      `${t(locale, 'APPROVAL.markerLate', { marker: name, file: decided.fileName, archived: target })}\n\n` +
      `${APPROVAL_CODES.notAwaiting}: ${t(locale, 'APPROVAL.decidedAlready', said)}\n`;
    // Moved first: the note says where it is.
    await moveFile(claimed, target);
    const written = await writeMarkerNote(folders.outbox, decided.folder, decided.answerName, note);
    archived++;
    log.info(
      {
        marker: path.join(relativeDir, name),
        batch: said.batch,
        state: decided.state,
        note: written,
        archived: target,
      },
      'approval marker after the decision: not used, archived',
    );
  }
  return archived;
}

/**
 * The takings waiting for a decision, dropped in the inbox, that `marker` would approve (it fits their names, in the
 * same place under `markersDir`: the inbox or `approval.markersFrom`).
 */
async function takingsTheMarkerNames(store: Store, markersDir: string, marker: string): Promise<BatchRecord[]> {
  const named: BatchRecord[] = [];
  for (const { batch } of await awaitingApprovals(store)) {
    const source = (await intakeForBatch(store, batch.id))?.source;
    if (source === undefined || path.isAbsolute(source)) continue; // given to `run` from elsewhere: no marker
    const dir = path.join(markersDir, path.dirname(source));
    const fits = [`${batch.fileName}${APPROVED_MARKER_SUFFIX}`, `${stemOf(batch.fileName)}${APPROVED_MARKER_SUFFIX}`];
    if (fits.some((name) => path.join(dir, name) === marker)) named.push(batch);
  }
  return named;
}

// ------------------------------------------------------------------------------------------------ the commands

/**
 * The one batch `ref` names, preferring one that waits among takings of one file; throws a RemessaError (exit 2) when
 * none or several.
 */
export async function batchForDecision(
  store: Store,
  ref: string,
  locale: Locale = DEFAULT_LOCALE,
): Promise<BatchRecord> {
  let found = await findBatches(store, ref);
  // One file dropped several times: the taking that waits. Never across files (a prefix of ids taken in the same
  // minute): that would approve a file the person did not name.
  if (found.length > 1 && new Set(found.map((b) => b.fileName)).size === 1) {
    const waiting = found.filter((b) => b.status === 'awaiting_approval');
    if (waiting.length > 0) found = waiting;
  }
  if (found.length === 0) {
    throw new RemessaError('APPROVAL_NO_BATCH', t(locale, 'BATCH.notFound', { ref: JSON.stringify(ref) }));
  }
  if (found.length > 1) {
    throw new RemessaError(
      'APPROVAL_AMBIGUOUS',
      t(locale, 'BATCH.ambiguous', {
        ref: JSON.stringify(ref),
        count: found.length,
        batches: found.map((b) => `${b.id} (${b.fileName}, ${b.status})`).join(', '),
      }),
    );
  }
  return found[0]!;
}

export interface DecideCommand {
  /** The store (src/store/place.ts). */
  store: StorePlace;
  ref: string;
  decision: Decision;
  rules: ApproverRules;
  out: NodeJS.WritableStream;
  /** Language of the output, the refusals and the rejected rows' message. @defaultValue DEFAULT_LOCALE */
  locale?: Locale | undefined;
}

/**
 * `remessa approve` / `remessa reject`: records the decision in the store (the daemon, or the next `run`, pays or
 * answers the file). Exit 0 decided, 1 refused (nothing changed), 2 no store or no such batch.
 */
export async function decideCommand(c: DecideCommand): Promise<number> {
  const locale = c.locale ?? c.decision.locale ?? DEFAULT_LOCALE;
  let store: Store | undefined;
  try {
    store = await c.store.open({ busyTimeoutMs: 15_000 });
    const batch = await batchForDecision(store, c.ref, locale);
    const approval = await decideApproval(store, batch.id, { ...c.decision, locale }, c.rules, new Date());
    const said = {
      file: batch.fileName,
      batch: shortBatchId(batch.id),
      by: approval.decidedBy ?? '?',
      user:
        c.decision.user === null ? (approval.decidedUser ?? '?') : saidUser(c.decision.user, c.decision.ranAs, locale),
      at: approval.decidedAt ? instant(approval.decidedAt) : '?',
    };
    c.out.write(`${t(locale, approval.state === 'approved' ? 'DECIDE.approved' : 'DECIDE.rejected', said)}\n`);
    return EXIT_DECIDED;
  } catch (err) {
    if (err instanceof ApprovalError) {
      c.out.write(`${t(locale, 'DECIDE.notDecided', { reason: err.message })}\n`);
      return 1;
    }
    throw err;
  } finally {
    await store?.close();
  }
}
