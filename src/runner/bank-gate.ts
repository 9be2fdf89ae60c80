/**
 * The bank gate: while the bank cannot be reached (certainly nothing sent: connection refused, DNS, TLS handshake), or
 * while it refuses remessa's credentials (401/403: a missing, unknown or insufficient API key), rows do not hammer it.
 * One gate per request queue (so per process), shared by every batch. It is closed for one reason at a time, the last
 * one an attempt met: `unreachable` or `credentials`.
 *
 *   open ──a certainly-not-sent failure──► closed(unreachable) (next probe after retryDelaysMs[failures], the last
 *                                          delay repeating)
 *   open ──a 401/403 answer──► closed(credentials) (next probe after `credentialsRefused.retryEveryMs`, always the same)
 *   closed ──probe time: ONE waiting row is let through (and the timer re-armed at the same delay, in case it vanishes)
 *   closed ──that row's attempt fails not-sent again──► closed(unreachable) (the next, longer delay)
 *   closed ──that row's attempt is answered 401/403 again──► closed(credentials) (the same delay)
 *   closed ──`probeNow` (the daemon took new credentials on a reload)──► ONE waiting row goes at once
 *   closed ──any attempt gets another answer (even a 5xx, even a refusal of the row)──► open: every waiting row goes
 *
 * A 401/403 says nothing of the row: it is the same for every row until a person acts (a key rotated, a client secret
 * expired), and it is a refusal before any processing. So it is never a row's outcome: the row waits here like a row
 * of an unreachable bank (src/runner/engine.ts), and one row at a time asks again.
 *
 * What must hold: a row waits here only when nothing of its current step may have been sent, or when its step's
 * outcome is already unknown (it keeps that status); the gate never decides an outcome, it only delays attempts.
 * `wait` ends early on the stop signal, and with 'timeout' once the bank has been unreachable `maxWaitMs` (the `run`
 * command's limit; the daemon waits without one). Closed for credentials, a gate that does not `waitForCredentials`
 * (the `run` command: nobody is there to fix the key before it ends) answers every wait 'refused' at once, and
 * releases the rows already waiting so: no row is sent while the key is refused, and none waits for a person.
 */

/** The schedule of attempts while the bank is unreachable (config `bank.unreachable`). */
export interface UnreachableWaitSettings {
  /** Waits between probes, in milliseconds, in order; the last one repeats. @defaultValue DEFAULT_UNREACHABLE_DELAYS_MS */
  retryDelaysMs: readonly number[];
  /** Give up waiting once the bank has been unreachable this long, in milliseconds; undefined = never (daemon). */
  maxWaitMs?: number | undefined;
}

export const DEFAULT_UNREACHABLE_DELAYS_MS: readonly number[] = [1000, 2000, 5000, 10_000, 30_000, 60_000];

/** While the bank refuses remessa's credentials (config `bank.credentialsRefused`). */
export interface CredentialsRefusedSettings {
  /** Wait between probes while the bank answers 401/403, in milliseconds. @defaultValue DEFAULT_CREDENTIALS_RETRY_EVERY_MS */
  retryEveryMs: number;
  /**
   * Whether rows wait for the credentials to be accepted again (the daemon: a person fixes them, the rows go), or
   * are answered 'refused' at once (the `run` command, which ends). @defaultValue true
   */
  waitForCredentials?: boolean;
}

export const DEFAULT_CREDENTIALS_RETRY_EVERY_MS = 60_000;

/** Why the gate is closed: the bank cannot be reached, or it refuses remessa's credentials. */
export type GateReason = 'unreachable' | 'credentials';

export type GateWait = 'go' | 'stopped' | 'timeout' | 'refused';

export class BankGate {
  private down = false;
  private why: GateReason = 'unreachable';
  private downSince = 0;
  private failures = 0;
  private delayMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters: Array<(result: GateWait) => void> = [];
  private readonly delays: readonly number[];
  private readonly credentials: Required<CredentialsRefusedSettings>;

  constructor(
    delays: readonly number[] = DEFAULT_UNREACHABLE_DELAYS_MS,
    credentials: Partial<CredentialsRefusedSettings> = {},
  ) {
    this.delays = delays.length > 0 ? delays : DEFAULT_UNREACHABLE_DELAYS_MS;
    this.credentials = {
      retryEveryMs: credentials.retryEveryMs ?? DEFAULT_CREDENTIALS_RETRY_EVERY_MS,
      waitForCredentials: credentials.waitForCredentials ?? true,
    };
  }

  get isDown(): boolean {
    return this.down;
  }

  /** Why the gate is closed (meaningful while `isDown`). */
  get reason(): GateReason {
    return this.why;
  }

  /** Closed because the bank refused remessa's credentials (the metric `remessa_bank_credentials_refused`). */
  get credentialsRefused(): boolean {
    return this.down && this.why === 'credentials';
  }

  /** Milliseconds until the next probe (0 when up). */
  get nextProbeInMs(): number {
    return this.down ? this.delayMs : 0;
  }

  /** A certainly-not-sent failure: the bank is (still) unreachable. Returns the wait before the next probe. */
  failed(): number {
    if (!this.down || this.why !== 'unreachable') {
      this.down = true;
      this.why = 'unreachable';
      this.downSince = Date.now();
      this.failures = 0;
    }
    this.delayMs = this.delays[Math.min(this.failures, this.delays.length - 1)]!;
    this.failures++;
    this.arm();
    return this.delayMs;
  }

  /**
   * The bank answered 401/403: it refuses remessa's credentials. Returns the wait before the next probe. Without
   * `waitForCredentials`, every row waiting now is released 'refused'.
   */
  refused(): number {
    if (!this.down || this.why !== 'credentials') {
      this.down = true;
      this.why = 'credentials';
      this.downSince = Date.now();
      this.failures = 0;
    }
    this.delayMs = this.credentials.retryEveryMs;
    this.failures++;
    if (!this.credentials.waitForCredentials) {
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      for (const w of this.waiters.splice(0)) w('refused');
      return this.delayMs;
    }
    this.arm();
    return this.delayMs;
  }

  /** An attempt reached the bank and was not refused for its credentials: every waiting row goes. */
  reached(): void {
    if (!this.down) return;
    this.down = false;
    this.failures = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiters.splice(0)) w('go');
  }

  /**
   * Lets one waiting row go now, as a probe, instead of at its time (the daemon took new credentials): the gate
   * opens if its attempt gets through, else the next probe follows the usual delay.
   */
  probeNow(): void {
    if (!this.down) return;
    const next = this.waiters.shift();
    if (next) {
      next('go');
      this.arm();
    } else {
      // Nobody waits: the next row to try is the probe.
      if (this.timer) clearTimeout(this.timer);
      this.timer = undefined;
      this.down = false;
    }
  }

  /**
   * Waits until this row may try (its probe turn, or the bank back), the signal stops it, or `maxWaitMs` is over;
   * 'refused' at once while the bank refuses the credentials and the gate does not wait for them.
   */
  wait(signal: AbortSignal | undefined, maxWaitMs?: number): Promise<GateWait> {
    if (!this.down) return Promise.resolve('go');
    if (signal?.aborted) return Promise.resolve('stopped');
    if (this.why === 'credentials' && !this.credentials.waitForCredentials) return Promise.resolve('refused');
    // `maxWaitMs` bounds the wait for an unreachable bank only: credentials refused, the run does not wait at all.
    const left =
      maxWaitMs === undefined || this.why === 'credentials' ? undefined : this.downSince + maxWaitMs - Date.now();
    if (left !== undefined && left <= 0) return Promise.resolve('timeout');
    return new Promise<GateWait>((resolve) => {
      let limit: NodeJS.Timeout | undefined;
      const done = (result: GateWait) => {
        const i = this.waiters.indexOf(done);
        if (i >= 0) this.waiters.splice(i, 1);
        // The last row gone (stopped, out of time): the probe alone keeps no process alive.
        if (this.waiters.length === 0) this.timer?.unref?.();
        signal?.removeEventListener('abort', onAbort);
        if (limit) clearTimeout(limit);
        resolve(result);
      };
      const onAbort = () => done('stopped');
      signal?.addEventListener('abort', onAbort, { once: true });
      if (left !== undefined) limit = setTimeout(() => done('timeout'), left);
      this.waiters.push(done);
      // A row waits for the probe: the process lives until then (`retry` exited 13, its wait the only thing left).
      this.timer?.ref?.();
    });
  }

  /** Clears the timer (end of the process); waiting rows are released as stopped. */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiters.splice(0)) w('stopped');
  }

  private arm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (!this.down) return;
      // Probe time: one row goes. Re-armed at the same delay, in case that row never reports back.
      const next = this.waiters.shift();
      if (next) {
        next('go');
        this.arm();
      } else {
        // Nobody waits: the next row to try is the probe.
        this.down = false;
      }
    }, this.delayMs);
    // Nobody waiting: the gate alone keeps no process alive (`wait` refs it again for a row).
    if (this.waiters.length === 0) this.timer.unref?.();
  }
}
