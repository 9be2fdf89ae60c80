/**
 * The commands: `daemon` (in ./daemon.ts), `run`, `validate` (./validate.ts), `status` (./status.ts), `retry` and
 * `resolve` (./settle.ts). src/cli.ts parses the arguments and the configuration and calls these; each returns the
 * process exit code. An answered batch whose rows change later is answered again through `reanswerBatch` only.
 *
 * Exit codes:
 * - 0: everything succeeded (every row `succeeded`, or `duplicate` of a row that did; `validate`: no error).
 * - 1: the command ran, but some row did not succeed, a file was rejected (`run`), or the file is invalid
 *   (`validate`).
 * - 2: the command could not run (bank unreachable at start, store unusable, file missing, or the data folder driven
 *   by another process: `DATA_FOLDER_LOCKED`, see ./lock.ts).
 * - 3: rows left unsettled (uncertain, waiting, parked) or a file not answered yet.
 * - 4: the bank refused remessa's credentials (401/403): rows left `waiting`, files answered so (src/exit-codes.ts).
 *
 * The pipeline glue: a taken file goes to the engine (src/runner/engine.ts), which reads it (src/csv), validates
 * and stores its rows (src/batches, src/store), sends them through the queue (src/queue, src/bank) and writes the
 * one answer (src/outbox). A file that cannot be processed as a whole (unknown kind, empty, not text, missing
 * columns; or answered by the intake itself: a link, a special or unreadable file, a cut-off upload) gets a
 * `<name>.rejected.txt` instead. A file that waits for a person's approval (money controls, ./approval.ts) gets its
 * `<name>.preview.csv` and stays parked in the work area until decided; then it is handled again and answered.
 *
 * A file taken by the intake is checked against what was taken (src/intake/intake.ts) before it is read, after its
 * last byte is read (before any row is sent) and before its answer is written. A change before sending gives the
 * partial batch up in the store (nothing sent, its natural keys released); a change after sending leaves the rows
 * sent as they are (the re-read answers them as duplicates of themselves, never sends them again). Either way no
 * answer is written and FileChangedError makes the intake read the file again once it settles.
 */
import { setMaxListeners } from 'node:events';
import fs from 'node:fs/promises';
import path from 'node:path';
import { BankClient, type BankClientOptions } from '../bank/client.js';
import { NotFoundError, ServiceError } from '../bank/errors.js';
import type { RetrySettings } from '../bank/retry-policy.js';
import type { BatchKind } from '../batches/kind.js';
import { kindFor, KINDS as REGISTERED_KINDS } from '../batches/registry.js';
import { crashPoint } from '../crash-point.js';
import { type BatchReader, readBatch } from '../csv/reader.js';
import { InputError, RemessaError } from '../errors.js';
import {
  EXIT_CANNOT_RUN,
  EXIT_CREDENTIALS_REFUSED,
  EXIT_NOT_ALL_SUCCEEDED,
  EXIT_OK,
  EXIT_UNSETTLED,
} from '../exit-codes.js';
import { type Locale, type Message, msg, render, t } from '../i18n/index.js';
import {
  archiveWorkItem,
  FileChangedError,
  Intake,
  sha256File,
  stemOf,
  type TakenBatch,
  takeIntoWorkArea,
  type WorkItem,
  type WorkMeta,
} from '../intake/index.js';
import { newWorkId } from '../intake/work-area.js';
import { answerNameFor } from '../outbox/names.js';
import { type AnswerIntakeOptions, answerIntake, answerPaths, writeRejected } from '../outbox/result.js';
import { queueOptionsFromConfig, RequestQueue } from '../queue/request-queue.js';
import { SharedRateLimiter, sharedRateOptions } from '../queue/shared-rate.js';
import type { RunningSandbox } from '../sandbox/server.js';
import type { StoreError } from '../store/db.js';
import {
  approvedIntakeOf,
  approvedNotRun,
  type BatchRecord,
  batchIdForIntake,
  getApproval,
  type IntakeRecord,
  intakeForBatch,
  intakesToAnswer,
  markAnswered,
  type RowCounts,
  type RowState,
  registerIntake,
  retakeIntake,
  rowOutcome,
  type Store,
  unansweredIntakeOf,
} from '../store/index.js';
import {
  batchesToHelp,
  DaemonLease,
  DEFAULT_LEASE_MS,
  defaultDaemonName,
  FileClaims,
  isSharedStore,
} from '../store/leases.js';
import { runnerStorePlace } from '../store/place.js';
import type { EndpointGroup, KindName, RowOutcome } from '../types.js';
import {
  applyApprovalMarker,
  archiveLateMarkers,
  currentPreviewPath,
  findApprovalMarker,
  gateBatch,
  makerOf,
  resumeGate,
  unsafeMarkerFolder,
  withRowLimit,
  writePreview,
} from './approval.js';
import { type BankGate, DEFAULT_CREDENTIALS_RETRY_EVERY_MS, DEFAULT_UNREACHABLE_DELAYS_MS } from './bank-gate.js';
import {
  type BatchInput,
  type BatchProgress,
  BatchRejectedError,
  bankGateOf,
  DEFAULT_ENGINE_RETRY,
  helpWithBatch,
  type ProcessBatchResult,
  processBatch,
  resumeUnfinishedBatches,
} from './engine.js';
import { claimInboxForStore } from './inbox-store.js';
import {
  acquireDaemonNameLock,
  acquireDataFolderLock,
  type DataFolderLock,
  describeHolder,
  type LockingCommand,
} from './lock.js';
import { kindsReading, out, type RunnerOptions, readOptions } from './options.js';
import { createProgress, estimateRows, isInteractive, type Progress } from './progress.js';
import { retornoPass } from './retorno.js';
import { kindOfGivenFile } from './validate.js';

export {
  EXIT_CANNOT_RUN,
  EXIT_CREDENTIALS_REFUSED,
  EXIT_NOT_ALL_SUCCEEDED,
  EXIT_OK,
  EXIT_UNSETTLED,
} from '../exit-codes.js';
export { type BankClientOptionsLike, type RunnerOptions, runnerOptionsFromConfig } from './options.js';
export {
  BATCH_STATES,
  type BatchState,
  buildStatusReport,
  renderStatusReport,
  STORE_FILE_NAME,
  type StatusReport,
  showStatus,
} from './status.js';
export { kindOfGivenFile, type ValidationReport, validateBatchFile, validateFile } from './validate.js';

/**
 * Counts of row outcomes of one batch, as a command prints them: the result file's statuses, and `pending` for rows
 * not sent yet (a file that waits for approval, a run stopped before them), which a result file shows as uncertain.
 */
export type OutcomeCounts = Partial<Record<RowOutcome | 'pending', number>>;

/** The answer given to one batch. */
export interface BatchAnswer {
  /** 'done': answered; 'parked': stopped before every row was answered, or waiting for approval (resumed later). */
  state: 'done' | 'parked';
  /** 'result', 'rejected' (whole file), or 'preview' (waits for approval: `file` is its preview). */
  answer: 'result' | 'rejected' | 'preview';
  counts: OutcomeCounts;
  /** Path of the answer file. */
  file: string;
  /** Its `duplicate` rows whose original has not succeeded (nothing of theirs done yet: `allSucceeded`). */
  duplicatesNotSucceeded?: number;
  /**
   * `run` only: the bank refused remessa's credentials, so rows were left `waiting`; the file is answered all the
   * same (`file`), showing them waiting with why, and answered again once they are sent. `state` is 'parked'.
   */
  credentialsRefused?: boolean;
}

/** What a resumed batch came to (`Pipeline.resumeUncertain`). */
export interface ResumedBatch {
  batch: BatchRecord;
  counts: OutcomeCounts;
  /**
   * done: no row pending or in flight, answer written again (uncertain rows may remain); parked: stopped first;
   * needs-file: stopped while its rows were stored, its file must be taken again; error: see `error`.
   */
  state: 'done' | 'parked' | 'needs-file' | 'error';
  /** The result file written. */
  answer: string | null;
  /**
   * Parked: the preview written because the batch waits for a decision again (an approved file given to `run` from
   * outside the inbox whose approval the gate voided: src/store/approvals.ts rule 2).
   */
  preview?: string;
  /** Done: its `duplicate` rows whose original has not succeeded (`allSucceeded`). */
  duplicatesNotSucceeded?: number;
  error: unknown;
}

/** The open pipeline: store, bank client (and embedded sandbox), queue. */
export interface Pipeline {
  /** The bank's base URL (the embedded sandbox's when embedded). */
  bankUrl: string;
  /** `<data>/work`. */
  workDir: string;
  /** Processes one taken batch and writes its one answer. */
  handleBatch(batch: TakenBatch, options: { signal: AbortSignal; progress?: Progress }): Promise<'done' | 'parked'>;
  /** Like handleBatch, but returns the counts (for `run`). */
  processBatch(batch: TakenBatch, options: { signal: AbortSignal; progress?: Progress }): Promise<BatchAnswer>;
  /**
   * Answers what a crash left stale, retries rows left uncertain (or in flight by a crash) in earlier batches (only
   * `batchIds` when given), then writes a new version of every answer whose rows changed (src/store/intakes.ts).
   * Returns what became of each batch it took up.
   */
  resumeUncertain(
    signal: AbortSignal,
    batchIds?: readonly string[],
    /** A progress display for each batch driven (the daemon's `batch progress` lines). */
    progressFor?: (batch: BatchRecord) => Progress | undefined,
  ): Promise<ResumedBatch[]>;
  /**
   * The files that waited for approval and are now decided (by `remessa approve`/`reject`) or have an `.approved`
   * marker: each is forgotten here and returned, to be handled again (src/runner/approval.ts). Markers that came
   * after their file's decision are archived with a note (./approval.ts `archiveLateMarkers`).
   */
  takeDecided(): Promise<TakenBatch[]>;
  /**
   * The files handled to 'parked' with rows not finished (left `waiting` after the bank's 429s to the end), not by a
   * stop or an approval, whose rows have all ended since (a later retry pass drove them, or another daemon): each is
   * forgotten here and returned, to be handled again, which finds it answered and archives it. Without it such a
   * file stayed in the work area until the daemon's next start.
   */
  takeFinished(): Promise<TakenBatch[]>;
  /**
   * Batches approved and not run yet whose file was given to `run` from outside the inbox: no file handling waits
   * for them, so `resumeUncertain` drives them (src/store/approvals.ts, "Who drives an approved batch").
   */
  approvedGiven(): Promise<Array<{ batchId: string; intakeId: string; source: string }>>;
  /** The store, queue and client, for the operator's endpoint (metrics, readiness). */
  readonly store: Store;
  readonly queue: RequestQueue;
  readonly client: BankClient;
  /** The process's bank gate (src/runner/bank-gate.ts): closed while the bank is unreachable or refuses the key. */
  readonly gate: BankGate;
  /**
   * A new API key (the daemon's reload, src/runner/reload.ts): sent from the next request on; if the bank refused the
   * old one, one waiting row asks again at once.
   */
  useApiKey(apiKey: string): void;
  /**
   * One read the bank must answer (a charge that does not exist): resolves when it answers in any way that shows it is
   * there and knows our key (404 included), rejects with a reason a person reads otherwise.
   */
  probeBank(signal: AbortSignal): Promise<void>;
  /**
   * The intake id and take time for a file given to `run` outside the inbox: those of its earlier taking when that
   * one was never answered (stopped or killed: resumed) or was approved (src/store/approvals.ts), else new ones.
   */
  givenIntake(source: string, sha256: string): Promise<{ id: string; takenAt: string }>;
  /**
   * Several daemons on this (PostgreSQL) store (src/store/leases.ts): this one's lease, and the file claims of the
   * shared inbox. Undefined on SQLite (one daemon).
   */
  readonly lease: DaemonLease | undefined;
  readonly claims: FileClaims | undefined;
  /** Resolves when the lease is lost (never on SQLite): the daemon then stops and exits with code 1. */
  readonly leaseLost: Promise<StoreError>;
  /**
   * Several daemons on this store: drives not-yet-started rows of big files that other live daemons drive
   * (src/runner/engine.ts `helpWithBatch`), batch after batch, until none is left or `signal` aborts. Resolves with
   * the number of rows driven. Nothing on SQLite.
   */
  helpOthers(signal: AbortSignal): Promise<number>;
  close(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
const KINDS = REGISTERED_KINDS as Readonly<Record<KindName, BatchKind<any>>>;

/** The registered kind called `name`, or undefined. */
// biome-ignore lint/suspicious/noExplicitAny: kinds of every row type
export function kindByName(name: string): BatchKind<any> | undefined {
  return kindFor(name);
}

/** Where answers to files of no known kind go: the folder they were dropped in, or `_unknown` for the inbox root. */
export const UNKNOWN_KIND_FOLDER = '_unknown';

function describeOutcomeCounts(counts: RowCounts): OutcomeCounts {
  const o: OutcomeCounts = {};
  for (const [state, n] of Object.entries(counts) as Array<[RowState, number]>) {
    if (n === 0) continue;
    // Certainly not sent: not `uncertain` ("cannot tell whether the bank acted"), which rows in flight stay.
    const outcome = state === 'pending' ? 'pending' : rowOutcome(state);
    o[outcome] = (o[outcome] ?? 0) + n;
  }
  return o;
}

/**
 * How long a command that ends (`run`, `retry`) lets rows wait for an unreachable bank before it leaves them
 * `waiting` and exits 3 (`bank.unreachable.runMaxWaitMs`); the daemon waits without a limit. Credentials refused
 * (401/403), such a command does not wait at all: nobody is there to fix them before it ends (exit 4).
 */
export function commandWaitForBank(options: RunnerOptions): WaitForBank {
  return { maxWaitMs: options.unreachable?.runMaxWaitMs ?? 300_000, waitForCredentials: false };
}

/** How the rows of a pipeline wait for the bank (`openPipeline`). */
export interface WaitForBank {
  /** How long rows wait for an unreachable bank before they are left `waiting`. @defaultValue no limit (daemon) */
  maxWaitMs?: number;
  /** Whether rows wait while the bank refuses remessa's credentials. @defaultValue true (daemon) */
  waitForCredentials?: boolean;
}

/**
 * Opens the store, the bank client (starting the embedded sandbox when configured) and the request queue.
 * `waitForBank.maxWaitMs`: how long rows wait for an unreachable bank before they are left `waiting` (`run`); absent,
 * they wait until it is back or the process stops (the daemon).
 */
export async function openPipeline(
  options: RunnerOptions,
  waitForBank: WaitForBank = {},
  /**
   * The command that opens it (the words of a refused daemon name's lock), and whether it took the lock of its name
   * itself (the daemon does, before anything else, to exit 2 when refused).
   */
  shared: { command: LockingCommand; nameLocked?: boolean },
): Promise<Pipeline> {
  const log = options.logger;
  const { folders } = options;
  await fs.mkdir(folders.data, { recursive: true });
  await fs.mkdir(folders.outbox, { recursive: true });
  let sandbox: RunningSandbox | undefined;
  let baseUrl: string;
  let apiKey: string;
  let clientOptions: Omit<BankClientOptions, 'baseUrl' | 'apiKey'>;
  let accountId: string;
  if (options.bank.embedded) {
    // Loaded only when embedded: the sandbox (fastify, PDF and barcode libraries) is ~40 MB and ~1 s of start-up
    // that `validate` and runs against a real bank do not need (docs/performance.md).
    const { startSandbox, SANDBOX_PUBLIC_API_KEY } = await import('../sandbox/server.js');
    const sandboxProfile = options.bank.sandboxProfile ?? options.bank.client?.profile ?? 'interface';
    sandbox = await startSandbox({
      dataFile: options.bank.sandboxDataFile ?? path.join(folders.data, 'sandbox.sqlite'),
      host: options.bank.sandboxHost ?? '127.0.0.1',
      port: options.bank.sandboxPort ?? 0,
      profile: sandboxProfile,
      // The interface does not show the payment path: one the user moved is served there too (delbank's is fixed).
      ...(sandboxProfile === 'interface' && options.bank.client?.paths?.pixPayment
        ? { pixPaymentPath: options.bank.client.paths.pixPayment }
        : {}),
      ...(options.bank.sandboxTls ? { tls: options.bank.sandboxTls } : {}),
      // The embedded sandbox logs only its warnings: one line per request would drown the daemon's own log.
      logger: log.child({ component: 'sandbox' }, { level: 'warn' }),
      // The daemon's receiver registers itself (src/runner/daemon.ts): a loopback url, with a key that may.
      ...(options.webhookReceiver ? { apiKeys: [EMBEDDED_WEBHOOK_API_KEY], webhookAllowLoopbackUrls: true } : {}),
    });
    log.info({ url: sandbox.url }, 'embedded sandbox started');
    baseUrl = sandbox.url;
    apiKey = SANDBOX_PUBLIC_API_KEY;
    clientOptions = options.bank.client ?? {};
    accountId = options.bank.accountId ?? 'sandbox';
  } else {
    ({ baseUrl, apiKey, ...clientOptions } = options.bank.client);
    accountId = options.bank.accountId;
  }
  // Retries live in the engine (one pure policy, 429s pause the whole group): the client makes one attempt.
  const retry: RetrySettings = {
    maxAttempts: clientOptions.maxAttempts ?? DEFAULT_ENGINE_RETRY.maxAttempts,
    baseDelayMs: clientOptions.baseDelayMs ?? DEFAULT_ENGINE_RETRY.baseDelayMs,
    maxDelayMs: clientOptions.maxDelayMs ?? DEFAULT_ENGINE_RETRY.maxDelayMs,
    maxRetryAfterMs: clientOptions.maxRetryAfterMs ?? DEFAULT_ENGINE_RETRY.maxRetryAfterMs,
  };
  const queueOptions = queueOptionsFromConfig({
    concurrency: options.queue.concurrency,
    maxRowsInFlight: options.queue.maxRowsInFlight,
    rateLimits: options.queue.rateLimits as Record<EndpointGroup, { requests: number; intervalMs: number }>,
    overallRateLimit: options.queue.overallRateLimit,
    adaptiveRateLimits: options.queue.adaptiveRateLimits,
  });
  const queue = new RequestQueue(queueOptions);
  queue.onCeilingLowered((group, requests) =>
    log.warn({ group, requests }, 'the bank keeps answering 429: rate limit of the group lowered for a while'),
  );
  const client = new BankClient({
    ...clientOptions,
    baseUrl,
    apiKey,
    accountId,
    maxAttempts: 1,
    connections: Math.max(clientOptions.connections ?? 8, options.queue.concurrency),
    logger: log.child({ component: 'bank' }),
    ...(options.metrics ? { onAttempt: (a) => options.metrics?.observeRequest(a) } : {}),
    // Every request passes the queue's gate as it leaves: the rate limits count real request starts.
    beforeSend: queue.beforeSend,
  });
  let store: Store;
  try {
    // The logger tells of the store's own work beside the rows (a PostgreSQL store's vacuums: src/store/vacuum.ts).
    store = await runnerStorePlace(options).open({ logger: log.child({ component: 'store' }) });
  } catch (err) {
    await client.close();
    await sandbox?.close();
    throw err;
  }
  // Several daemons may share a PostgreSQL store (src/store/leases.ts): this one registers its lease (one process per
  // name on a machine: the name's lock), and from then on drives only the rows it claims.
  let lease: DaemonLease | undefined;
  let leaseStore: Store | undefined;
  let nameLock: DataFolderLock | undefined;
  let claims: FileClaims | undefined;
  let onLost: (error: StoreError) => void = () => undefined;
  const leaseLost = new Promise<StoreError>((resolve) => {
    onLost = resolve;
  });
  if (isSharedStore(store)) {
    const name = options.daemon?.name ?? defaultDaemonName();
    const leaseMs = options.daemon?.leaseMs ?? DEFAULT_LEASE_MS;
    try {
      if (!shared.nameLocked)
        nameLock = await acquireDaemonNameLock(runnerStorePlace(options).where, name, {
          command: shared.command,
          locale: options.locale,
        });
      // The renewals on connections of their own (a pool busy with rows never delays them past the lease).
      leaseStore = await runnerStorePlace(options).open({ readonly: true });
      lease = await DaemonLease.register(store, {
        name,
        leaseMs,
        renewOn: leaseStore,
        logger: log,
        onLost: (error) => {
          log.error({ err: error, daemon: name }, 'daemon lease lost: sending nothing more; stopping (exit code 1)');
          onLost(error);
        },
      });
    } catch (err) {
      await nameLock?.release();
      await leaseStore?.close();
      await store.close();
      await client.close();
      await sandbox?.close();
      throw err;
    }
    claims = new FileClaims(store, lease);
    log.info({ daemon: name, leaseMs }, 'sharing the store with other daemons: lease registered');
  }
  let stopPauseWatch: (() => void) | undefined;
  if (options.queue.sharedRateLimits !== 'off' && store.driver.dialect === 'postgres') {
    // Several daemons on one store share the bank's key: the limits are counted in the database (issue 13).
    const shared = new SharedRateLimiter(store.driver, sharedRateOptions(queueOptions));
    shared.onError((err) => log.warn({ err }, 'shared rate limits: the database did not answer; retrying'));
    queue.useSharedLimits(shared);
    // A 429 of a group no limit counts, answered to another daemon, pauses it here too (src/queue/shared-rate.ts).
    stopPauseWatch = shared.watchPauses();
  }
  const unreachable = {
    retryDelaysMs: options.unreachable?.retryDelaysMs ?? [...DEFAULT_UNREACHABLE_DELAYS_MS],
    maxWaitMs: waitForBank.maxWaitMs,
  };
  const credentialsRefused = {
    retryEveryMs: options.credentialsRefused?.retryEveryMs ?? DEFAULT_CREDENTIALS_RETRY_EVERY_MS,
    waitForCredentials: waitForBank.waitForCredentials ?? true,
  };
  // The process's one gate (src/runner/bank-gate.ts), made here with its settings, before any batch uses it.
  const gate = bankGateOf(queue, unreachable, credentialsRefused);
  const common = {
    store,
    client,
    queue,
    accountId,
    retry,
    unreachable,
    credentialsRefused,
    logger: log,
    locale: options.locale,
  };

  /** The taking of a file, recorded once: its answers' names come from it (src/outbox/names.ts). */
  async function intakeOf(batch: TakenBatch): Promise<IntakeRecord> {
    const { meta } = batch.item;
    const intake = await registerIntake(store, {
      id: batch.item.id,
      folder: meta.kind ?? meta.folder ?? UNKNOWN_KIND_FOLDER,
      fileName: meta.name,
      source: meta.relativePath,
      contentSha256: batch.sha256,
      takenAt: meta.takenAt,
      answerName: answerNameFor(meta.name, batch.item.id),
    });
    // Read again after its file changed (FileChangedError): the new content is a new batch of the same taking.
    if (intake.contentSha256 !== batch.sha256 && intake.answerVersion === 0) {
      return retakeIntake(store, intake.id, batch.sha256);
    }
    return intake;
  }
  /** Whether a taking's source is a file given to `run` from outside the inbox (its absolute path, as recorded). */
  const givenOutside = (source: string) =>
    path.isAbsolute(source) && path.relative(folders.inbox, source).startsWith('..');
  /** Files parked because they wait for approval, by batch id (handled again once decided: `takeDecided`). */
  const waiting = new Map<string, TakenBatch>();
  /** Files parked with rows not finished, by batch id (handled again once they are: `takeFinished`). */
  const unfinished = new Map<string, TakenBatch>();

  async function reject(
    batch: TakenBatch,
    intake: IntakeRecord,
    error: { code: string; message: string; detail?: Message | undefined },
  ): Promise<BatchAnswer> {
    await checkUnchanged(batch);
    const file = await writeRejected({
      outboxDir: folders.outbox,
      kind: intake.folder,
      name: intake.answerName,
      fileName: batch.item.meta.name,
      // An answer worded by catalogue key (the intake's) is said in the locale; others as they were raised.
      error: { code: error.code, message: error.detail ? render(options.locale, error.detail) : error.message },
      locale: options.locale,
    });
    await markAnswered(store, intake.id, { type: 'rejected', version: 1, changes: 0, at: new Date().toISOString() });
    log.warn({ file: batch.item.meta.relativePath, code: error.code, answer: file }, 'file rejected as a whole');
    return { state: 'done', answer: 'rejected', counts: {}, file };
  }

  /** The files folder of a batch: `outbox/<kind>/<answer name>/`. */
  async function filesDirOf(batchId: string, kind: KindName, fileName: string): Promise<string> {
    const name = (await intakeForBatch(store, batchId))?.answerName ?? stemOf(fileName);
    return answerPaths(folders.outbox, kind, name).filesDir;
  }

  /**
   * Writes the first answer of every finished batch that has none yet, and a new version of every answer whose rows
   * changed since it was written (src/store/intakes.ts): also those a crash left stale.
   */
  async function answerPending(): Promise<void> {
    for (const intake of await intakesToAnswer(store)) {
      const batch = await store.getBatch(intake.batchId!);
      const kind = batch && KINDS[batch.kind];
      if (!batch || !kind) continue;
      try {
        const written = await answerIntake(store, intake.id, {
          outboxDir: folders.outbox,
          kind,
          locale: options.locale,
          results: options.results,
        });
        if (written.written) {
          log.info(
            { batch: intake.fileName, version: written.version, answer: written.resultPath },
            written.version > 1 ? 'rows changed since the answer: new version written' : 'batch answered',
          );
        }
      } catch (err) {
        log.error({ err, batch: intake.fileName }, 'could not write the answer; tried again on the next pass');
      }
    }
  }

  async function processTaken(
    batch: TakenBatch,
    opts: { signal: AbortSignal; progress?: Progress | undefined },
  ): Promise<BatchAnswer> {
    const { meta } = batch.item;
    const intake = await intakeOf(batch);
    if (intake.answerType === 'rejected') {
      // Answered before a crash that came before the archive: the answer stands.
      const file = answerPaths(folders.outbox, intake.folder, intake.answerName).rejectedPath;
      return { state: 'done', answer: 'rejected', counts: {}, file };
    }
    // The intake answered the file as a whole (a link, a special or unreadable file, a cut-off upload): never read.
    if (meta.rejection) return reject(batch, intake, meta.rejection);
    if (meta.kind === null) {
      // A meta written before the detail existed (a file taken by an older version) still has its English reason.
      const said = meta.unknownKindDetail ?? msg('UNKNOWN_KIND', { got: JSON.stringify(meta.name) });
      // A sheet whose header a kind reads is told which kind it is, and where it goes.
      const fits = await kindsReading(options, batch.item.file, meta.name);
      const detail =
        fits.length === 0
          ? said
          : msg('UNKNOWN_KIND.headerOf', {
              said,
              kinds: fits.join(t(options.locale, 'LIST.or')),
              folders: fits.map((k) => `inbox/${k}/`).join(t(options.locale, 'LIST.or')),
              names: fits.map((k) => `${k}-${meta.name}`).join(t(options.locale, 'LIST.or')),
            });
      return reject(batch, intake, {
        code: 'UNKNOWN_KIND',
        message:
          fits.length === 0 && meta.unknownKindReason ? meta.unknownKindReason : t('en', detail.key, detail.params),
        ...(meta.unknownKindDetail || !meta.unknownKindReason || fits.length > 0 ? { detail } : {}),
      });
    }
    const kindName = meta.kind;
    const kind = KINDS[kindName];
    let reader: BatchReader | undefined;
    const batchId = await batchIdForIntake(store, intake);
    const known = await store.getBatch(batchId);
    // A batch whose rows are all stored needs no reading (same content dropped again, or resumed after a crash).
    if (!known || known.status === 'ingesting') {
      try {
        reader = await readBatch(batch.item.file, readOptions(options, kindName, meta.name));
      } catch (err) {
        if (err instanceof InputError) {
          return reject(batch, intake, { code: err.code, message: err.describe(options.locale) });
        }
        throw err;
      }
    }
    let result: ProcessBatchResult;
    const controls = options.controls;
    // The maker, for approval.forbidSameAsOwner: the OS owner of the file as dropped, read when it was taken (kept when
    // it is held); unknown when it is remessa's own account (./approval.ts makerOf).
    const owner = controls?.approvalKinds.includes(kindName) ? await makerOf(batch.item) : null;
    try {
      // What was hashed and opened must still be what was taken before a row is stored or sent.
      await checkUnchanged(batch);
      const run = (input: BatchInput | undefined) =>
        processBatch({
          ...common,
          kind: withRowLimit(kind, controls),
          gate: (b) => gateBatch(store, b.id, controls, owner, new Date(), options.locale),
          batchId,
          fileName: meta.name,
          input,
          filesDir: answerPaths(folders.outbox, kindName, intake.answerName).filesDir,
          policy: options.policy[kindName],
          signal: opts.signal,
          onProgress: opts.progress
            ? (p) =>
                opts.progress?.update(
                  p.phase === 'run' ? p.finished : 0,
                  p.phase === 'run' ? p.toRun : undefined,
                  p.batchId,
                )
            : undefined,
        });
      result = await run(reader && batch.unchanged ? checkedAtEnd(reader, batch) : reader);
      if (result.held && !opts.signal.aborted) {
        const written = await writePreview(store, batchId, {
          outboxDir: folders.outbox,
          name: intake.answerName,
          locale: options.locale,
          // Where findApprovalMarker looks for this file's marker when the approvers have their own folder.
          markersIn: controls?.markersDir && path.join(controls.markersDir, path.dirname(meta.relativePath)),
          // Else beside the file in the inbox, unless a marker there would be refused (whoever writes it).
          inboxRefusesMarkers: controls?.markersDir
            ? undefined
            : (
                await unsafeMarkerFolder(
                  folders.inbox,
                  path.join(folders.inbox, meta.relativePath),
                  -1,
                  process.getuid?.() ?? null,
                )
              )?.dir,
          results: options.results,
        });
        log.info({ file: meta.relativePath, preview: written }, 'batch waits for approval: preview written');
        // A team that approves by file may have dropped the marker already, after an earlier run's preview (one older
        // than the first preview is refused: src/store/approvals.ts rule 4).
        const rules = { forbidSameAsOwner: controls?.forbidSameAsOwner ?? true, makers: controls?.makers ?? [] };
        // A marker without a name is refused once it has stayed so as long as a file must to be taken.
        const emptyAfterMs = options.intake.stableMs;
        const places = { ...folders, markers: controls?.markersDir };
        if (await applyApprovalMarker(store, batchId, meta, places, rules, log, options.locale, emptyAfterMs))
          result = await run(undefined);
      }
    } catch (err) {
      if (err instanceof BatchRejectedError || err instanceof InputError) {
        const message = err instanceof InputError ? err.describe(options.locale) : err.message;
        return reject(batch, intake, { code: err.code, message });
      }
      throw err;
    } finally {
      reader?.close();
    }
    const counts = describeOutcomeCounts(result.counts);
    if (result.held) {
      if (!opts.signal.aborted) waiting.set(batchId, batch);
      return {
        state: 'parked',
        answer: 'preview',
        counts,
        file: await currentPreviewPath(folders.outbox, kindName, intake.answerName),
      };
    }
    if (!result.complete) {
      if (result.credentialsRefused && !credentialsRefused.waitForCredentials && !opts.signal.aborted) {
        // `run`, the bank refusing remessa's key: nobody waits for a person to fix it, so the file is answered now
        // with its rows `waiting` and why (BANK_CREDENTIALS_REFUSED): finance sees it in the morning, not nothing. The
        // rows are sent by the next run (or the daemon) with their keys, and the answer gets its next version then
        // (src/store/intakes.ts: a batch answered while unfinished is still resumed, and its file given again finds it).
        await checkUnchanged(batch);
        const written = await answerIntake(store, intake.id, {
          outboxDir: folders.outbox,
          kind,
          locale: options.locale,
          results: options.results,
        });
        log.warn(
          { file: meta.relativePath, counts, answer: written.resultPath },
          'bank refused credentials: file answered with its rows waiting',
        );
        return { state: 'parked', answer: 'result', counts, file: written.resultPath, credentialsRefused: true };
      }
      if (!opts.signal.aborted) unfinished.set(batchId, batch);
      return { state: 'parked', answer: 'result', counts, file: '' };
    }
    unfinished.delete(batchId);
    // An answer never covers part of a file: one that grew meanwhile is read again (its rows already sent are known
    // by their natural keys, so they are answered as duplicates of themselves and never sent twice).
    await checkUnchanged(batch);
    const written = await answerIntake(store, intake.id, {
      outboxDir: folders.outbox,
      kind,
      locale: options.locale,
      results: options.results,
    });
    if (written.written) log.info({ file: meta.relativePath, counts, answer: written.resultPath }, 'batch answered');
    // The last progress line counts every row the answer holds: those ended at ingestion (rejected, duplicate) too,
    // not only the rows this run drove.
    opts.progress?.settle(Object.values(result.counts).reduce((sum, n) => sum + n, 0));
    // Rows of this batch that other files' answers show as their originals (duplicates answered while these were
    // not finished): those answers get their new version now, not at the next retry pass.
    await answerPending();
    const duplicatesNotSucceeded = counts.duplicate ? await store.duplicatesNotSucceeded(batchId) : 0;
    return { state: 'done', answer: 'result', counts, file: written.resultPath, duplicatesNotSucceeded };
  }

  return {
    bankUrl: baseUrl,
    workDir: path.join(folders.data, 'work'),
    store,
    queue,
    client,
    gate,
    useApiKey(key) {
      client.useApiKey(key);
      log.info({ credentialsRefused: gate.credentialsRefused }, 'new API key taken; sent from the next request on');
      if (gate.credentialsRefused) gate.probeNow();
    },
    async probeBank(signal) {
      try {
        await client.charges.get('remessa-readiness-probe', { signal });
      } catch (err) {
        if (err instanceof NotFoundError) return;
        if (err instanceof ServiceError) {
          throw new Error(`${err.code}${err.status !== undefined ? ` (HTTP ${err.status})` : ''}: ${err.message}`);
        }
        throw err;
      }
    },
    processBatch: processTaken,
    handleBatch: async (batch, opts) => (await processTaken(batch, opts)).state,
    async resumeUncertain(signal, batchIds, progressFor) {
      // First what a crash left stale (a bank that stays down must not keep those answers wrong), then the retries.
      await answerPending();
      const resumed: ResumedBatch[] = [];
      const { results, errors, needFile } = await resumeUnfinishedBatches({
        ...common,
        signal,
        ...(batchIds ? { batchIds } : {}),
        kindFor: (name) => kindByName(name),
        filesDirFor: (b) => filesDirOf(b.id, b.kind, b.fileName),
        policyFor: (b) => options.policy[b.kind],
        gate: resumeGate(store, options.controls, options.locale, givenOutside),
        // Another live daemon holds the batch's file: it drives the batch (one approval gate, one driver per file).
        ...(claims ? { skip: (b: BatchRecord) => claims!.heldElsewhere(b.id) } : {}),
        ...(progressFor
          ? {
              progressFor: (b: BatchRecord) => {
                const progress = progressFor(b);
                return progress
                  ? (p: BatchProgress) =>
                      progress.update(p.phase === 'run' ? p.finished : 0, p.phase === 'run' ? p.toRun : undefined, b.id)
                  : undefined;
              },
            }
          : {}),
      });
      for (const r of results) {
        const counts = describeOutcomeCounts(r.counts);
        resumed.push({ batch: r.batch, counts, state: r.complete ? 'done' : 'parked', answer: null, error: null });
      }
      for (const e of errors) {
        log.error({ err: e.error, batch: e.batch.fileName }, 'could not resume batch');
        resumed.push({ batch: e.batch, counts: {}, state: 'error', answer: null, error: e.error });
      }
      for (const b of needFile) resumed.push({ batch: b, counts: {}, state: 'needs-file', answer: null, error: null });
      // An approved file given from outside the inbox that the gate held again (its approval voided): no handling of
      // its file writes its new preview (an inbox file's does), so it is written here, or nobody could decide again.
      for (const r of resumed) {
        if (r.state !== 'parked') continue;
        const approval = await getApproval(store, r.batch.id);
        if (approval?.state !== 'awaiting' || approval.previewAt !== null) continue;
        const intake = await intakeForBatch(store, r.batch.id);
        if (!intake || !givenOutside(intake.source)) continue;
        r.preview = await writePreview(store, r.batch.id, {
          outboxDir: folders.outbox,
          name: intake.answerName,
          locale: options.locale,
          results: options.results,
        });
        log.info({ file: intake.source, preview: r.preview }, 'batch waits for approval again: preview written');
      }
      crashPoint('after-resume');
      // Every batch whose rows changed gets its next answer version (never an overwrite).
      await answerPending();
      for (const r of resumed) {
        if (r.state !== 'done') continue;
        const intake = await intakeForBatch(store, r.batch.id);
        if (intake && intake.answerVersion > 0) {
          r.answer = answerPaths(folders.outbox, intake.folder, intake.answerName, intake.answerVersion).resultPath;
        }
        if (r.counts.duplicate) r.duplicatesNotSucceeded = await store.duplicatesNotSucceeded(r.batch.id);
      }
      return resumed;
    },
    async givenIntake(source, sha256) {
      // After an approval, the same file is the approved taking, answered or not (src/store/approvals.ts).
      const earlier =
        (await unansweredIntakeOf(store, source, sha256)) ?? (await approvedIntakeOf(store, source, sha256));
      return earlier
        ? { id: earlier.id, takenAt: earlier.takenAt }
        : { id: newWorkId(), takenAt: new Date().toISOString() };
    },
    async takeFinished() {
      const finished: TakenBatch[] = [];
      for (const [id, batch] of [...unfinished]) {
        const counts = await store.countRows(id);
        if (counts.pending + counts.in_flight + counts.waiting > 0) continue;
        if (unfinished.delete(id)) finished.push(batch);
      }
      return finished;
    },
    async approvedGiven() {
      return (await approvedNotRun(store)).filter((b) => givenOutside(b.source));
    },
    async takeDecided() {
      const decided: TakenBatch[] = [];
      for (const [id, batch] of [...waiting]) {
        const status = (await store.getBatch(id))?.status;
        const markersDir = options.controls?.markersDir ?? folders.inbox;
        if (status === 'awaiting_approval' && !(await findApprovalMarker(markersDir, batch.item.meta))) continue;
        if (waiting.delete(id)) decided.push(batch);
      }
      // Markers of files decided already approve nothing: archived with a note, not left to a later file's preview.
      if (options.controls) {
        const places = { ...folders, markers: options.controls.markersDir };
        await archiveLateMarkers(store, places, log, options.locale).catch((err: unknown) =>
          log.warn({ err }, 'could not archive approval markers that came after their decision'),
        );
      }
      return decided;
    },
    lease,
    claims,
    leaseLost,
    async helpOthers(signal) {
      let driven = 0;
      for (;;) {
        if (signal.aborted) return driven;
        const batches = await batchesToHelp(store);
        let now = 0;
        for (const b of batches) {
          const kind = kindByName(b.kind);
          if (!kind || signal.aborted) continue;
          const rows = await helpWithBatch({
            ...common,
            signal,
            kind,
            batchId: b.id,
            fileName: b.fileName,
            filesDir: await filesDirOf(b.id, kind.name, b.fileName),
          });
          if (rows > 0) log.info({ batch: b.fileName, rows }, 'helped another daemon with its file');
          now += rows;
        }
        if (now === 0) return driven;
        driven += now;
      }
    },
    async close() {
      await client.close().catch((err) => log.warn({ err }, 'closing the bank client failed'));
      // What this daemon held is let go at once (a lost lease has nothing left to let go).
      await lease?.release().catch((err) => log.warn({ err }, 'releasing the daemon lease failed'));
      stopPauseWatch?.();
      await leaseStore?.close();
      await store.close();
      await nameLock?.release();
      await sandbox?.close();
    },
  };
}

/**
 * Writes the batch's answer again from the store, after rows of an answered batch changed: resumed by a later run,
 * retried (`remessa retry`) or settled by a person (`remessa resolve`). The one place those go through, so that how a
 * stale answer is replaced is decided here only. Returns the path of the result file.
 */
export async function reanswerBatch(
  store: Store,
  batchId: string,
  outboxDir: string,
  forms: Pick<AnswerIntakeOptions, 'locale' | 'results'> = {},
): Promise<string> {
  const batch = await store.getBatch(batchId);
  if (!batch) throw new RemessaError('OUTBOX_NO_BATCH', `No batch ${batchId} in the store`);
  const intake = await intakeForBatch(store, batchId);
  if (!intake) throw new RemessaError('OUTBOX_NO_BATCH', `Batch ${batchId} has no taking to answer`);
  // A new version when its rows changed since the last one (src/outbox/result.ts): an answer is never overwritten.
  const written = await answerIntake(store, intake.id, { outboxDir, kind: KINDS[batch.kind], ...forms });
  return written.resultPath;
}

/** Outcomes that end a row for good; anything else (uncertain, waiting, ...) is left for a later run or a person. */
const SETTLED_OUTCOMES: ReadonlySet<string> = new Set(['succeeded', 'duplicate', 'rejected', 'failed']);

/** Whether some row of the counts is not settled yet. */
export function hasUnsettled(counts: OutcomeCounts): boolean {
  return Object.entries(counts).some(([outcome, n]) => (n ?? 0) > 0 && !SETTLED_OUTCOMES.has(outcome));
}

/**
 * The reader's rows, then a last check that the file is still what was taken, after its last byte was read and
 * before any row is sent (the engine sends only once every row is stored). A file that changed while it was read
 * ends its rows with an InputError: the engine then gives up the batch with nothing sent (store.rejectBatch), and
 * the rejection's own check raises FileChangedError, so the file is read again rather than answered.
 */
function checkedAtEnd(reader: BatchReader, batch: TakenBatch): BatchInput {
  const rows = reader.rows;
  return {
    dialect: reader.dialect,
    header: reader.header,
    rows: (async function* () {
      yield* rows;
      if (batch.unchanged && !(await batch.unchanged())) {
        throw new InputError(
          'FILE_CHANGED_WHILE_READ',
          t('en', 'FILE_CHANGED_WHILE_READ'),
          { file: batch.item.meta.name },
          { detail: msg('FILE_CHANGED_WHILE_READ') },
        );
      }
    })(),
  };
}

/** Throws FileChangedError when the taken file is no longer what was taken (its writer was still at work). */
async function checkUnchanged(batch: TakenBatch): Promise<void> {
  if (batch.unchanged && !(await batch.unchanged())) throw new FileChangedError(batch.item.meta.relativePath);
}

/**
 * Whether every row of a batch answered succeeded (`run` and `retry` exit 0; README: "or are duplicates of rows that
 * did"): its counts, and its duplicates, each done only when its original succeeded, which the counts do not say.
 */
export function allSucceeded({
  counts,
  duplicatesNotSucceeded = 0,
}: {
  counts: OutcomeCounts;
  duplicatesNotSucceeded?: number | undefined;
}): boolean {
  return (
    duplicatesNotSucceeded === 0 &&
    (counts.rejected ?? 0) === 0 &&
    (counts.failed ?? 0) === 0 &&
    (counts.uncertain ?? 0) === 0 &&
    (counts.waiting ?? 0) === 0 &&
    (counts.pending ?? 0) === 0
  );
}

function formatCounts(counts: OutcomeCounts, locale: Locale): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => (n ?? 0) > 0)
    .map(([k, n]) => `${k} ${n}`);
  return parts.length > 0 ? parts.join(', ') : t(locale, 'STATUS.noRows');
}

export interface RunOnceOptions {
  /**
   * How long to wait for the data folder when another process (a daemon, another run) drives it, in milliseconds;
   * `Infinity` waits until it is free. @defaultValue 0 (refused at once, exit 2)
   */
  waitLockMs?: number;
}

/**
 * `remessa run [FILE...]`: with files, processes each (a file inside the inbox is taken and archived as the daemon
 * does; one elsewhere is read where it is) and writes its answer to the outbox; without, resumes the work area,
 * takes everything waiting in the inbox (files
 * still being written are awaited) and processes it like the daemon does. Uncertain rows of earlier batches are
 * retried first. Exit 0 only when every row succeeded.
 */
export async function runOnce(
  options: RunnerOptions,
  files: readonly string[] = [],
  kind?: KindName,
  run: RunOnceOptions = {},
): Promise<number> {
  const log = options.logger;
  // One writer per data folder (./lock.ts): refused at once (DataFolderLockedError, exit 2), or waited for.
  const lock = await acquireDataFolderLock(options.folders.data, {
    taker: { command: 'run', locale: options.locale },
    waitMs: run.waitLockMs ?? 0,
    onWait: (holder) =>
      log.info({ holder: describeHolder(holder) }, 'waiting for the data folder: another process drives it'),
  });
  try {
    // One inbox, one store (./inbox-store.ts): a SQLite run beside the daemons of a PostgreSQL store is refused.
    claimInboxForStore(options.folders.inbox, runnerStorePlace(options), { command: 'run', locale: options.locale });
  } catch (err) {
    await lock.release();
    throw err;
  }
  let pipeline: Pipeline;
  try {
    pipeline = await openPipeline(options, commandWaitForBank(options), { command: 'run' });
  } catch (err) {
    log.error({ err }, 'cannot start');
    await lock.release();
    return EXIT_CANNOT_RUN;
  }
  const abort = new AbortController();
  // Every row waiting for a queue slot listens to the stop signal: far more than Node's default warning threshold.
  setMaxListeners(0, abort.signal);
  const onSignal = () => abort.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  const stream = options.progressStream ?? process.stderr;
  const interactive = isInteractive(stream);
  let ok = true;
  let unsettled = false;
  // A file given that is not there is a bad argument: the run could not do what it was asked (exit 2).
  let missing = false;
  const report = (name: string, answer: BatchAnswer) => {
    if (answer.answer === 'rejected') ok = false;
    if (answer.credentialsRefused) {
      unsettled = true;
      ok = false;
      out(options).write(
        `${name}: ${formatCounts(answer.counts, options.locale)} -> ${answer.file} ` +
          `(${t(options.locale, 'RUN.credentialsRefused', { count: answer.counts.waiting ?? 0 })})\n`,
      );
      return;
    }
    if (!allSucceeded(answer)) ok = false;
    if (answer.state === 'parked' || hasUnsettled(answer.counts)) unsettled = true;
    if (answer.answer === 'preview') {
      unsettled = true;
      out(options).write(`${name}: ${t(options.locale, 'RUN.waitsApproval', { preview: answer.file })}\n`);
      return;
    }
    const waiting = answer.counts.waiting ?? 0;
    const parked = t(options.locale, waiting > 0 ? 'RUN.waitingRows' : 'RUN.parked', { count: waiting });
    // `rejected` is the batch's status (a stable value, as the row states in the counts), not a sentence.
    out(options).write(
      `${name}: ${answer.answer === 'rejected' ? 'rejected' : formatCounts(answer.counts, options.locale)}` +
        `${answer.state === 'parked' ? ` (${parked})` : ` -> ${answer.file}`}\n`,
    );
  };
  try {
    // A file given again after a stop or a crash resumes its unanswered batch (looked up before the retries below
    // finish and answer that batch, which would make it look like a new taking).
    const given = new Map<string, { id: string; takenAt: string; sha256: string }>();
    for (const file of files) {
      const abs = path.resolve(file);
      if (!path.relative(options.folders.inbox, abs).startsWith('..')) continue;
      const sha256 = await sha256File(abs).catch(() => undefined);
      if (sha256 !== undefined) given.set(abs, { ...(await pipeline.givenIntake(abs, sha256)), sha256 });
    }
    // Approved files given to an earlier run from outside the inbox are paid by the resume below: said here, with
    // their answers, as if given again (those given again now are said by their own turn below).
    const givenTakings = new Set([...given.values()].map((g) => g.id));
    const approved = new Map(
      (await pipeline.approvedGiven()).filter((b) => !givenTakings.has(b.intakeId)).map((b) => [b.batchId, b.source]),
    );
    const resumed = await pipeline.resumeUncertain(abort.signal);
    for (const r of resumed) {
      const source = approved.get(r.batch.id);
      if (source === undefined) continue;
      if (r.preview !== undefined) {
        report(source, { state: 'parked', answer: 'preview', counts: r.counts, file: r.preview });
      } else if (r.state === 'done' || r.state === 'parked') {
        report(source, {
          state: r.state,
          answer: 'result',
          counts: r.counts,
          file: r.answer ?? '',
          ...(r.duplicatesNotSucceeded === undefined ? {} : { duplicatesNotSucceeded: r.duplicatesNotSucceeded }),
        });
      } else {
        // Logged by the resume (error) or not driven (its rows not all stored): unsettled, the next run tries again.
        unsettled = true;
      }
    }
    if (files.length > 0) {
      for (const file of files) {
        if (abort.signal.aborted) break;
        const abs = path.resolve(file);
        const inInbox = !path.relative(options.folders.inbox, abs).startsWith('..');
        // In the inbox, a link is never followed (as the daemon does: it answers it without reading its target).
        const stat = await (inInbox ? fs.lstat(abs) : fs.stat(abs)).catch(() => undefined);
        if (!stat?.isFile()) {
          out(options).write(`${file}: ${t(options.locale, !stat ? 'RUN.notFound' : 'RUN.notRegular')}\n`);
          missing = true;
          continue;
        }
        const k = kind ?? kindOfGivenFile(abs);
        const name = path.basename(abs);
        const meta: WorkMeta = {
          kind: k ?? null,
          name,
          folder: k ?? null,
          relativePath: file,
          takenAt: new Date().toISOString(),
        };
        const earlier = given.get(abs);
        const sha256 = await sha256File(abs);
        if (!k) {
          meta.unknownKindDetail = msg('UNKNOWN_KIND.given', { got: JSON.stringify(name) });
          meta.unknownKindReason = t('en', 'UNKNOWN_KIND.given', { got: JSON.stringify(name) });
        }
        // A file given from the inbox is taken like the daemon takes it (moved to the work area, archived once
        // answered), so it is not found and answered again later; a file elsewhere is read where it is.
        let item: WorkItem | undefined;
        if (!inInbox) {
          // Read where it is, as the taking found above when its bytes did not change since.
          const intake = earlier?.sha256 === sha256 ? earlier : await pipeline.givenIntake(abs, sha256);
          meta.relativePath = abs;
          meta.takenAt = intake.takenAt;
          item = { id: intake.id, dir: path.dirname(abs), file: abs, meta };
        } else {
          const { takenAt: _, ...rest } = meta;
          item = await takeIntoWorkArea(pipeline.workDir, abs, rest);
          if (!item) {
            out(options).write(`${file}: ${t(options.locale, 'RUN.takenMeanwhile')}\n`);
            continue;
          }
        }
        const batch: TakenBatch = { item, sha256, stem: stemOf(name) };
        const progress = createProgress({ stream, locale: options.locale });
        progress.start(`${k ?? '?'} ${name}`, interactive ? await estimateRows(item.file) : undefined);
        try {
          const answer = await pipeline.processBatch(batch, { signal: abort.signal, progress });
          report(file, answer);
          if (inInbox && answer.state === 'done') await archiveWorkItem(options.folders.archive, item, batch.sha256);
        } finally {
          progress.stop();
        }
      }
    } else {
      const intake = new Intake(
        {
          inboxDir: options.folders.inbox,
          workDir: pipeline.workDir,
          archiveDir: options.folders.archive,
          stableMs: options.intake.stableMs,
          cutOffMs: options.intake.cutOffMs,
          requireDoneMarker: options.intake.requireDoneMarker,
          maxConcurrentFiles: 1,
          logger: log,
        },
        async (batch, signal) => {
          const progress = createProgress({ stream, locale: options.locale });
          progress.start(
            `${batch.item.meta.kind ?? '?'} ${batch.item.meta.name}`,
            interactive ? await estimateRows(batch.item.file) : undefined,
          );
          try {
            const answer = await pipeline.processBatch(batch, { signal, progress });
            report(batch.item.meta.relativePath, answer);
            return answer.state;
          } finally {
            progress.stop();
          }
        },
      );
      abort.signal.addEventListener('abort', () => void intake.stop(), { once: true });
      await intake.drain();
      // A file that could not be handled stays in the work area, unanswered: the next run takes it again.
      if (intake.counts.failed > 0) unsettled = true;
      if (intake.counts.done + intake.counts.parked + intake.counts.failed === 0 && approved.size === 0) {
        out(options).write(`${t(options.locale, 'RUN.nothingWaiting')}\n`);
      }
    }
    if (missing) return EXIT_CANNOT_RUN;
    // The bank refuses remessa's key (this run's files, or the earlier batches it resumed): nothing more was sent.
    if (pipeline.gate.credentialsRefused) return EXIT_CREDENTIALS_REFUSED;
    if (unsettled) return EXIT_UNSETTLED;
    return ok ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
  } catch (err) {
    log.error({ err }, 'run failed');
    return EXIT_CANNOT_RUN;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await pipeline.close();
    await lock.release();
  }
}

export interface ReconcileCommandOptions extends RunOnceOptions {
  /** First creation date (yyyy-mm-dd) of the charges to list. @defaultValue the oldest open charge's */
  since?: string | undefined;
  /** Last creation date (yyyy-mm-dd). @defaultValue today (UTC) */
  until?: string | undefined;
}

/**
 * `remessa reconcile [--since DATE] [--until DATE]`: one retorno pass with reconciliation (src/runner/retorno.ts),
 * under the data folder's lock like `run`. Exit 0 done; 1 some look-up failed (the rest was reconciled); 2 could not
 * run.
 */
export async function runReconcile(options: RunnerOptions, run: ReconcileCommandOptions = {}): Promise<number> {
  const log = options.logger;
  const lock = await acquireDataFolderLock(options.folders.data, {
    taker: { command: 'reconcile', locale: options.locale },
    waitMs: run.waitLockMs ?? 0,
    onWait: (holder) =>
      log.info({ holder: describeHolder(holder) }, 'waiting for the data folder: another process drives it'),
  });
  let pipeline: Pipeline;
  try {
    pipeline = await openPipeline(options, {}, { command: 'reconcile' });
  } catch (err) {
    log.error({ err }, 'cannot start');
    await lock.release();
    return EXIT_CANNOT_RUN;
  }
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  process.once('SIGTERM', onSignal);
  process.once('SIGINT', onSignal);
  try {
    const result = await retornoPass({
      store: pipeline.store,
      client: pipeline.client,
      queue: pipeline.queue,
      outboxDir: options.folders.outbox,
      logger: log,
      reconcile: true,
      since: run.since,
      until: run.until,
      eventSettleMs: options.reconcile?.eventSettleMs ?? 0,
      signal: abort.signal,
      locale: options.locale,
      results: options.results,
    });
    out(options).write(
      `${t(options.locale, 'RECONCILE.summary', {
        changes: result.changes,
        listed: result.chargesListed,
        lookedUp: result.lookedUp,
        failed: result.lookupErrors > 0 ? result.lookupErrors : undefined,
        events: result.eventsApplied,
      })}\n`,
    );
    for (const file of result.files) out(options).write(`retorno: ${file}\n`);
    return result.lookupErrors > 0 ? EXIT_NOT_ALL_SUCCEEDED : EXIT_OK;
  } catch (err) {
    log.error({ err }, 'reconciliation failed');
    return EXIT_CANNOT_RUN;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
    await pipeline.close();
    await lock.release();
  }
}

/**
 * The API key with which the daemon registers its receiver with the embedded sandbox (the public test key may not
 * configure webhooks, spec 5). Fixed, so each start finds and updates the registrations of the last one. Known only
 * to the embedded sandbox, which listens on loopback.
 */
export const EMBEDDED_WEBHOOK_API_KEY = 'remessa-embedded-webhook-registration';
