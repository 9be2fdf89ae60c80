/**
 * The request queue: every request to the bank goes through it.
 *
 * Shape (one scheduler, no p-queue):
 *
 *   run(group, task) ─► waits in its group's FIFO ─► admitted when ALL hold at the same instant:
 *                         - a slot is free (`concurrency` tasks running, all groups together),
 *                         - its group is not paused,
 *                         - its group's limit and the overall limit have room (src/queue/rate-limit.ts);
 *                       admission reserves one start in both limits and calls task(handle) at once, the handle naming
 *                       the task (`QueueTask`): the task passes it with each of its requests (the bank client's
 *                       `RequestOptions.task`), and the client passes it to the gate;
 *   task(handle) ─► ... ─► the bank client calls `beforeSend({ task: handle })` right before each HTTP request leaves
 *                       (every attempt):
 *                       the task's reservation is confirmed (its start time is logged) and the request goes out in the
 *                       same synchronous run; a second request of the same task (a lookup, then a payment) must find
 *                       room in the limits again: it waits at the gate, room is reserved for it when found, and it
 *                       calls the gate again and starts when it actually runs.
 *
 * What must hold:
 * - Rate: at most `requests` request STARTS in ANY window of `intervalMs`, per group and overall (the sliding log and
 *   its reservations, src/queue/rate-limit.ts), whatever the concurrency, the latency, or a pause. A start is the
 *   moment `beforeSend` returns, i.e. the moment the request is handed to the HTTP pool: the admission is only a
 *   reservation, so the engine's intent write between admission and request does not shift requests together.
 *   Starts are also paced (one per window / N, up to 3 at once) and each holds its place 1% beyond its window
 *   (rate-limit.ts says why): over a long saturated run the rate is about 99% of the setting.
 * - A 429 (RateLimitedError) pauses ONLY its group, for its Retry-After (capped by `maxPauseMs`; `defaultPauseMs`
 *   when the bank gave none), and lowers that group's ceiling (AIMD, see rate-limit.ts). The other groups go on. A
 *   task of a paused group is not admitted; a task admitted before the pause whose request has not left yet waits at
 *   the gate until the pause ends (it keeps its slot: its row's intent is already written, the request must follow).
 * - Waiting for a rate limit or a pause never holds a slot for a task not yet admitted, so a slow or paused group
 *   cannot starve the others. Admission is FIFO over all groups, skipping a group that cannot go now.
 * - Requests made outside a task of this queue are not limited by it (there are none in the pipeline): a request is
 *   the task's when it carries the task's handle, and only then (the handle is passed explicitly, not found in an async
 *   context: an AsyncLocalStorage would make every promise of the process pay for async_hooks, ~8% of the CPU of a
 *   bill-payment run). A request of a task that does not carry its handle is not gated: every request a task makes
 *   must carry it (src/batches/kind.ts gives steps one `ctx.request` with the handle for that). A task that ends
 *   without passing the gate (a client built without `beforeSend`) counts as one start at its admission.
 * - The queue does not retry: `run` rejects with the task's error (after pausing the group on a 429) and the caller
 *   decides (src/runner/engine.ts uses src/bank/retry-policy.ts). One layer of retries, never two.
 * - Rows in memory are bounded: `acquireRow` hands out at most `maxRowsInFlight` row slots (all batches together), and
 *   one endpoint group holds at most half of them when the limit is 2 or more, so a paused group cannot take every
 *   slot from the batches of the other groups. By default the limit follows the connections
 *   (`ROW_SLOTS_PER_CONNECTION` x `concurrency`): a group's rows then number four per connection, enough for each
 *   connection to find a row ready while others do their store writes. Rows beyond that only wait for a connection,
 *   their objects (a looked-up bill, its parsed answer) outliving V8's young collections and taxing the full ones
 *   (docs/performance.md (d) eighth pass).
 *
 * Shared limits (several daemons on one PostgreSQL store, issue 13; ./shared-rate.ts): `useSharedLimits(gate)` hands
 * the rate limits, the 429 pauses and the AIMD ceilings to a gate counted in the database across every daemon, and
 * drops this queue's own limits (counting twice would only slow it). Admission is then bounded by the slots, the
 * group's pause and what the gate last said (`notBefore`: a full window or a pause seen in the database, so a task is
 * not admitted, holding a slot, only to wait); the start itself is taken at the gate: `beforeSend` returns a promise
 * that resolves once the database admitted the start (and recorded it: that is the start), and the next call lets
 * the request leave at once. A request waits at the gate while its group is paused on this daemon (so that no start
 * is taken for it meanwhile). A 429 pauses the group here at once and records the pause and the lowered ceiling in
 * the database for every daemon; a pause recorded by another daemon pauses the group here when an admission finds it.
 * A group that no shared limit counts (none of its own, no overall one) takes no admission: its requests leave at once,
 * with no round trip to the database, as an unlimited group's do without shared limits; another daemon's pause of it
 * reaches this queue through the gate's `onPause` all the same, from the limiter's watch (`watchPauses`).
 * A task that ends without passing the gate takes no start (a client without `beforeSend` is then not limited).
 */
import { RateLimitedError } from '../bank/errors.js';
import { ENDPOINT_GROUPS, type EndpointGroup } from '../types.js';
import { type QueueClock, REAL_CLOCK } from './clock.js';
import { SlidingWindowLimit } from './rate-limit.js';
import type { SharedRateGate } from './shared-rate.js';

export type { QueueClock } from './clock.js';

export interface GroupRateLimit {
  /** Requests started per interval (any interval of this length); 0 = unlimited. */
  intervalCap: number;
  /** Interval length in milliseconds. */
  intervalMs: number;
}

/** Row slots a connection gets when `maxRowsInFlight` is not set (see the header: half of them per group). */
export const ROW_SLOTS_PER_CONNECTION = 8;

export interface RequestQueueOptions {
  /** Requests in flight at once, all groups together. @defaultValue 8 */
  concurrency?: number;
  /**
   * Rows held in memory or queued at once, all batches together. @defaultValue ROW_SLOTS_PER_CONNECTION x concurrency
   */
  maxRowsInFlight?: number;
  /** Rate limit per endpoint group; a missing group is unlimited (but counts toward `overallRateLimit`). @defaultValue {} */
  rateLimits?: Partial<Record<EndpointGroup, GroupRateLimit>>;
  /** Rate limit over all groups together. @defaultValue none */
  overallRateLimit?: GroupRateLimit;
  /** Whether a group that gets 429s lowers its own ceiling and raises it again slowly (AIMD). @defaultValue true */
  adaptive?: boolean;
  /** Longest pause one 429 may cause, in milliseconds. @defaultValue 120000 */
  maxPauseMs?: number;
  /** Pause after a 429 without Retry-After, in milliseconds. @defaultValue 1000 */
  defaultPauseMs?: number;
  /** Time source and timers. Tests pass a virtual clock. @defaultValue performance.now() and setTimeout */
  clock?: QueueClock;
}

/** What the bank client tells the gate about the request about to leave. */
export interface OutgoingRequest {
  signal?: AbortSignal | undefined;
  /**
   * The handle of the task the request belongs to (what `run` handed the task). Absent, or another queue's: the
   * request is not limited by this queue. Typed `object` because the bank client carries it without knowing it.
   */
  task?: object | undefined;
}

declare const QUEUE_TASK: unique symbol;

/**
 * One admitted task, as `run` hands it to the task: the task passes it with every request it makes (the bank
 * client's `RequestOptions.task`), so that the gate knows whose reservation the request confirms. Opaque.
 */
export interface QueueTask {
  readonly [QUEUE_TASK]: true;
}

/** Builds the options from the config's `queue` section (`requests`/`intervalMs` per group). */
export function queueOptionsFromConfig(queue: {
  concurrency: number;
  maxRowsInFlight?: number | undefined;
  rateLimits: Record<EndpointGroup, { requests: number; intervalMs: number }>;
  overallRateLimit?: { requests: number; intervalMs: number } | undefined;
  adaptiveRateLimits?: boolean | undefined;
}): RequestQueueOptions {
  const rateLimits: Partial<Record<EndpointGroup, GroupRateLimit>> = {};
  for (const g of ENDPOINT_GROUPS) {
    const r = queue.rateLimits[g];
    if (r && r.requests > 0) rateLimits[g] = { intervalCap: r.requests, intervalMs: r.intervalMs };
  }
  const overall = queue.overallRateLimit;
  return {
    concurrency: queue.concurrency,
    ...(queue.maxRowsInFlight !== undefined ? { maxRowsInFlight: queue.maxRowsInFlight } : {}),
    rateLimits,
    ...(overall && overall.requests > 0
      ? { overallRateLimit: { intervalCap: overall.requests, intervalMs: overall.intervalMs } }
      : {}),
    ...(queue.adaptiveRateLimits === undefined ? {} : { adaptive: queue.adaptiveRateLimits }),
  };
}

interface Waiter {
  seq: number;
  group: GroupState;
  task: (task: QueueTask) => Promise<unknown>;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** A request of a running task waiting at the gate for room or for its group's pause to end. */
interface GateWaiter {
  task: TaskContext;
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/** One admitted task: what its `QueueTask` handle is inside this file. */
class TaskContext {
  /** Holds a reservation in the limits not yet confirmed by a request. */
  reserved = true;
  /** When its last request started (for telling a 429 episode from its echoes). */
  lastStartAt: number | undefined = undefined;
  /** Shared limits: a start admitted by the gate for the request about to leave (its time on the shared clock). */
  ticket: number | undefined = undefined;
  /** Shared limits: when its last request started, on the shared clock. */
  sharedStartAt: number | undefined = undefined;

  constructor(
    readonly queue: RequestQueue,
    readonly group: GroupState,
    /** When the reservation was made (at admission, or when a waiting request was granted room). */
    public reservedAt: number,
  ) {}
}

interface GroupState {
  name: EndpointGroup;
  limit: SlidingWindowLimit | undefined;
  waiters: Waiter[];
  pausedUntil: number;
  timer: unknown;
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
  private readonly clock: QueueClock;
  private overall: SlidingWindowLimit | undefined;
  private shared: SharedRateGate | undefined;
  private readonly groups = new Map<EndpointGroup, GroupState>();
  /** The waiters' abort callbacks, one listener per signal (see `AbortWatch`). */
  private readonly aborts = new AbortWatch();
  private readonly gateWaiters: GateWaiter[] = [];
  private running = 0;
  private seq = 0;
  private pumping = false;
  private pumpAgain = false;
  private timer: unknown;
  private timerAt = Number.POSITIVE_INFINITY;
  private idleWaiters: Array<() => void> = [];
  private rowsHeld = 0;
  private readonly rowWaiters: RowWaiter[] = [];
  private readonly pauseListeners = new Set<(group: EndpointGroup, ms: number) => void>();
  private readonly startListeners = new Set<(group: EndpointGroup, atMs: number) => void>();
  private readonly ceilingListeners = new Set<(group: EndpointGroup, requests: number) => void>();

  constructor(options: RequestQueueOptions = {}) {
    this.concurrency = checkInt('concurrency', options.concurrency ?? 8, 1);
    this.maxRowsInFlight = checkInt(
      'maxRowsInFlight',
      options.maxRowsInFlight ?? ROW_SLOTS_PER_CONNECTION * this.concurrency,
      1,
    );
    this.maxPauseMs = checkInt('maxPauseMs', options.maxPauseMs ?? 120_000, 0);
    this.defaultPauseMs = checkInt('defaultPauseMs', options.defaultPauseMs ?? 1000, 0);
    this.clock = options.clock ?? REAL_CLOCK;
    const adaptive = options.adaptive ?? true;
    const o = options.overallRateLimit;
    if (o && o.intervalCap !== 0) {
      this.overall = new SlidingWindowLimit(
        checkInt('overallRateLimit.intervalCap', o.intervalCap, 1),
        checkInt('overallRateLimit.intervalMs', o.intervalMs, 1),
        false,
      );
    }
    for (const g of ENDPOINT_GROUPS) {
      const l = options.rateLimits?.[g];
      const limit =
        l && l.intervalCap !== 0
          ? new SlidingWindowLimit(
              checkInt(`rateLimits.${g}.intervalCap`, l.intervalCap, 1),
              checkInt(`rateLimits.${g}.intervalMs`, l.intervalMs, 1),
              adaptive,
            )
          : undefined;
      this.groups.set(g, { name: g, limit, waiters: [], pausedUntil: 0, timer: undefined, rowsHeld: 0 });
    }
  }

  /**
   * Runs `task` (one row step: one request, or a few in sequence) when its group admits it and a slot is free, with
   * the task's handle: every request the task makes must carry it (`OutgoingRequest.task`), or it is not limited.
   * Rejects with the task's error; a RateLimitedError first pauses the group. Aborting `signal` drops a task that has
   * not started (rejects with the signal's reason); a task already started is never cut short: its outcome is what
   * the caller must store.
   */
  run<T>(
    group: EndpointGroup,
    task: (task: QueueTask) => Promise<T>,
    options: { signal?: AbortSignal | undefined } = {},
  ): Promise<T> {
    const state = this.group(group);
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter = {
        seq: this.seq++,
        group: state,
        task,
        resolve: resolve as (v: unknown) => void,
        reject,
        signal,
        onAbort: undefined,
      };
      if (signal) {
        waiter.onAbort = () => {
          const i = state.waiters.indexOf(waiter);
          if (i < 0) return; // already started: never cut short
          state.waiters.splice(i, 1);
          reject(signal.reason);
          this.checkIdle();
        };
        this.aborts.watch(signal, waiter.onAbort);
      }
      state.waiters.push(waiter);
      this.pump();
    });
  }

  /**
   * The gate of every HTTP request (the bank client's `beforeSend`), called right before a request leaves.
   * Returns undefined: the request starts NOW (its start is logged at this instant) and must be handed to the pool
   * in the same synchronous run. Returns a promise: wait for it, then call again (room was set aside meanwhile, so the
   * next call returns undefined unless a pause began): the start is logged when the request really goes, not when
   * room was found, so a busy event loop between the two cannot squeeze starts together.
   * A request of a task (it carries the task's handle): confirms the task's reservation, or waits for room (and for
   * the group's pause to end). Any other request: undefined at once.
   * The promise rejects with the signal's reason if it aborts while waiting: nothing was sent.
   */
  readonly beforeSend = (request: OutgoingRequest = {}): Promise<void> | undefined => {
    const task = request.task;
    if (!(task instanceof TaskContext) || task.queue !== this) return undefined;
    if (this.shared) return this.sharedPass(this.shared, task, request);
    if (this.tryPass(task, this.clock.now(), this.gateWaiters.length === 0)) return undefined;
    const signal = request.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const waiter: GateWaiter = { task, resolve, reject, signal, onAbort: undefined };
      if (signal) {
        waiter.onAbort = () => {
          const i = this.gateWaiters.indexOf(waiter);
          if (i < 0) return;
          this.gateWaiters.splice(i, 1);
          reject(signal.reason);
        };
        this.aborts.watch(signal, waiter.onAbort);
      }
      this.gateWaiters.push(waiter);
      this.pump();
    });
  };

  /**
   * Hands the rate limits, pauses and ceilings to limits shared with other daemons (see the top of this file), in
   * place of this queue's own. Only before the first task.
   */
  useSharedLimits(gate: SharedRateGate): void {
    if (this.seq > 0) throw new Error('RequestQueue.useSharedLimits: only before the first task');
    this.shared = gate;
    this.overall = undefined;
    for (const s of this.groups.values()) s.limit = undefined;
    gate.onPause((group, ms) => {
      this.pauseGroup(group, ms);
      this.pump();
    });
  }

  /** The gate with shared limits: a start from the database first, then the request leaves (see beforeSend). */
  private sharedPass(gate: SharedRateGate, task: TaskContext, request: OutgoingRequest): Promise<void> | undefined {
    const state = task.group;
    const now = this.clock.now();
    if (task.ticket !== undefined) {
      task.sharedStartAt = task.ticket;
      task.ticket = undefined;
      task.reserved = false;
      task.lastStartAt = now;
      for (const l of this.startListeners) l(state.name, now);
      return undefined;
    }
    const signal = request.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.paused(state, now)) {
      // Paused here: no start is taken for it until the pause ends (then the caller asks again).
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          this.clock.clearTimeout(timer);
          reject(signal?.reason);
        };
        const timer = this.clock.setTimeout(
          () => {
            signal?.removeEventListener('abort', onAbort);
            resolve();
          },
          Math.max(1, Math.ceil(state.pausedUntil - now)),
        );
        signal?.addEventListener('abort', onAbort, { once: true });
      });
    }
    if (!gate.limited(state.name)) {
      // No shared limit counts this group: nothing to admit, the request leaves now (no round trip to the database;
      // a 429 still pauses the group here and is recorded, and the others' watch reads it: `watchPauses`).
      task.lastStartAt = now;
      for (const l of this.startListeners) l(state.name, now);
      return undefined;
    }
    return gate.admit(state.name, signal).then((at) => {
      task.ticket = at;
    });
  }

  /** Pauses the group for `ms` (capped at maxPauseMs); a longer pause already running is kept. */
  pauseGroup(group: EndpointGroup, ms: number): void {
    const state = this.group(group);
    const wait = Math.min(Math.max(0, ms), this.maxPauseMs);
    const until = this.clock.now() + wait;
    if (until <= state.pausedUntil) return;
    state.pausedUntil = until;
    if (state.timer !== undefined) this.clock.clearTimeout(state.timer);
    state.timer = this.clock.setTimeout(() => {
      state.timer = undefined;
      state.pausedUntil = 0;
      this.pump();
    }, wait);
    for (const l of this.pauseListeners) l(group, wait);
  }

  isPaused(group: EndpointGroup): boolean {
    return this.paused(this.group(group), this.clock.now());
  }

  /** The group's current ceiling (requests per interval; lower than the setting after 429s), or undefined if unlimited. */
  currentLimit(group: EndpointGroup): number | undefined {
    if (this.shared) return this.shared.ceiling(group);
    return this.group(group).limit?.ceilingAt(this.clock.now());
  }

  /** Called with (group, ms) whenever a group is paused (for logs and progress). Returns an unsubscribe function. */
  onPause(listener: (group: EndpointGroup, ms: number) => void): () => void {
    this.pauseListeners.add(listener);
    return () => this.pauseListeners.delete(listener);
  }

  /** Called with (group, time) at every request start, on the queue's clock (for metrics, tests and the bench). */
  onStart(listener: (group: EndpointGroup, atMs: number) => void): () => void {
    this.startListeners.add(listener);
    return () => this.startListeners.delete(listener);
  }

  /** Called with (group, requests per interval) when 429s lower a group's ceiling. */
  onCeilingLowered(listener: (group: EndpointGroup, requests: number) => void): () => void {
    this.ceilingListeners.add(listener);
    return () => this.ceilingListeners.delete(listener);
  }

  /** Tasks and gated requests waiting, tasks running, and row slots held. */
  get stats(): { waiting: number; running: number; rowsHeld: number } {
    let waiting = this.gateWaiters.length;
    for (const s of this.groups.values()) waiting += s.waiters.length;
    return { waiting, running: this.running, rowsHeld: this.rowsHeld };
  }

  // ------------------------------------------------------------------ scheduling

  private paused(state: GroupState, now: number): boolean {
    return state.pausedUntil > now;
  }

  private hasRoom(state: GroupState, now: number): boolean {
    if (this.shared) return this.shared.notBefore(state.name) <= now;
    return (state.limit?.canStart(now) ?? true) && (this.overall?.canStart(now) ?? true);
  }

  /** `beforeSend` in a loop until the request may leave: for callers that are not the bank client (tests, bench). */
  async gate(request: OutgoingRequest = {}): Promise<void> {
    for (let wait = this.beforeSend(request); wait; wait = this.beforeSend(request)) await wait;
  }

  /**
   * A request of `task` starts now if it may: its reservation is confirmed, or (when `mayTakeRoom`: no other request
   * waits ahead) fresh room is taken.
   */
  private tryPass(task: TaskContext, now: number, mayTakeRoom: boolean): boolean {
    const state = task.group;
    if (this.paused(state, now)) return false;
    if (task.reserved) {
      task.reserved = false;
      state.limit?.confirm(now);
      this.overall?.confirm(now);
    } else {
      if (!mayTakeRoom || !this.hasRoom(state, now)) return false;
      state.limit?.record(now);
      this.overall?.record(now);
    }
    task.lastStartAt = now;
    for (const l of this.startListeners) l(state.name, now);
    return true;
  }

  /** Lets through every gated request and admits every task that can go now; arms a timer for the next chance. */
  private pump(): void {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      // One reading of the clock decides both what goes now and when to look again (armTimer): read twice, the time
      // that passes in between (a busy machine) could free a place after the first said "no room" and before the
      // second said "room, no timer needed", and the waiting tasks would wait for nothing.
      let now: number;
      do {
        this.pumpAgain = false;
        now = this.clock.now();
        // Requests of running tasks first: their rows have intents written. Room found is reserved for the request,
        // which calls the gate again when it runs and starts then (see beforeSend).
        for (let i = 0; i < this.gateWaiters.length; ) {
          const w = this.gateWaiters[i]!;
          const state = w.task.group;
          if (this.paused(state, now) || (!w.task.reserved && !this.hasRoom(state, now))) {
            i++;
            continue;
          }
          if (!w.task.reserved) {
            state.limit?.reserve(now);
            this.overall?.reserve(now);
            w.task.reserved = true;
            w.task.reservedAt = now;
          }
          this.gateWaiters.splice(i, 1);
          if (w.signal) this.aborts.unwatch(w.signal, w.onAbort!);
          w.resolve();
        }
        while (this.running < this.concurrency) {
          let next: Waiter | undefined;
          for (const state of this.groups.values()) {
            const head = state.waiters[0];
            if (!head || (next && next.seq < head.seq)) continue;
            if (this.paused(state, now) || !this.hasRoom(state, now)) continue;
            next = head;
          }
          if (!next) break;
          next.group.waiters.shift();
          this.start(next);
        }
      } while (this.pumpAgain);
      this.armTimer(now);
    } finally {
      this.pumping = false;
    }
  }

  private start(waiter: Waiter): void {
    if (waiter.onAbort && waiter.signal) this.aborts.unwatch(waiter.signal, waiter.onAbort);
    const state = waiter.group;
    const now = this.clock.now();
    state.limit?.reserve(now);
    this.overall?.reserve(now);
    this.running++;
    const task = new TaskContext(this, state, now);
    let promise: Promise<unknown>;
    try {
      promise = waiter.task(task as unknown as QueueTask);
    } catch (error) {
      promise = Promise.reject(error);
    }
    promise.then(
      (value) => {
        this.finish(task);
        waiter.resolve(value);
      },
      (error: unknown) => {
        if (error instanceof RateLimitedError) this.rateLimited(task, error);
        this.finish(task);
        waiter.reject(error);
      },
    );
  }

  private finish(task: TaskContext): void {
    if (task.reserved) {
      // No request passed the gate: count one start at admission (a client without `beforeSend` still sends one).
      task.reserved = false;
      task.group.limit?.settle(task.reservedAt);
      this.overall?.settle(task.reservedAt);
    }
    // A gated request of this task can no longer be pending (its task has settled), so nothing else to drop.
    this.running--;
    this.pump();
    this.checkIdle();
  }

  private rateLimited(task: TaskContext, error: RateLimitedError): void {
    const state = task.group;
    this.pauseGroup(state.name, error.retryAfterMs ?? this.defaultPauseMs);
    const resumeAt = Math.max(state.pausedUntil, this.clock.now());
    if (this.shared) {
      this.shared.rateLimited(state.name, task.sharedStartAt, Math.max(0, resumeAt - this.clock.now())).then(
        (lowered) => {
          if (lowered !== undefined) for (const l of this.ceilingListeners) l(state.name, lowered);
        },
        // Not recorded for the others: the pause holds here (pauseGroup above); the gate told its error listeners.
        () => undefined,
      );
      return;
    }
    const lowered = state.limit?.onRateLimited(task.lastStartAt, resumeAt);
    if (lowered !== undefined) for (const l of this.ceilingListeners) l(state.name, lowered);
  }

  /**
   * One timer for the earliest moment after `now` a waiting task or request may find room (pauses have their own
   * timers). `now` is the reading the pump decided by: a group with room at it was served by the pump.
   */
  private armTimer(now: number): void {
    let at = Number.POSITIVE_INFINITY;
    const consider = (state: GroupState) => {
      if (this.paused(state, now)) return;
      if (this.shared) {
        const t = this.shared.notBefore(state.name);
        if (t > now) at = Math.min(at, t);
        return;
      }
      const a = state.limit && !state.limit.canStart(now) ? state.limit.nextFreeAt(now) : undefined;
      const b = this.overall && !this.overall.canStart(now) ? this.overall.nextFreeAt(now) : undefined;
      for (const t of [a, b]) if (t !== undefined) at = Math.min(at, Math.max(t, now));
    };
    for (const w of this.gateWaiters) consider(w.task.group);
    if (this.running < this.concurrency) for (const s of this.groups.values()) if (s.waiters.length > 0) consider(s);
    if (at === this.timerAt) return;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = at;
    if (at === Number.POSITIVE_INFINITY) return;
    // A timer may fire a little early on the clock's scale: pump re-checks and arms again (at least 1 ms on).
    this.timer = this.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        this.pump();
      },
      Math.max(1, Math.ceil(at - now)),
    );
  }

  private checkIdle(): void {
    if (this.running > 0 || this.stats.waiting > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
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
      if (signal) this.aborts.watch(signal, waiter.onAbort);
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
      if (w.signal) this.aborts.unwatch(w.signal, w.onAbort);
      this.take(w.group);
      w.resolve();
    }
  }

  /** Resolves when no task or request waits or runs. */
  onIdle(): Promise<void> {
    if (this.running === 0 && this.stats.waiting === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Clears timers (the queue can still be used; paused groups resume at once). */
  close(): void {
    for (const s of this.groups.values()) {
      if (s.timer !== undefined) this.clock.clearTimeout(s.timer);
      s.timer = undefined;
      s.pausedUntil = 0;
    }
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    this.pump();
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

/**
 * One 'abort' listener per signal for every waiter of a queue on it, instead of one added and removed per waiter: a
 * run passes the same signal to every task and every row slot, and adding and removing an AbortSignal listener
 * (EventTarget) was ~5% of the CPU of a bill-payment run (docs/performance.md (d)). On abort, the callbacks still
 * watched run in the order they were added, as the listeners did.
 */
class AbortWatch {
  readonly #bySignal = new WeakMap<AbortSignal, Set<() => void>>();

  watch(signal: AbortSignal, onAbort: () => void): void {
    let set = this.#bySignal.get(signal);
    if (!set) {
      const callbacks = new Set<() => void>();
      set = callbacks;
      this.#bySignal.set(signal, callbacks);
      signal.addEventListener(
        'abort',
        () => {
          const all = [...callbacks];
          callbacks.clear();
          for (const fn of all) fn();
        },
        { once: true },
      );
    }
    set.add(onAbort);
  }

  unwatch(signal: AbortSignal, onAbort: () => void): void {
    this.#bySignal.get(signal)?.delete(onAbort);
  }
}
