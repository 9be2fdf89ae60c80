/**
 * The request queue: every request to the bank goes through it.
 *
 * Shape (p-queue underneath):
 *
 *   run(group, task) ─► group queue (one per endpoint group: rate limit `intervalCap` per `interval`, pausable)
 *                         └─► global queue (`concurrency` requests in flight, all groups together) ─► task()
 *
 * What must hold:
 * - A 429 (RateLimitedError) pauses ONLY its group, for its Retry-After (capped by `maxPauseMs`; `defaultPauseMs`
 *   when the bank gave none). The other groups go on. A task of a paused group that already waits in the global queue
 *   does not go out when its turn comes: it gives its slot back and queues again in its group.
 * - Waiting for a rate limit or a pause never holds a global slot (the group queue admits first), so a slow or paused
 *   group cannot starve the others.
 * - The queue does not retry: `run` rejects with the task's error (after pausing the group on a 429) and the caller
 *   decides (src/runner/engine.ts uses src/bank/retry-policy.ts). One layer of retries, never two.
 * - Rows in memory are bounded: `acquireRow` hands out at most `maxRowsInFlight` row slots (all batches together), and
 *   one endpoint group holds at most half of them when the limit is 2 or more, so a paused group cannot take every
 *   slot from the batches of the other groups.
 *
 * The rate limit counts admissions into the global queue; when the global queue is saturated, admitted tasks may go
 * out a little later than admitted, so a burst slightly above the cap in one window is possible then. The cap is an
 * upper bound on the rate the bank sees over any two consecutive windows.
 */
import PQueue from 'p-queue';
import { RateLimitedError } from '../bank/errors.js';
import { ENDPOINT_GROUPS, type EndpointGroup } from '../types.js';

export interface GroupRateLimit {
  /** Requests started per interval; 0 = unlimited. */
  intervalCap: number;
  /** Interval length in milliseconds. */
  intervalMs: number;
}

export interface RequestQueueOptions {
  /** Requests in flight at once, all groups together. @defaultValue 8 */
  concurrency?: number;
  /** Rows held in memory or queued at once, all batches together. @defaultValue 1000 */
  maxRowsInFlight?: number;
  /** Rate limit per endpoint group; a missing group is unlimited. @defaultValue {} */
  rateLimits?: Partial<Record<EndpointGroup, GroupRateLimit>>;
  /** Longest pause one 429 may cause, in milliseconds. @defaultValue 120000 */
  maxPauseMs?: number;
  /** Pause after a 429 without Retry-After, in milliseconds. @defaultValue 1000 */
  defaultPauseMs?: number;
}

/** Builds the options from the config's `queue` section (`requests`/`intervalMs` per group). */
export function queueOptionsFromConfig(queue: {
  concurrency: number;
  maxRowsInFlight: number;
  rateLimits: Record<EndpointGroup, { requests: number; intervalMs: number }>;
}): RequestQueueOptions {
  const rateLimits: Partial<Record<EndpointGroup, GroupRateLimit>> = {};
  for (const g of ENDPOINT_GROUPS) {
    const r = queue.rateLimits[g];
    if (r && r.requests > 0) rateLimits[g] = { intervalCap: r.requests, intervalMs: r.intervalMs };
  }
  return { concurrency: queue.concurrency, maxRowsInFlight: queue.maxRowsInFlight, rateLimits };
}

const PAUSED = Symbol('paused');
const ABORTED = Symbol('aborted');

interface GroupState {
  queue: PQueue;
  pausedUntil: number;
  timer: NodeJS.Timeout | undefined;
  rowsHeld: number;
}

interface RowWaiter {
  group: EndpointGroup;
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class RequestQueue {
  readonly concurrency: number;
  readonly maxRowsInFlight: number;
  private readonly maxPauseMs: number;
  private readonly defaultPauseMs: number;
  private readonly global: PQueue;
  private readonly groups = new Map<EndpointGroup, GroupState>();
  private rowsHeld = 0;
  private readonly rowWaiters: RowWaiter[] = [];
  private readonly pauseListeners = new Set<(group: EndpointGroup, ms: number) => void>();

  constructor(options: RequestQueueOptions = {}) {
    this.concurrency = checkInt('concurrency', options.concurrency ?? 8, 1);
    this.maxRowsInFlight = checkInt('maxRowsInFlight', options.maxRowsInFlight ?? 1000, 1);
    this.maxPauseMs = checkInt('maxPauseMs', options.maxPauseMs ?? 120_000, 0);
    this.defaultPauseMs = checkInt('defaultPauseMs', options.defaultPauseMs ?? 1000, 0);
    this.global = new PQueue({ concurrency: this.concurrency });
    for (const g of ENDPOINT_GROUPS) {
      const limit = options.rateLimits?.[g];
      const queue =
        limit && limit.intervalCap > 0
          ? new PQueue({
              concurrency: this.concurrency,
              intervalCap: checkInt(`rateLimits.${g}.intervalCap`, limit.intervalCap, 1),
              interval: checkInt(`rateLimits.${g}.intervalMs`, limit.intervalMs, 1),
            })
          : new PQueue({ concurrency: this.concurrency });
      this.groups.set(g, { queue, pausedUntil: 0, timer: undefined, rowsHeld: 0 });
    }
  }

  /**
   * Runs `task` (one request) when its group admits it and a global slot is free. Rejects with the task's error; a
   * RateLimitedError first pauses the group. Aborting `signal` drops a task that has not started (rejects with the
   * signal's reason); a task already started is never cut short: its outcome is what the caller must store.
   * (p-queue's own `signal` option would reject a running task's promise and lose its answer, hence this wrapper.)
   */
  async run<T>(group: EndpointGroup, task: () => Promise<T>, options: { signal?: AbortSignal } = {}): Promise<T> {
    const state = this.group(group);
    const signal = options.signal;
    for (;;) {
      signal?.throwIfAborted();
      let started = false;
      const queued = state.queue.add(() =>
        this.global.add(async (): Promise<{ value: T } | typeof PAUSED | typeof ABORTED> => {
          // Stopped while waiting: do not send; the caller has already been told.
          if (signal?.aborted) return ABORTED;
          // Paused after this task was admitted: do not send; give the slot back and queue again.
          if (this.isPaused(group)) return PAUSED;
          started = true;
          try {
            return { value: await task() };
          } catch (error) {
            if (error instanceof RateLimitedError) this.pauseGroup(group, error.retryAfterMs ?? this.defaultPauseMs);
            throw error;
          }
        }),
      );
      const result = signal ? await untilStartedOrAborted(queued, signal, () => started) : await queued;
      if (result === ABORTED) throw signal?.reason ?? new Error('aborted');
      if (result !== PAUSED) return result.value;
    }
  }

  /** Pauses the group for `ms` (capped at maxPauseMs); a longer pause already running is kept. */
  pauseGroup(group: EndpointGroup, ms: number): void {
    const state = this.group(group);
    const wait = Math.min(Math.max(0, ms), this.maxPauseMs);
    const until = Date.now() + wait;
    if (until <= state.pausedUntil) return;
    state.pausedUntil = until;
    state.queue.pause();
    if (state.timer) clearTimeout(state.timer);
    state.timer = setTimeout(() => {
      state.timer = undefined;
      state.pausedUntil = 0;
      state.queue.start();
    }, wait);
    for (const l of this.pauseListeners) l(group, wait);
  }

  isPaused(group: EndpointGroup): boolean {
    return this.group(group).pausedUntil > Date.now();
  }

  /** Called with (group, ms) whenever a group is paused (for logs and progress). Returns an unsubscribe function. */
  onPause(listener: (group: EndpointGroup, ms: number) => void): () => void {
    this.pauseListeners.add(listener);
    return () => this.pauseListeners.delete(listener);
  }

  /** Requests waiting (not started) and running, all groups. */
  get stats(): { waiting: number; running: number; rowsHeld: number } {
    let waiting = this.global.size;
    for (const s of this.groups.values()) waiting += s.queue.size;
    return { waiting, running: this.global.pending, rowsHeld: this.rowsHeld };
  }

  // ------------------------------------------------------------------ row slots (memory bound)

  private groupRowCap(): number {
    return this.maxRowsInFlight >= 2 ? Math.ceil(this.maxRowsInFlight / 2) : 1;
  }

  private canTake(group: EndpointGroup): boolean {
    return this.rowsHeld < this.maxRowsInFlight && this.group(group).rowsHeld < this.groupRowCap();
  }

  /**
   * Waits for a row slot of `group`. Every acquired slot must be given back with `releaseRow(group)`. Rejects with
   * the signal's reason when it aborts first.
   */
  acquireRow(group: EndpointGroup, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.rowWaiters.length === 0 && this.canTake(group)) {
      this.take(group);
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const waiter: RowWaiter = {
        group,
        resolve,
        reject,
        signal,
        onAbort: () => {
          const i = this.rowWaiters.indexOf(waiter);
          if (i >= 0) this.rowWaiters.splice(i, 1);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.rowWaiters.push(waiter);
      this.grant();
    });
  }

  releaseRow(group: EndpointGroup): void {
    const state = this.group(group);
    if (state.rowsHeld === 0) throw new Error(`releaseRow(${group}) without a held slot`);
    state.rowsHeld--;
    this.rowsHeld--;
    this.grant();
  }

  private take(group: EndpointGroup): void {
    this.rowsHeld++;
    this.group(group).rowsHeld++;
  }

  /** Hands free slots to waiters in arrival order, skipping a waiter whose group is at its cap. */
  private grant(): void {
    for (let i = 0; i < this.rowWaiters.length && this.rowsHeld < this.maxRowsInFlight; ) {
      const w = this.rowWaiters[i]!;
      if (!this.canTake(w.group)) {
        i++;
        continue;
      }
      this.rowWaiters.splice(i, 1);
      w.signal?.removeEventListener('abort', w.onAbort);
      this.take(w.group);
      w.resolve();
    }
  }

  /** Resolves when no request waits or runs. */
  async onIdle(): Promise<void> {
    await Promise.all([...[...this.groups.values()].map((s) => s.queue.onIdle()), this.global.onIdle()]);
    await this.global.onIdle();
  }

  /** Clears pause timers (the queue can still be used; paused groups resume at once). */
  close(): void {
    for (const s of this.groups.values()) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = undefined;
      s.pausedUntil = 0;
      s.queue.start();
    }
  }

  private group(group: EndpointGroup): GroupState {
    const s = this.groups.get(group);
    if (!s) throw new TypeError(`Expected an endpoint group (${ENDPOINT_GROUPS.join(', ')}), got "${group}"`);
    return s;
  }
}

function checkInt(name: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new TypeError(`RequestQueueOptions.${name}: Expected an integer >= ${min}, got ${String(value)}`);
  }
  return value;
}

/** Settles with `p`, or rejects with the signal's reason if it aborts before the task has started. */
function untilStartedOrAborted<R>(p: Promise<R>, signal: AbortSignal, started: () => boolean): Promise<R> {
  return new Promise<R>((resolve, reject) => {
    const onAbort = () => {
      if (!started()) reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
