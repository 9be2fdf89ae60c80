/**
 * `remessa daemon`: watch the inbox until SIGTERM or SIGINT.
 *
 * Life of the process:
 *
 *     starting --(data folder lock taken, ./lock.ts; else exit 2 naming the holder)--> opening
 *     opening --(bank ready: embedded sandbox started or URL set; store open)--> receiving
 *     receiving --(webhook receiver listening, when on; registered with the embedded sandbox)--> resuming
 *     resuming --(batches left in the work area; uncertain rows of earlier batches, again every 5 minutes)--> watching
 *     watching --(SIGTERM / SIGINT)--> stopping --(intake closed; in-flight rows finished or parked)--> exit 0
 *     watching --(SIGHUP, or the config file changed)--> reload (./reload.ts) --> watching
 *     watching --(every reconcile.applyEventsEverySeconds / reconcile.everyMinutes)--> a retorno pass (./retorno.ts)
 *     watching --(every approval.pollMs: a file that waited for approval is decided)--> handled again --> watching
 *     watching --(every approval.pollMs: an .approved marker of a file decided already)--> archived, noted --> watching
 *     watching --(every approval.pollMs: a file parked with rows left waiting, now all ended by a later pass)-->
 *                handled again (answered already) --> archived --> watching
 *     watching --(several daemons on one PostgreSQL store: its lease lost, src/store/leases.ts)--> stopping --> exit 1
 *
 * A reload applies the settings that only change how files are read and judged (mappings, defaults, policy, csv,
 * log level) from the next file taken on; a bad configuration is refused and logged, the running one kept; settings
 * holding open resources (folders, bank, sandbox, intake, queue) need a restart, and a reload says so.
 *
 * While the bank cannot be reached (certainly nothing sent), rows wait (`waiting`) and their files stay unanswered;
 * one row tries again on the schedule `bank.unreachable.retryDelaysMs` and, once it gets through, every waiting row
 * goes (src/runner/bank-gate.ts). The daemon waits so without limit; a stop leaves them `waiting` for the next start.
 * While the bank refuses remessa's credentials (401/403), the same: rows wait (BANK_CREDENTIALS_REFUSED), one asks
 * again every `bank.credentialsRefused.retryEveryMs`, and at once after a reload that brings a new API key; the
 * metric `remessa_bank_credentials_refused` is 1 meanwhile.
 *
 * What must hold: after the signal no new file is taken and no new row starts; a row whose request may have left is
 * never abandoned silently (the engine finishes it or parks it with its intent recorded), so the next start resumes
 * it. A second signal while stopping does not cut that short: a third one exits at once (the store is still safe:
 * every intent is committed before its request leaves). The webhook receiver (src/webhooks/receiver.ts) answers 2xx
 * only for an event already committed, and closes after the intake: a delivery it did not answer is retried by the
 * bank, with the same event id, after the restart.
 */
import { randomBytes } from 'node:crypto';
import { unwatchFile, watchFile } from 'node:fs';
import path from 'node:path';
import { BankClient } from '../bank/client.js';
import { RemessaError } from '../errors.js';
import { Intake } from '../intake/index.js';
import type { Logger } from '../log.js';
import { Metrics } from '../metrics.js';
import type { BatchRecord } from '../store/index.js';
import { defaultDaemonName, listDaemons } from '../store/leases.js';
import { runnerStorePlace } from '../store/place.js';
import { checkStoreWritable, storeSnapshot } from '../store/snapshot.js';
import { type RunningWebhookReceiver, startWebhookReceiver } from '../webhooks/receiver.js';
import { ensureRegistered } from '../webhooks/registration.js';
import { EMBEDDED_WEBHOOK_API_KEY, openPipeline, type Pipeline, type RunnerOptions } from './commands.js';
import { claimInboxForStore, SHARED_WORK_DIR } from './inbox-store.js';
import { acquireDaemonNameLock, acquireDataFolderLock, type DataFolderLock } from './lock.js';
import { type RunningOpsServer, startOpsServer } from './ops-server.js';
import { LogProgress } from './progress.js';
import { type ConfigReloader, type ReloadHooks, reloadConfig } from './reload.js';
import { retornoPass, retornoSnapshot } from './retorno.js';
import { notifySystemd } from './sd-notify.js';

export interface DaemonDeps {
  /** Resolves when the daemon should stop. @defaultValue the first SIGTERM or SIGINT */
  stopSignal?: Promise<unknown>;
  /** Called once the inbox is watched (tests, readiness notification). */
  onReady?: () => void;
  /**
   * How often rows left uncertain are retried while the daemon runs, in milliseconds; 0 = only at start.
   * @defaultValue 300000 (5 minutes)
   */
  retryUncertainEveryMs?: number;
  logger?: Logger;
  /** Reloads the configuration on SIGHUP and when its file changes; absent = no reload (SIGHUP is ignored). */
  reload?: ConfigReloader;
  /** How often the config file is checked for a change, in milliseconds; 0 = SIGHUP only. @defaultValue 2000 */
  watchConfigEveryMs?: number;
}

/** Waits for the first SIGTERM/SIGINT; a third signal exits at once. */
export function waitForTermination(log: Logger): Promise<string> {
  return new Promise((resolve) => {
    let count = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      count++;
      if (count === 1) {
        log.info({ signal }, 'stopping: no new files; finishing or parking rows in flight');
        resolve(signal);
      } else if (count === 2) {
        log.warn({ signal }, 'still stopping; send the signal once more to exit at once');
      } else {
        process.exit(130);
      }
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
}

export const DEFAULT_RETRY_UNCERTAIN_EVERY_MS = 300_000;
/** Several daemons on one store: how often a daemon looks for rows of other daemons' files to help with. */
const HELP_EVERY_MS = 1_000;

export { SHARED_WORK_DIR };

export async function runDaemon(options: RunnerOptions, deps: DaemonDeps = {}): Promise<number> {
  const log = deps.logger ?? options.logger;
  const stop = deps.stopSignal ?? waitForTermination(log);
  // One writer per data folder (./lock.ts): a second daemon or run is refused here, before it touches the store.
  const taker = { command: 'daemon', locale: options.locale } as const;
  const lock = await acquireDataFolderLock(options.folders.data, { taker });
  // Several daemons on one PostgreSQL store: one process per daemon name on this machine (the same name twice is
  // refused here, exit 2, before it could take the first one's lease over).
  let nameLock: DataFolderLock | undefined;
  if (options.store?.engine === 'postgres') {
    try {
      nameLock = await acquireDaemonNameLock(options.store.where, options.daemon?.name ?? defaultDaemonName(), taker);
    } catch (err) {
      await lock.release();
      throw err;
    }
  }
  // One inbox, one store (./inbox-store.ts): a SQLite daemon beside the daemons of a PostgreSQL store is refused.
  try {
    claimInboxForStore(options.folders.inbox, runnerStorePlace(options), taker);
  } catch (err) {
    await nameLock?.release();
    await lock.release();
    throw err;
  }
  let pipeline: Pipeline | undefined;
  let intake: Intake | undefined;
  let ops: RunningOpsServer | undefined;
  let receiver: RunningWebhookReceiver | undefined;
  let exitCode = 0;
  const metrics = options.metricsEndpoint ? new Metrics() : undefined;
  // The operator's endpoint listens before anything else starts: a port in use is refused at once (exit 2), before
  // a file is taken or the bank is called. Until the pipeline and the intake are up, /readyz says not ready.
  if (metrics && options.metricsEndpoint) {
    const endpoint = options.metricsEndpoint;
    try {
      ops = await startOpsServer({
        ...endpoint,
        metrics,
        checks: {
          store: () => (pipeline ? checkStoreWritable(pipeline.store) : Promise.reject(new Error('starting'))),
          inbox: () => intake !== undefined && !intake.signal.aborted,
          bank: (signal) => (pipeline ? pipeline.probeBank(signal) : Promise.reject(new Error('starting'))),
        },
      });
    } catch (err) {
      await nameLock?.release();
      await lock.release();
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      throw new RemessaError(
        'METRICS_PORT_IN_USE',
        `metrics.port ${endpoint.port} on ${endpoint.host} is used by another process: stop it, or set metrics.port ` +
          'to a free port (0 turns the endpoint off)',
      );
    }
  }
  // Installed first: SIGHUP's default action would end the process (systemd's ExecReload sends it).
  const reloader = deps.reload;
  // Once the pipeline is open, a reload also hands it a new API key (./reload.ts); before, a restart applies it.
  const hooks = (): ReloadHooks | undefined =>
    pipeline ? { useApiKey: (key) => pipeline?.useApiKey(key) } : undefined;
  const onHangup = () => {
    if (reloader) reloadConfig(reloader, options, log, 'SIGHUP', hooks());
    else log.warn('SIGHUP: no configuration file to reload');
  };
  process.on('SIGHUP', onHangup);
  const watchMs = deps.watchConfigEveryMs ?? 2_000;
  const watched = reloader?.file && watchMs > 0 ? reloader.file : undefined;
  if (watched && reloader) {
    watchFile(watched, { interval: watchMs, persistent: false }, (now, before) => {
      if (now.mtimeMs !== before.mtimeMs || now.size !== before.size) {
        reloadConfig(reloader, options, log, 'config file changed', hooks());
      }
    });
  }
  try {
    // The same options object, not a copy: a configuration reload (./reload.ts) updates it in place.
    if (metrics) options.metrics = metrics;
    pipeline = await openPipeline(options, {}, { command: 'daemon', nameLocked: nameLock !== undefined });
    const p = pipeline;
    // The receiver listens before the intake starts: events of rows sent from now on find it up.
    if (options.webhookReceiver) receiver = await startReceiver(options, p, metrics, log);
    const progressIntervalMs = options.progressIntervalMs ?? 30_000;
    // Batches driven by a resume pass (parked by a stop or a crash, retried, approved) log their progress too.
    const resumedProgress = (b: BatchRecord) =>
      new LogProgress({
        logger: log,
        intervalMs: progressIntervalMs,
        countsOf: (batchId) => p.store.countRows(batchId),
        fields: { file: `${b.kind}/${b.fileName}`, kind: b.kind },
      });
    intake = new Intake(
      {
        inboxDir: options.folders.inbox,
        // Several daemons on one store share the inbox and, inside it, the work area: a file taken by one of them
        // (claimed in the store first) is found there by the others when that one dies (src/store/leases.ts).
        workDir: p.claims ? path.join(options.folders.inbox, SHARED_WORK_DIR) : p.workDir,
        ...(p.claims ? { claims: p.claims } : {}),
        archiveDir: options.folders.archive,
        stableMs: options.intake.stableMs,
        cutOffMs: options.intake.cutOffMs,
        requireDoneMarker: options.intake.requireDoneMarker,
        usePolling: options.intake.usePolling,
        pollIntervalMs: options.intake.pollIntervalMs,
        maxConcurrentFiles: options.intake.maxConcurrentFiles,
        logger: log,
      },
      (batch, signal) =>
        p.handleBatch(batch, {
          signal,
          progress: new LogProgress({
            logger: log,
            intervalMs: progressIntervalMs,
            countsOf: (batchId) => p.store.countRows(batchId),
            fields: { file: batch.item.meta.relativePath, kind: batch.item.meta.kind },
          }),
        }),
    );
    const ready = intake.start();
    // Uncertain rows of earlier batches are retried alongside the intake, not before it: a bank that stays down
    // must not keep new files waiting.
    const current = intake;
    let resumed = p
      .resumeUncertain(current.signal, undefined, resumedProgress)
      .catch((err) => log.error({ err }, 'resuming uncertain rows failed'));
    const everyMs = deps.retryUncertainEveryMs ?? DEFAULT_RETRY_UNCERTAIN_EVERY_MS;
    // One retry pass at a time: a pass that outlasts the interval is not stacked with another.
    const retryTimer =
      everyMs > 0
        ? setInterval(() => {
            resumed = resumed.then(() =>
              current.signal.aborted
                ? undefined
                : p
                    .resumeUncertain(current.signal, undefined, resumedProgress)
                    .catch((err) => log.error({ err }, 'retrying uncertain rows failed')),
            );
          }, everyMs)
        : undefined;
    // Files that wait for approval: once decided (remessa approve/reject, or an .approved marker), handled again.
    // Approved files a `run` was given from outside the inbox have no file to handle again: their stored rows are
    // driven by a retry pass for them alone, chained after the pass under way (src/store/approvals.ts, "Who drives an
    // approved batch"); one such pass at a time.
    let drivingApproved = false;
    const approvalTimer = setInterval(() => {
      void p
        .takeDecided()
        .then((decided) => {
          for (const b of decided) current.handleAgain(b.item);
        })
        .catch((err) => log.error({ err }, 'looking for approval decisions failed'));
      // Files parked with rows left waiting (the bank's 429s to the end) whose rows a retry pass has ended since: handled
      // again, they are found answered and archived (not left in the work area until the next start).
      void p
        .takeFinished()
        .then((finished) => {
          for (const b of finished) current.handleAgain(b.item);
        })
        .catch((err) => log.error({ err }, 'looking for parked files whose rows have ended failed'));
      if (drivingApproved) return;
      drivingApproved = true;
      void p
        .approvedGiven()
        .then((approved) => {
          if (approved.length === 0) {
            drivingApproved = false;
            return;
          }
          log.info({ files: approved.map((b) => b.source) }, 'approved files given to run: driving them');
          const ids = approved.map((b) => b.batchId);
          resumed = resumed
            .then(() => (current.signal.aborted ? undefined : p.resumeUncertain(current.signal, ids, resumedProgress)))
            .catch((err) => log.error({ err }, 'driving approved files failed; tried again'))
            .finally(() => {
              drivingApproved = false;
            });
        })
        .catch((err) => {
          drivingApproved = false;
          log.error({ err }, 'looking for approval decisions failed');
        });
    }, options.controls?.pollMs ?? 2_000).unref();
    await ready;
    // Several daemons on one store: rows of big files other daemons drive, not started yet, are shared out to this
    // one (src/runner/engine.ts `helpWithBatch`): looked for every second (one indexed query), one pass at a time.
    let helping: Promise<unknown> | undefined; // the pass under way, if any
    const helpTimer = p.lease
      ? setInterval(() => {
          if (helping || current.signal.aborted) return;
          helping = p
            .helpOthers(current.signal)
            .catch((err) => log.error({ err }, "helping with other daemons' files failed; tried again"))
            .finally(() => {
              helping = undefined;
            });
        }, HELP_EVERY_MS)
      : undefined;
    // The retorno (src/runner/retorno.ts): events applied often, reconciliation seldom; one pass at a time.
    let retorno: Promise<unknown> = Promise.resolve();
    const retornoTimers: NodeJS.Timeout[] = [];
    const schedule = (everyMs: number, reconcile: boolean) => {
      if (everyMs <= 0) return;
      retornoTimers.push(
        setInterval(() => {
          retorno = retorno.then(() =>
            current.signal.aborted
              ? undefined
              : retornoPass({
                  store: p.store,
                  client: p.client,
                  queue: p.queue,
                  outboxDir: options.folders.outbox,
                  logger: log,
                  reconcile,
                  eventSettleMs: options.reconcile?.eventSettleMs ?? 0,
                  signal: current.signal,
                  locale: options.locale,
                  results: options.results,
                })
                  .then((r) => {
                    if (r.changes > 0 || r.files.length > 0) log.info({ ...r, reconcile }, 'retorno updated');
                  })
                  .catch((err) => log.error({ err, reconcile }, 'retorno pass failed')),
          );
        }, everyMs),
      );
    };
    schedule(options.reconcile?.applyEventsEveryMs ?? 0, false);
    schedule(options.reconcile?.everyMs ?? 0, true);
    if (metrics && ops) {
      const takenFrom = intake;
      metrics.attach({
        storeSnapshot: () => storeSnapshot(p.store),
        retornoSnapshot: () => retornoSnapshot(p.store),
        ...(p.lease ? { daemonsSnapshot: () => listDaemons(p.store) } : {}),
        storeVacuums: () => p.store.vacuumStats,
        queueStats: () => p.queue.stats,
        credentialsRefused: () => p.gate.credentialsRefused,
        isPaused: (group) => p.queue.isPaused(group),
        intakeErrors: () => takenFrom.counts.failed,
      });
      log.info({ url: ops.url }, 'metrics, /healthz and /readyz served');
    }
    log.info({ bank: p.bankUrl, inbox: options.folders.inbox, outbox: options.folders.outbox }, 'remessa daemon ready');
    notifySystemd('READY=1', log);
    deps.onReady?.();
    // A lost lease (several daemons on one store: frozen, or cut off from the database) stops the daemon like a
    // signal, and it exits with code 1: the others have taken, or will take, what it held over.
    const lost = await Promise.race([stop.then(() => undefined), p.leaseLost]);
    if (lost) exitCode = 1;
    notifySystemd('STOPPING=1', log);
    if (retryTimer) clearInterval(retryTimer);
    for (const t of retornoTimers) clearInterval(t);
    clearInterval(approvalTimer);
    if (helpTimer) clearInterval(helpTimer);
    await intake.stop();
    await helping;
    await resumed;
    await retorno;
    log.info(intake.counts, exitCode === 0 ? 'remessa daemon stopped' : 'remessa daemon stopped: its lease was lost');
    return exitCode;
  } catch (err) {
    log.error({ err }, 'remessa daemon failed');
    await intake?.stop().catch(() => undefined);
    return 1;
  } finally {
    await receiver?.close();
    await ops?.close();
    process.off('SIGHUP', onHangup);
    if (watched) unwatchFile(watched);
    await pipeline?.close();
    await nameLock?.release();
    await lock.release();
  }
}

/**
 * Starts the webhook receiver on the store (src/webhooks/receiver.ts). With the embedded sandbox it also registers
 * itself there for `events` (a loopback url is allowed there, and the value is drawn at random at each start when no
 * credential is configured); with a real bank the operator registers the public url (`remessa webhooks register`).
 */
async function startReceiver(
  options: RunnerOptions,
  p: Pipeline,
  metrics: Metrics | undefined,
  log: Logger,
): Promise<RunningWebhookReceiver> {
  const settings = options.webhookReceiver!;
  const scheme = settings.authorizationScheme;
  const authorization =
    settings.authorization ??
    (scheme === 'BASIC' ? `remessa:${randomBytes(24).toString('hex')}` : randomBytes(24).toString('hex'));
  const receiver = await startWebhookReceiver({
    store: runnerStorePlace(options),
    host: settings.host,
    port: settings.port,
    path: settings.path,
    bodyLimitBytes: settings.bodyLimitBytes,
    authorizationScheme: scheme,
    authorization,
    logger: log.child({ component: 'webhooks' }),
    onResult: metrics ? (result) => metrics.observeWebhookEvent(result) : undefined,
  });
  log.info({ url: receiver.eventsUrl }, 'webhook receiver listening');
  if (options.bank.embedded) {
    // The pipeline's client settings (its profile and overrides, TLS, timeouts) with the key that may register a
    // loopback url. A client in the default dialect would be refused by a sandbox serving delbank (401).
    const client = new BankClient({
      ...options.bank.client,
      baseUrl: p.bankUrl,
      apiKey: EMBEDDED_WEBHOOK_API_KEY,
      accountId: options.bank.accountId ?? 'sandbox',
      maxAttempts: 3,
    });
    try {
      const changes = await ensureRegistered(
        client,
        { url: receiver.eventsUrl, authorizationScheme: scheme, authorization, events: settings.events },
        { adoptAnyUrl: true },
      );
      log.info(
        {
          url: receiver.eventsUrl,
          events: changes.filter((c) => c.action !== 'deleted').map((c) => c.webhook.eventType),
        },
        'webhook receiver registered with the embedded sandbox',
      );
    } catch (err) {
      await receiver.close();
      throw err;
    } finally {
      await client.close();
    }
  }
  return receiver;
}
