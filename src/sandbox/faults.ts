/**
 * Fault injection, for testing the client's reliability against a misbehaving bank.
 *
 * Rules come from the `faults` setting and from the admin route `PUT /__sandbox/faults` (it replaces the list).
 * Each request takes the first rule whose `route` matches it ('*', a route pattern, or 'METHOD pattern'); admin
 * routes are never faulted. For a matching request, one number is drawn from a seeded PRNG (setting `faultSeed`, or
 * `seed` in the admin body) and picks at most one fault by cumulative rates, in this order:
 *
 *   reset            the TCP connection is reset before the request is processed (nothing happened)
 *   hang             no answer ever; the connection stays open until the client gives up (nothing happened)
 *   rateLimit        429 with Retry-After: retryAfterSeconds (nothing happened)
 *   error            500 or 503 (from errorStatuses, drawn from the PRNG) before processing (nothing happened)
 *   dropAfterCommit  the request is processed and its effect committed (idempotency record stored too), then the
 *                    connection is destroyed instead of answering: the client never hears
 *
 * The option `crashAfterCommit` (crash tests of a sandbox in its own process) kills the process after a matching
 * request's handler committed, before its answer is sent (src/sandbox/options.ts).
 *
 * Independently, `latencyMs` delays the request before processing and `responseLatencyMs` delays the answer after
 * processing (the effect and its key's answer are committed by then: a concurrent duplicate gets that answer).
 * `times` limits a rule to the next N matching requests (each matching request uses one, faulted or not).
 *
 * What must hold: the same seed and the same sequence of requests give the same faults, so a failing test replays.
 */
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { problem, SandboxHttpError, sendHttpError, validationProblem } from './problems.js';
import type { SandboxContext } from './server.js';

const rate = z.number().min(0).max(1);

export const faultRuleSchema = z
  .strictObject({
    /** Which requests: '*' (all), a route pattern such as '/baas/api/v1/bill-payments', or 'POST /baas/api/v1/bill-payments'. */
    route: z.string().min(1).default('*'),
    /** Delay before processing, in milliseconds. @defaultValue 0 */
    latencyMs: z.number().int().min(0).default(0),
    /** Delay after processing, before the answer is sent, in milliseconds. @defaultValue 0 */
    responseLatencyMs: z.number().int().min(0).default(0),
    /** Probability (0..1) of a 500/503 before processing. @defaultValue 0 */
    errorRate: rate.default(0),
    /** Statuses an error is drawn from. @defaultValue [500, 503] */
    errorStatuses: z
      .array(z.union([z.literal(500), z.literal(503)]))
      .min(1)
      .default([500, 503]),
    /** Probability (0..1) of a 429 before processing. @defaultValue 0 */
    rateLimitRate: rate.default(0),
    /** Retry-After of a 429, in seconds. @defaultValue 1 */
    retryAfterSeconds: z.number().int().min(0).default(1),
    /** Probability (0..1) of a connection reset before processing. @defaultValue 0 */
    resetRate: rate.default(0),
    /** Probability (0..1) of dropping the connection after the effect is committed. @defaultValue 0 */
    dropAfterCommitRate: rate.default(0),
    /** Probability (0..1) of never answering. @defaultValue 0 */
    hangRate: rate.default(0),
    /** Apply to the next N matching requests only; absent: forever. @defaultValue undefined */
    times: z.number().int().min(1).optional(),
  })
  .refine((r) => r.errorRate + r.rateLimitRate + r.resetRate + r.dropAfterCommitRate + r.hangRate <= 1, {
    message:
      'Expected the fault rates (errorRate + rateLimitRate + resetRate + dropAfterCommitRate + hangRate) to add up to at most 1',
  });

export type FaultRuleInput = z.input<typeof faultRuleSchema>;
export type FaultRule = z.output<typeof faultRuleSchema>;

/** Body of `PUT /__sandbox/faults`. */
export const faultsUpdateSchema = z.strictObject({
  rules: z.array(faultRuleSchema).default([]),
  /** Re-seeds the PRNG (replays the same choices from here). */
  seed: z.number().int().optional(),
});

export type FaultKind = 'reset' | 'hang' | 'rateLimit' | 'error' | 'dropAfterCommit';

/** A fault rule as reported by the admin route: with how many uses remain. */
export interface FaultRuleState extends FaultRule {
  remaining?: number;
}

/** mulberry32: a tiny, fast, seedable PRNG with a good enough spread for picking faults. */
export function createPrng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Whether a rule's `route` matches a request. */
export function routeMatches(pattern: string, method: string, routeUrl: string | undefined, path: string): boolean {
  if (pattern === '*') return true;
  const space = pattern.indexOf(' ');
  const wantMethod = space > 0 ? pattern.slice(0, space).toUpperCase() : undefined;
  const wantPath = space > 0 ? pattern.slice(space + 1).trim() : pattern;
  if (wantMethod && wantMethod !== method.toUpperCase()) return false;
  return wantPath === routeUrl || wantPath === path;
}

/** The decision for one request. */
export interface FaultDecision {
  rule: FaultRule;
  kind: FaultKind | undefined;
  errorStatus?: 500 | 503;
}

export interface FaultInjector {
  /** Current rules with remaining uses, and the seed last set. */
  state(): { seed: number; rules: FaultRuleState[] };
  /** Replaces the rules; re-seeds when `seed` is given. */
  set(rules: FaultRuleInput[], seed?: number): void;
  /** Removes every rule. */
  clear(): void;
  /** Decides for one request (consumes PRNG draws and a `times` use). Undefined: no rule matched. */
  decide(method: string, routeUrl: string | undefined, path: string): FaultDecision | undefined;
}

export function createFaultInjector(rules: FaultRuleInput[] = [], seed = 1): FaultInjector {
  let current: Array<{ rule: FaultRule; remaining: number | undefined }> = [];
  let currentSeed = seed;
  let next = createPrng(seed);
  const injector: FaultInjector = {
    state: () => ({
      seed: currentSeed,
      rules: current.map((r) => (r.remaining === undefined ? { ...r.rule } : { ...r.rule, remaining: r.remaining })),
    }),
    set(input, newSeed) {
      current = input.map((r) => {
        const rule = faultRuleSchema.parse(r);
        return { rule, remaining: rule.times };
      });
      if (newSeed !== undefined) {
        currentSeed = newSeed;
        next = createPrng(newSeed);
      }
    },
    clear() {
      current = [];
    },
    decide(method, routeUrl, path) {
      const entry = current.find(
        (r) => (r.remaining === undefined || r.remaining > 0) && routeMatches(r.rule.route, method, routeUrl, path),
      );
      if (!entry) return undefined;
      if (entry.remaining !== undefined) entry.remaining -= 1;
      const rule = entry.rule;
      const draw = next();
      let edge = 0;
      const order: Array<[FaultKind, number]> = [
        ['reset', rule.resetRate],
        ['hang', rule.hangRate],
        ['rateLimit', rule.rateLimitRate],
        ['error', rule.errorRate],
        ['dropAfterCommit', rule.dropAfterCommitRate],
      ];
      for (const [kind, p] of order) {
        edge += p;
        if (p > 0 && draw < edge) {
          if (kind === 'error') {
            const statuses = rule.errorStatuses;
            const status = statuses[Math.min(statuses.length - 1, Math.floor(next() * statuses.length))]!;
            return { rule, kind, errorStatus: status };
          }
          return { rule, kind };
        }
      }
      return { rule, kind: undefined };
    },
  };
  injector.set(rules);
  return injector;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Installs the fault hooks on every route and the admin routes `GET|PUT|DELETE {adminPrefix}/faults`.
 * Call after the API key check is installed (faults apply to authenticated requests) and before routes.
 */
export function installFaults(
  app: FastifyInstance,
  injector: FaultInjector,
  adminPrefix: string,
  crashAfterCommit?: string,
): void {
  const decisions = new WeakMap<FastifyRequest, FaultDecision>();
  const hung = new Set<Socket>();

  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? request.url;
    if (path.startsWith(adminPrefix)) return;
    const decision = injector.decide(request.method, request.routeOptions.url, path);
    if (!decision) return;
    decisions.set(request, decision);
    if (decision.rule.latencyMs > 0) await sleep(decision.rule.latencyMs);
    const socket = request.raw.socket;
    switch (decision.kind) {
      case 'reset':
        reply.hijack();
        socket.resetAndDestroy();
        return reply;
      case 'hang':
        reply.hijack();
        hung.add(socket);
        socket.once('close', () => hung.delete(socket));
        return reply;
      case 'rateLimit':
        return sendHttpError(
          reply,
          new SandboxHttpError(
            429,
            {
              ...problem(429, 'Too Many Requests', 'Injected fault: rate limited.'),
              code: 'RATE_LIMITED',
            },
            { 'retry-after': String(decision.rule.retryAfterSeconds) },
          ),
        );
      case 'error': {
        const status = decision.errorStatus ?? 500;
        const title = status === 503 ? 'Service Unavailable' : 'Internal Server Error';
        return sendHttpError(
          reply,
          new SandboxHttpError(status, { ...problem(status, title, 'Injected fault.'), code: 'INJECTED_FAULT' }),
        );
      }
      default:
        return;
    }
  });

  // Global onSend hooks run before route-level ones, and the chain goes on after the socket is gone: the
  // idempotency record (a route-level onSend) is still stored after a drop, as a committed effect must be.
  app.addHook('onSend', async (request: FastifyRequest, _reply: FastifyReply, payload: unknown) => {
    if (crashAfterCommit !== undefined) {
      const path = request.url.split('?')[0] ?? request.url;
      if (
        !path.startsWith(adminPrefix) &&
        routeMatches(crashAfterCommit, request.method, request.routeOptions.url, path)
      ) {
        // The crash point of the option `crashAfterCommit`: the handler has committed; the answer never leaves.
        process.kill(process.pid, 'SIGKILL');
        await new Promise(() => undefined);
      }
    }
    const decision = decisions.get(request);
    if (!decision) return payload;
    if (decision.rule.responseLatencyMs > 0) await sleep(decision.rule.responseLatencyMs);
    if (decision.kind === 'dropAfterCommit') request.raw.socket.destroy();
    return payload;
  });

  // A hung request would keep `close()` waiting for ever.
  app.addHook('preClose', async () => {
    for (const socket of hung) socket.destroy();
    hung.clear();
  });

  app.get(`${adminPrefix}/faults`, async () => injector.state());
  app.put(`${adminPrefix}/faults`, async (request) => {
    const parsed = faultsUpdateSchema.safeParse(request.body ?? {});
    if (!parsed.success) {
      const errors: Record<string, string[]> = {};
      for (const issue of parsed.error.issues) {
        const path = `$${issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('')}`;
        errors[path] = [...(errors[path] ?? []), issue.message];
      }
      throw new SandboxHttpError(400, validationProblem(errors));
    }
    injector.set(parsed.data.rules, parsed.data.seed);
    return injector.state();
  });
  app.delete(`${adminPrefix}/faults`, async () => {
    injector.clear();
    return injector.state();
  });
}

/**
 * The admin prefix, equal to SANDBOX_ADMIN_PREFIX of options.ts. options.ts imports this module (for the `faults`
 * setting's schema), so importing it back would be a cycle that leaves the schema undefined; a test checks they agree.
 */
export const FAULTS_ADMIN_PREFIX = '/__sandbox';

const injectors = new WeakMap<object, FaultInjector>();

/** The fault injector of a running sandbox (tests may drive it directly instead of the admin route). */
export function faultsFor(ctx: SandboxContext): FaultInjector {
  let injector = injectors.get(ctx);
  if (!injector) {
    injector = createFaultInjector(ctx.options.faults, ctx.options.faultSeed);
    injectors.set(ctx, injector);
  }
  return injector;
}

/** Route module (first in server.ts's list): the fault hooks and `{admin}/faults`. */
export function registerFaults(app: FastifyInstance, ctx: SandboxContext): void {
  installFaults(app, faultsFor(ctx), FAULTS_ADMIN_PREFIX, ctx.options.crashAfterCommit);
}
