/**
 * `remessa daemon`: watch the inbox until SIGTERM or SIGINT.
 *
 * Life of the process:
 *
 *     starting --(bank ready: embedded sandbox started or URL set; store open)--> resuming
 *     resuming --(batches left in the work area; uncertain rows of earlier batches, again every 5 minutes)--> watching
 *     watching --(SIGTERM / SIGINT)--> stopping --(intake closed; in-flight rows finished or parked)--> exit 0
 *
 * While the bank cannot be reached (certainly nothing sent), rows wait (`waiting`) and their files stay unanswered;
 * one row tries again on the schedule `bank.unreachable.retryDelaysMs` and, once it gets through, every waiting row
 * goes (src/runner/bank-gate.ts). The daemon waits so without limit; a stop leaves them `waiting` for the next start.
 *
 * What must hold: after the signal no new file is taken and no new row starts; a row whose request may have left is
 * never abandoned silently (the engine finishes it or parks it with its intent recorded), so the next start resumes
 * it. A second signal while stopping does not cut that short: a third one exits at once (the store is still safe:
 * every intent is committed before its request leaves).
 */
import { Intake } from '../intake/index.js';
import type { Logger } from '../log.js';
import { openPipeline, type Pipeline, type RunnerOptions } from './commands.js';

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

export async function runDaemon(options: RunnerOptions, deps: DaemonDeps = {}): Promise<number> {
  const log = deps.logger ?? options.logger;
  const stop = deps.stopSignal ?? waitForTermination(log);
  let pipeline: Pipeline | undefined;
  let intake: Intake | undefined;
  try {
    pipeline = await openPipeline(options);
    const p = pipeline;
    intake = new Intake(
      {
        inboxDir: options.folders.inbox,
        workDir: p.workDir,
        archiveDir: options.folders.archive,
        stableMs: options.intake.stableMs,
        requireDoneMarker: options.intake.requireDoneMarker,
        usePolling: options.intake.usePolling,
        pollIntervalMs: options.intake.pollIntervalMs,
        maxConcurrentFiles: options.intake.maxConcurrentFiles,
        logger: log,
      },
      (batch, signal) => p.handleBatch(batch, { signal }),
    );
    const ready = intake.start();
    // Uncertain rows of earlier batches are retried alongside the intake, not before it: a bank that stays down
    // must not keep new files waiting.
    const current = intake;
    let resumed = p
      .resumeUncertain(current.signal)
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
                    .resumeUncertain(current.signal)
                    .catch((err) => log.error({ err }, 'retrying uncertain rows failed')),
            );
          }, everyMs)
        : undefined;
    await ready;
    log.info({ bank: p.bankUrl, inbox: options.folders.inbox, outbox: options.folders.outbox }, 'remessa daemon ready');
    deps.onReady?.();
    await stop;
    if (retryTimer) clearInterval(retryTimer);
    await intake.stop();
    await resumed;
    log.info(intake.counts, 'remessa daemon stopped');
    return 0;
  } catch (err) {
    log.error({ err }, 'remessa daemon failed');
    await intake?.stop().catch(() => undefined);
    return 1;
  } finally {
    await pipeline?.close();
  }
}
