/**
 * The bank gate: while the bank cannot be reached (certainly nothing sent: connection refused, DNS, TLS handshake),
 * rows do not hammer it. One gate per request queue (so per process), shared by every batch.
 *
 *   up ──a certainly-not-sent failure──► down (next probe after retryDelaysMs[failures], the last delay repeating)
 *   down ──probe time: ONE waiting row is let through (and the timer re-armed at the same delay, in case it vanishes)
 *   down ──that row's attempt fails not-sent again──► down (the next, longer delay)
 *   down ──any attempt reaches the bank (an answer of any kind, even a 5xx)──► up: every waiting row goes
 *
 * What must hold: a row waits here only when nothing of its current step may have been sent, or when its step's
 * outcome is already unknown (it keeps that status); the gate never decides an outcome, it only delays attempts.
 * `wait` ends early on the stop signal, and with 'timeout' once the bank has been down `maxWaitMs` (the `run`
 * command's limit; the daemon waits without one).
 */

/** The schedule of attempts while the bank is unreachable (config `bank.unreachable`). */
export interface UnreachableWaitSettings {
  /** Waits between probes, in milliseconds, in order; the last one repeats. @defaultValue DEFAULT_UNREACHABLE_DELAYS_MS */
  retryDelaysMs: readonly number[];
  /** Give up waiting once the bank has been unreachable this long, in milliseconds; undefined = never (daemon). */
  maxWaitMs?: number | undefined;
}

export const DEFAULT_UNREACHABLE_DELAYS_MS: readonly number[] = [1000, 2000, 5000, 10_000, 30_000, 60_000];

export type GateWait = 'go' | 'stopped' | 'timeout';

export class BankGate {
  private down = false;
  private downSince = 0;
  private failures = 0;
  private delayMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiters: Array<(result: GateWait) => void> = [];
  private readonly delays: readonly number[];

  constructor(delays: readonly number[] = DEFAULT_UNREACHABLE_DELAYS_MS) {
    this.delays = delays.length > 0 ? delays : DEFAULT_UNREACHABLE_DELAYS_MS;
  }

  get isDown(): boolean {
    return this.down;
  }

  /** Milliseconds until the next probe (0 when up). */
  get nextProbeInMs(): number {
    return this.down ? this.delayMs : 0;
  }

  /** A certainly-not-sent failure: the bank is (still) unreachable. Returns the wait before the next probe. */
  failed(): number {
    if (!this.down) {
      this.down = true;
      this.downSince = Date.now();
    }
    this.delayMs = this.delays[Math.min(this.failures, this.delays.length - 1)]!;
    this.failures++;
    this.arm();
    return this.delayMs;
  }

  /** An attempt reached the bank: every waiting row goes. */
  reached(): void {
    if (!this.down) return;
    this.down = false;
    this.failures = 0;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    for (const w of this.waiters.splice(0)) w('go');
  }

  /** Waits until this row may try (its probe turn, or the bank back), the signal stops it, or `maxWaitMs` is over. */
  wait(signal: AbortSignal | undefined, maxWaitMs?: number): Promise<GateWait> {
    if (!this.down) return Promise.resolve('go');
    if (signal?.aborted) return Promise.resolve('stopped');
    const left = maxWaitMs === undefined ? undefined : this.downSince + maxWaitMs - Date.now();
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
