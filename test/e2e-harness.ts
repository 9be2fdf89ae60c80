/**
 * End-to-end harness: the sandbox and the daemon as real child processes, each in a temp folder.
 *
 * The sandbox runs as `tsx src/cli.ts sandbox --port 0 --data FILE` in its own process, so killing the daemon never
 * kills the bank; its admin routes give the effects ledger (proof of "exactly once") and fault settings.
 * The daemon runs as `tsx src/cli.ts daemon --config FILE` with a config written here.
 *
 * Provider profile (src/formats/profiles.ts): both run in `TEST_PROFILE` unless told otherwise, which is
 * REMESSA_TEST_PROFILE (`interface` when unset), so `REMESSA_TEST_PROFILE=delbank npx vitest run test/e2e-*` runs
 * the whole end-to-end suite against the sandbox serving the provider's dialect (`npm run test:e2e:delbank`).
 * `E2E_PROFILES` is what the suites that run in every profile iterate over.
 *
 * A test that calls the sandbox itself (to look at a charge, to pay one at the staging route, to make a QR code to
 * pay) does it through `callBank` / `SandboxProcess.call`, in the sandbox's profile: an operation name, never a path
 * or a header name of one dialect, so the same test runs in every profile.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'csv-parse/sync';
import iconv from 'iconv-lite';
import { Agent, type Dispatcher, fetch as undiciFetch } from 'undici';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import {
  BANK_PROFILE_DEFINITIONS,
  BANK_PROFILES,
  type BankOperation,
  type BankProfileName,
  fillPath,
} from '../src/formats/profiles.js';
import type { FaultRuleInput } from '../src/sandbox/faults.js';
import { SANDBOX_ADMIN_PREFIX, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/options.js';
import { watchProcess } from './helpers/process-report.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CLI = path.join(ROOT, 'src', 'cli.ts');
export const EXAMPLES = path.join(ROOT, 'examples');
const TSX_IMPORT = ['--import', 'tsx'];

function profileFromEnv(): BankProfileName | undefined {
  const value = process.env.REMESSA_TEST_PROFILE;
  if (value === undefined || value === '') return undefined;
  if (!(BANK_PROFILES as readonly string[]).includes(value)) {
    throw new Error(`REMESSA_TEST_PROFILE: expected ${BANK_PROFILES.join(' or ')}, got "${value}"`);
  }
  return value as BankProfileName;
}

/** The profile of the end-to-end runs: REMESSA_TEST_PROFILE, else `interface`. */
export const TEST_PROFILE: BankProfileName = profileFromEnv() ?? 'interface';
/** The profiles a suite that runs in every profile iterates over: REMESSA_TEST_PROFILE alone when set, else all. */
export const E2E_PROFILES: readonly BankProfileName[] = profileFromEnv() ? [TEST_PROFILE] : BANK_PROFILES;

export interface Proc {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or the signal name). */
  exited: Promise<number | string>;
}

/**
 * The environment a command inherits: the tests' own without what sudo sets (SUDO_UID, ...), so that a suite started
 * through sudo still runs its commands as the tests' user (`remessa approve` reads its caller from SUDO_UID); a test
 * that plays sudo gives them in `env`.
 */
function inheritedEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SUDO_')));
}

export function spawnCli(args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Proc {
  const child = spawn(process.execPath, [...TSX_IMPORT, CLI, ...args], {
    cwd: options.cwd ?? ROOT,
    env: { ...inheritedEnv(), REMESSA_LOG_LEVEL: process.env.REMESSA_E2E_LOG_LEVEL ?? 'info', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1));
  });
  const state = () =>
    child.exitCode !== null ? `exit ${child.exitCode}` : child.signalCode !== null ? child.signalCode : 'running';
  watchProcess({ args, pid: child.pid, stdout: () => out, stderr: () => err, state });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/** How long a command (`runCli`) or a stop (`stopDaemon`, a sandbox's `stop`) may take before the test says so. */
export const PROCESS_END_TIMEOUT_MS = 60_000;

/**
 * Resolves with how `p` exited, or, once `timeoutMs` has passed, kills it and throws an error naming `what` with the
 * tail of its stderr: a process that never ends fails its test with its own words, not with the test's timeout.
 */
export async function exitedWithin(
  p: Proc,
  what: string,
  timeoutMs = PROCESS_END_TIMEOUT_MS,
): Promise<number | string> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  try {
    const outcome = await Promise.race([p.exited, late]);
    if (outcome !== 'late') return outcome;
  } finally {
    clearTimeout(timer);
  }
  p.child.kill('SIGKILL');
  await p.exited;
  throw new Error(
    `${what}: still running after ${timeoutMs} ms (killed). Its stderr ended with:\n${p.stderr().slice(-4000)}`,
  );
}

/** Runs a CLI command to its end (at most `timeoutMs`). */
export async function runCli(
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const p = spawnCli(args, options);
  const code = await exitedWithin(p, `remessa ${args.join(' ')}`, options.timeoutMs);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

/** How long a test's own request to the sandbox may take: a request that hangs fails naming itself. */
export const CALL_TIMEOUT_MS = 30_000;

/** A signal that aborts a test's request to the sandbox after CALL_TIMEOUT_MS, with an error naming `what`. */
export function callSignal(what: string): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new Error(`${what}: no answer from the sandbox within ${CALL_TIMEOUT_MS} ms`)),
    CALL_TIMEOUT_MS,
  );
  timer.unref();
  return controller.signal;
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 50,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export interface SandboxProcess {
  url: string;
  /** The dialect it serves. */
  profile: BankProfileName;
  proc: Proc;
  /** Ledger counts: one entry per (kind, key). */
  effects(kind?: string): Promise<Array<{ kind: string; key: string; count: number }>>;
  /**
   * Replaces the fault rules. A rule's `route` names the sandbox's own route, which is the interface path whatever
   * profile it serves (src/sandbox/profiles.ts rewrites the delbank paths onto it): the same rule in every profile.
   */
  setFaults(rules: FaultRuleInput[], seed?: number): Promise<void>;
  clearFaults(): Promise<void>;
  /** Any admin route (`/claims/ID`, `/events`, ...) under the sandbox's admin prefix. */
  admin(method: string, route: string, body?: unknown): Promise<unknown>;
  /** One operation of the bank's API in the sandbox's profile (`callBank`). */
  call(method: string, operation: BankOperation, call?: BankCall): Promise<BankAnswer>;
  stop(): Promise<void>;
}

/** What `callBank` sends besides the operation. */
export interface BankCall {
  /** Values of the path's `{...}` segments, in order (a correlation id, an id). */
  params?: readonly string[];
  /** Query string, without the '?'. */
  query?: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent under the profile's idempotency key header. */
  idempotencyKey?: string;
  /** @defaultValue the sandbox's public test key */
  apiKey?: string;
  /** Sent under the profile's account id header where the profile sends one. @defaultValue '1234567' */
  accountId?: string;
}

/** An answer read whole: the body as text and, when it is JSON, parsed. */
export interface BankAnswer {
  status: number;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: tests read response bodies field by field
  json: any;
}

/** Where `callBank` sends: a base URL, the dialect it speaks (`TEST_PROFILE` unless given), and a TLS agent if any. */
export interface BankTarget {
  url: string;
  profile?: BankProfileName;
  dispatcher?: Dispatcher;
}

/**
 * One request to the bank's API in `target`'s profile: the operation's path in that profile with `params` filled in,
 * the API key (and account id, where the profile sends it) under that profile's header names. What a remessa client
 * of that profile would send, for the calls a test makes itself.
 */
export async function callBank(
  target: BankTarget,
  method: string,
  operation: BankOperation,
  call: BankCall = {},
): Promise<BankAnswer> {
  const profile = BANK_PROFILE_DEFINITIONS[target.profile ?? TEST_PROFILE];
  const withAccount = profile.accountIdOn === 'all' || operation === 'webhooks' || operation === 'webhook';
  const route = fillPath(profile.paths[operation], ...(call.params ?? []));
  const res = await undiciFetch(`${target.url}${route}${call.query ? `?${call.query}` : ''}`, {
    ...(target.dispatcher ? { dispatcher: target.dispatcher } : {}),
    signal: callSignal(`${method} ${route}`),
    method,
    headers: {
      [profile.headers.apiKey]: call.apiKey ?? SANDBOX_PUBLIC_API_KEY,
      ...(withAccount ? { [profile.headers.accountId]: call.accountId ?? '1234567' } : {}),
      ...(call.idempotencyKey ? { [profile.headers.idempotencyKey]: call.idempotencyKey } : {}),
      ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: call.body === undefined ? undefined : JSON.stringify(call.body),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

/** A client certificate (and the CA that signed the server's) for a sandbox that requires mutual TLS. PEM text. */
export interface ClientTlsPem {
  cert: string;
  key: string;
  ca: string;
}

/** A call to the sandbox's admin routes (under its admin prefix), with the API key under the profile's header. */
export async function sandboxAdmin(
  target: BankTarget & { apiKey?: string },
  method: string,
  route: string,
  body?: unknown,
): Promise<unknown> {
  const { url, dispatcher } = target;
  const res = await undiciFetch(`${url}${SANDBOX_ADMIN_PREFIX}${route}`, {
    ...(dispatcher ? { dispatcher } : {}),
    signal: callSignal(`sandbox admin ${method} ${route}`),
    method,
    headers: {
      [BANK_PROFILE_DEFINITIONS[target.profile ?? TEST_PROFILE].headers.apiKey]:
        target.apiKey ?? SANDBOX_PUBLIC_API_KEY,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`sandbox admin ${method} ${route}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * Starts `remessa sandbox` as a child process, serving `options.profile` (the suite's profile by default). `args` are
 * extra flags (e.g. `--tls-cert`); `clientTls` is what the admin calls present when those flags make it require a
 * client certificate; `port` a fixed port (a bank restarted where it was); `env` extra environment.
 */
export async function startSandboxProcess(
  dataFile: string,
  options:
    | BankProfileName
    | {
        args?: string[];
        clientTls?: ClientTlsPem;
        profile?: BankProfileName;
        port?: number;
        env?: NodeJS.ProcessEnv;
        /** A further API key it accepts (`-k`), sent by `admin` and `call` instead of the public test key. */
        apiKey?: string;
      } = {},
): Promise<SandboxProcess> {
  const o = typeof options === 'string' ? { profile: options } : options;
  const profile = o.profile ?? TEST_PROFILE;
  const args = [
    'sandbox',
    '--port',
    String(o.port ?? 0),
    '--data',
    dataFile,
    '--profile',
    profile,
    ...(o.apiKey ? ['-k', o.apiKey] : []),
    ...(o.args ?? []),
  ];
  const proc = spawnCli(args, {
    env: { REMESSA_LOG_LEVEL: 'warn', ...o.env },
  });
  const tls = o.clientTls;
  const dispatcher = tls ? new Agent({ connect: { cert: tls.cert, key: tls.key, ca: tls.ca } }) : undefined;
  const url = await waitFor(
    'the sandbox to listen',
    async () => {
      const m = /sandbox listening on (https?:\/\/[^\s]+)/.exec(proc.stdout() + proc.stderr());
      if (m) return m[1]!;
      if (proc.child.exitCode !== null) throw new Error(`sandbox exited: ${proc.stderr()}`);
      return undefined;
    },
    20_000,
  );
  const target = { url, profile, ...(dispatcher ? { dispatcher } : {}), ...(o.apiKey ? { apiKey: o.apiKey } : {}) };
  return {
    url,
    profile,
    proc,
    effects: async (kind) => (await sandboxAdmin(target, 'GET', `/effects${kind ? `?kind=${kind}` : ''}`)) as never,
    setFaults: async (rules, seed) => {
      await sandboxAdmin(target, 'PUT', '/faults', { rules, ...(seed === undefined ? {} : { seed }) });
    },
    clearFaults: async () => {
      await sandboxAdmin(target, 'DELETE', '/faults');
    },
    admin: (method, route, body) => sandboxAdmin(target, method, route, body),
    call: (method, operation, call) => callBank(target, method, operation, { apiKey: o.apiKey, ...call }),
    stop: async () => {
      if (proc.child.exitCode === null) proc.child.kill('SIGTERM');
      await exitedWithin(proc, 'the sandbox, stopped by SIGTERM');
      await dispatcher?.close();
    },
  };
}

export interface Workspace {
  dir: string;
  inbox: string;
  outbox: string;
  archive: string;
  data: string;
  config: string;
}

/**
 * A temp folder with inbox/outbox/archive/data and a config pointing at `bankUrl`, in `TEST_PROFILE` unless
 * `extra.bank.profile` says otherwise.
 */
export async function makeWorkspace(
  bankUrl: string,
  extra: {
    intake?: Record<string, unknown>;
    queue?: Record<string, unknown>;
    mappings?: Record<string, unknown>;
    bank?: Record<string, unknown>;
    policy?: Record<string, unknown>;
    /** Money controls; absent: no file waits for approval (the suites that test it say so). */
    approval?: Record<string, unknown>;
    limits?: Record<string, unknown>;
  } = {},
): Promise<Workspace> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-'));
  const ws: Workspace = {
    dir,
    inbox: path.join(dir, 'inbox'),
    outbox: path.join(dir, 'outbox'),
    archive: path.join(dir, 'archive'),
    data: path.join(dir, 'data'),
    config: path.join(dir, 'remessa.jsonc'),
  };
  const config = {
    folders: { inbox: ws.inbox, outbox: ws.outbox, archive: ws.archive, data: ws.data },
    bank: {
      url: bankUrl,
      profile: TEST_PROFILE,
      apiKey: SANDBOX_PUBLIC_API_KEY,
      accountId: '1234567',
      retry: { maxAttempts: 6, baseDelayMs: 20, maxDelayMs: 200, maxRetryAfterMs: 2000 },
      timeouts: { connectMs: 2000, headersMs: 2000, bodyMs: 2000 },
      ...extra.bank,
    },
    intake: { stableMs: 100, ...extra.intake },
    queue: {
      concurrency: 8,
      rateLimits: {
        charges: { requests: 0, intervalMs: 1000 },
        'bill-payments': { requests: 0, intervalMs: 1000 },
        pix: { requests: 0, intervalMs: 1000 },
        claims: { requests: 0, intervalMs: 1000 },
      },
      ...extra.queue,
    },
    ...(extra.mappings ? { mappings: extra.mappings } : {}),
    ...(extra.policy ? { policy: extra.policy } : {}),
    // A real bank URL turns approval on for the money kinds by default (README "Money controls"): off here unless
    // the suite says otherwise, so the suites that pay bills see them paid.
    approval: extra.approval ?? { kinds: [] },
    ...(extra.limits ? { limits: extra.limits } : {}),
  };
  await fs.writeFile(ws.config, JSON.stringify(config, null, 2));
  return ws;
}

/** Copies `source` into the inbox the way a careful writer does: temp name, then rename. */
export async function drop(
  ws: Workspace,
  source: string | Buffer,
  relative: string,
  options: { /** Owner of the dropped file (tests run as root): the OS user who sent it. */ uid?: number } = {},
): Promise<void> {
  await dropIn(ws.inbox, source, relative, options);
}

/** `drop` under any folder (an `.approved` marker in `approval.markersFrom`, ...): written, owned by `uid`, renamed. */
export async function dropIn(
  dir: string,
  source: string | Buffer,
  relative: string,
  options: { uid?: number } = {},
): Promise<void> {
  const target = path.join(dir, relative);
  await fs.mkdir(path.dirname(target), { recursive: true });
  const tmp = `${target}.tmp`;
  if (typeof source === 'string') await fs.copyFile(source, tmp);
  else await fs.writeFile(tmp, source);
  if (options.uid !== undefined) await fs.chown(tmp, options.uid, options.uid);
  await fs.rename(tmp, target);
}

/** One answer in an outbox folder: the base name `<stem>.<intake id>` and its files (src/outbox/names.ts). */
export interface AnswerFiles {
  /** `<stem>.<YYYYMMDD>T<HHMMSS>Z-<8 hex>` */
  base: string;
  /** Result files, oldest version first (`.result.csv`, `.result.v2.csv`, ...). */
  results: string[];
  /** Summaries, oldest version first. */
  summaries: string[];
  rejected: string | undefined;
}

const ANSWER_FILE =
  /^(.*\.\d{8}T\d{6}Z-[0-9a-f]{8})\.(result(?:\.v(\d+))?\.csv|summary(?:\.v(\d+))?\.json|rejected\.txt)$/;

/** Every answer of files named `<stem>.*` in `outbox/<kindFolder>/`, oldest taking first. */
export async function answersOf(
  ws: Pick<Workspace, 'outbox'>,
  kindFolder: string,
  stem: string,
): Promise<AnswerFiles[]> {
  const dir = path.join(ws.outbox, kindFolder);
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  const byBase = new Map<string, AnswerFiles & { v: Map<string, number> }>();
  for (const name of names) {
    const m = ANSWER_FILE.exec(name);
    if (!m || m[1]!.slice(0, m[1]!.lastIndexOf('.')) !== stem) continue;
    const base = m[1]!;
    let a = byBase.get(base);
    if (!a) {
      a = { base, results: [], summaries: [], rejected: undefined, v: new Map() };
      byBase.set(base, a);
    }
    const file = path.join(dir, name);
    if (m[2]!.startsWith('result')) a.results.push(file);
    else if (m[2]!.startsWith('summary')) a.summaries.push(file);
    else a.rejected = file;
    a.v.set(file, Number(m[3] ?? m[4] ?? 1));
  }
  return [...byBase.values()]
    .sort((x, y) => (x.base < y.base ? -1 : 1))
    .map(({ v, ...a }) => ({
      ...a,
      results: a.results.sort((x, y) => v.get(x)! - v.get(y)!),
      summaries: a.summaries.sort((x, y) => v.get(x)! - v.get(y)!),
    }));
}

/**
 * Waits for the answer of `<kind>/<stem>` (the latest taking of that name): the result CSV (its latest version) or
 * the rejection.
 */
export async function waitForAnswer(
  ws: Pick<Workspace, 'outbox'>,
  kindFolder: string,
  stem: string,
  timeoutMs = 60_000,
): Promise<{ type: 'result' | 'rejected'; file: string; text: string }> {
  return waitFor(
    `the answer to ${kindFolder}/${stem}`,
    async () => {
      const latest = (await answersOf(ws, kindFolder, stem)).at(-1);
      if (!latest) return undefined;
      const [type, file] = latest.rejected
        ? (['rejected', latest.rejected] as const)
        : (['result', latest.results.at(-1)] as const);
      if (!file) return undefined;
      // A result is answered once its summary is written too (it is renamed into place just after the result).
      if (type === 'result' && latest.summaries.length < latest.results.length) return undefined;
      const text = await fs.readFile(file, 'utf8').catch(() => undefined);
      return text === undefined ? undefined : { type, file, text };
    },
    timeoutMs,
  );
}

export function startDaemon(ws: Workspace, env: NodeJS.ProcessEnv = {}): Proc {
  return spawnCli(['daemon', '--config', ws.config], { env });
}

export async function stopDaemon(p: Proc): Promise<number | string> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  return exitedWithin(p, 'the daemon, stopped by SIGTERM');
}

/** Parses a result CSV (`,` or `;`, UTF-8 or Windows-1252 bytes) into records keyed by header. */
export function parseResultCsv(
  data: string | Buffer,
  encoding: 'utf8' | 'windows-1252' = 'utf8',
): Array<Record<string, string>> {
  const text = (typeof data === 'string' ? data : iconv.decode(data, encoding)).replace(/^\uFEFF/, '');
  const firstLine = text.slice(0, text.search(/\r?\n/));
  const delimiter = firstLine.split(';').length > firstLine.split(',').length ? ';' : ',';
  return parse(text, { columns: true, delimiter, skip_empty_lines: true, relax_column_count: true }) as Array<
    Record<string, string>
  >;
}

/**
 * A bill-payments file (`barCode,amount`, comma and dot) of synthetic bank slips the sandbox pays, one a amount in
 * cents. `set` keeps its bills apart from every other call's in the same sandbox (a bill is paid once).
 */
export function bankSlipBillsCsv(amounts: readonly number[], set: number, dueDate = '2030-08-31'): string {
  const lines = ['barCode,amount'];
  amounts.forEach((cents, i) => {
    const barCode = buildBankSlipBarCode({
      bankCode: '341',
      dueDate,
      amountCents: cents,
      freeField: `1090000${String(set).padStart(10, '0')}${String(i).padStart(8, '0')}`,
    });
    lines.push(`${barCode},${(cents / 100).toFixed(2)}`);
  });
  return `${lines.join('\n')}\n`;
}
