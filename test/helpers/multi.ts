/**
 * A fleet of daemons on one PostgreSQL store (issue 13 §2): `startFleet(n, ...)` takes a fresh database of the test
 * file's throw-away cluster (test/helpers/postgres.ts), starts `remessa sandbox` in its own process with the fault
 * rules given, and n daemons (child processes) that share `store.url`, one inbox, one outbox and one archive, each with
 * its own `folders.data` (its work area and lock) and, with n > 1, its own `store.daemonName` and a `store.leaseMs`.
 * `auditMulti(...)` then checks what the crash suites must prove, whatever killed whom:
 *   - every dropped file answered exactly once (one answer, one result version: written once, by one daemon);
 *   - every row of every file in exactly one result line (matched on the file's key column), no row left without an
 *     outcome (`succeeded` or `failed` only; `uncertain`, `pending`, ... are "left unanswered"), and no row of the
 *     store outside a terminal state;
 *   - every bank effect once in the sandbox's ledger, and exactly the effects of the rows that succeeded;
 *   - no false `failed`: a row `failed` has no effect at the bank;
 *   - the inbox empty and the work areas of the daemons still alive empty.
 *
 * Until several daemons may share a store (the `shared` work: config keys `store.daemonName` and `store.leaseMs`),
 * the config refuses those keys: `multiDaemonUnsupported()` says so (the suites skip their multi-daemon parts with
 * that message and turn on by themselves once the keys are accepted).
 */

import fs from 'node:fs/promises';
import path from 'node:path';
import Database from 'better-sqlite3';
import { configSchema } from '../../src/config.js';
import { buildBankSlipBarCode } from '../../src/formats/index.js';
import { INBOX_STORE_FILE, SHARED_WORK_DIR } from '../../src/runner/inbox-store.js';
import { createPrng, type FaultRuleInput } from '../../src/sandbox/faults.js';
import {
  answersOf,
  drop,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
} from '../e2e-harness.js';
import type { TestCluster } from './postgres.js';
import { writeDaemonConfigs } from './shared-daemons.js';

/** The store keys several daemons on one store need (the shared-rows contract). */
export const MULTI_DAEMON_KEYS = ['store.daemonName', 'store.leaseMs'] as const;

/**
 * Undefined when the config accepts `store.daemonName` and `store.leaseMs`; else the message to skip with, naming the
 * key that is missing.
 */
export function multiDaemonUnsupported(): string | undefined {
  const parsed = configSchema.shape.store.safeParse({
    url: 'postgres://remessa@127.0.0.1:5432/remessa',
    daemonName: 'probe-1',
    leaseMs: 3000,
  });
  if (parsed.success) return undefined;
  const refused = parsed.error.issues.flatMap((i) => ('keys' in i && Array.isArray(i.keys) ? i.keys : []));
  const key = refused.includes('daemonName') || refused.length === 0 ? 'store.daemonName' : `store.${refused[0]}`;
  return `several daemons on one store: skipped until ${key} is accepted (the shared-rows work of issue 13 §1)`;
}

export interface FleetOptions {
  /** Fault rules of the sandbox, set once it listens (latency, errors, resets, drops after commit...). */
  faults?: FaultRuleInput[];
  /** Seed of the sandbox's fault PRNG. */
  seed?: number;
  /** Lease of each daemon's claims, in ms (only with n > 1). @defaultValue 3000 */
  leaseMs?: number;
  /** `queue` of every daemon's config (makeWorkspace's defaults otherwise). */
  queue?: Record<string, unknown>;
  /** `bank` of every daemon's config. */
  bank?: Record<string, unknown>;
  /** More of `store` of every daemon's config (`maxConnections` is 4 unless given). */
  store?: Record<string, unknown>;
  /** Extra environment of the daemons. */
  env?: NodeJS.ProcessEnv;
  /** Whether to write `daemonName`/`leaseMs` even for one daemon. @defaultValue n > 1 */
  named?: boolean;
}

export interface Fleet {
  sandbox: SandboxProcess;
  /** The sandbox's SQLite file (its bill payments, read by the audit). */
  sandboxData: string;
  cluster: TestCluster;
  database: string;
  /** Shared inbox, outbox and archive; `data`/`config` of daemon 0. */
  shared: Workspace;
  /** One workspace per daemon slot: the shared folders, its own data folder and config. */
  workspaces: Workspace[];
  /** The process in each slot (the latest started), undefined once stopped for good. */
  daemons: Array<Proc | undefined>;
  /** Slots killed for good (never restarted). */
  gone: Set<number>;
  /** Restarts of daemons that stopped because their lease was lost (superviseFleet). */
  leaseRestarts: number;
  /** Every process ever started (for the last-resort kill in afterAll). */
  all: Proc[];
  /** Starts (or restarts) the daemon of slot i. */
  start(i: number): Proc;
  /** SIGKILLs slot i and waits for it to exit; `forGood` leaves the slot dead. */
  kill(i: number, forGood?: boolean): Promise<void>;
  /** SIGTERM to every live daemon; the exit codes by slot. */
  stopAll(): Promise<Array<number | string | undefined>>;
  /** Drops a file into the shared inbox. */
  drop(content: string, relative: string): Promise<void>;
  /** SQL in the fleet's database as the superuser. */
  query<T extends Record<string, unknown>>(sql: string): Promise<T[]>;
  /** SIGKILLs whatever is still running, stops the sandbox. */
  close(): Promise<void>;
}

/**
 * n daemons on one fresh PostgreSQL database of `cluster`, one sandbox process with `options.faults`. The daemons are
 * started (slots 0..n-1).
 */
export async function startFleet(n: number, cluster: TestCluster, options: FleetOptions = {}): Promise<Fleet> {
  const named = options.named ?? n > 1;
  if (named) {
    const why = multiDaemonUnsupported();
    if (why) throw new Error(why);
  }
  const db = await cluster.createDatabase();
  const base = await makeWorkspace('http://127.0.0.1:1', {
    queue: options.queue,
    bank: options.bank,
  });
  const sandboxData = path.join(base.dir, 'sandbox.sqlite');
  const sandbox = await startSandboxProcess(sandboxData);
  if (options.faults) await sandbox.setFaults(options.faults, options.seed);
  const workspaces: Workspace[] = await writeDaemonConfigs(base, {
    url: db.url,
    password: cluster.password,
    names: Array.from({ length: n }, (_, i) => (named ? `daemon-${i}` : undefined)),
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
    store: { maxConnections: 4, ...options.store },
    bankUrl: sandbox.url,
  });
  const fleet: Fleet = {
    sandbox,
    sandboxData,
    cluster,
    database: db.name,
    shared: workspaces[0]!,
    workspaces,
    daemons: [],
    gone: new Set(),
    leaseRestarts: 0,
    all: [],
    start(i) {
      if (fleet.gone.has(i)) throw new Error(`daemon ${i} was killed for good`);
      const p = startDaemon(workspaces[i]!, options.env);
      fleet.daemons[i] = p;
      fleet.all.push(p);
      return p;
    },
    async kill(i, forGood = false) {
      const p = fleet.daemons[i];
      if (p && p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      if (p) await p.exited;
      if (forGood) {
        fleet.gone.add(i);
        fleet.daemons[i] = undefined;
      }
    },
    async stopAll() {
      // Each one ready (or gone) first: a daemon restarted a moment ago and still starting has no SIGTERM handler yet,
      // and ends by the signal (as systemd expects of it); the clean stop asked of it is that of a daemon at work.
      await Promise.all(
        fleet.daemons.map((p) =>
          p
            ? waitFor(
                'the daemon ready before its stop',
                () => p.child.exitCode !== null || p.stderr().includes(DAEMON_READY) || undefined,
                30_000,
                20,
              )
            : undefined,
        ),
      );
      return Promise.all(fleet.daemons.map((p) => (p ? stopDaemon(p) : undefined)));
    },
    drop: (content, relative) => drop(base, Buffer.from(content), relative),
    query: (sql) => cluster.query(sql, db.name) as never,
    async close() {
      for (const p of fleet.all) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await sandbox.stop();
    },
  };
  for (let i = 0; i < n; i++) fleet.start(i);
  return fleet;
}

/** One file dropped into the fleet's inbox, as the audit needs to know it. */
export interface DroppedFile {
  /** Kind folder (`bill-payments`, `charges`). */
  kind: 'bill-payments' | 'charges';
  /** The file's name without `.csv`. */
  stem: string;
  /** The value of `keyColumn` of each data row, in input order (unique within the file). */
  keys: string[];
  /** The column that identifies a row: `barCode` for bill payments, `correlationId` for charges. */
  keyColumn: string;
}

export interface AuditReport {
  problems: string[];
  /** Rows by outcome, all files together. */
  outcomes: Record<string, number>;
  /** Effects in the ledger by kind. */
  effects: Record<string, number>;
}

const TERMINAL = new Set(['succeeded', 'failed', 'rejected', 'duplicate']);

/**
 * Checks a fleet's end state against the files dropped (see the header). Collects every problem rather than stopping
 * at the first, so a failure shows the whole picture; `problems` empty = clean.
 */
export async function auditMulti(fleet: Fleet, files: readonly DroppedFile[]): Promise<AuditReport> {
  const problems: string[] = [];
  const outcomes: Record<string, number> = {};
  const effects = await fleet.sandbox.effects();
  const effectCount: Record<string, number> = {};
  for (const e of effects) {
    effectCount[e.kind] = (effectCount[e.kind] ?? 0) + 1;
    if (e.count !== 1) problems.push(`effect ${e.kind} ${e.key} happened ${e.count} times`);
  }
  // What the bank did, by the row's own key: bills paid by bar code (with the key the ledger counts them by),
  // charges created by correlation id.
  const paid = readPaidBills(fleet.sandboxData);
  const created = new Set(effects.filter((e) => e.kind === 'charge_created').map((e) => e.key));
  const billKeys = new Set(effects.filter((e) => e.kind === 'bill_paid').map((e) => e.key));
  const succeededBills = new Set<string>();
  const succeededCharges = new Set<string>();

  for (const file of files) {
    const where = `${file.kind}/${file.stem}`;
    const answers = await answersOf(fleet.shared, file.kind, file.stem);
    if (answers.length !== 1) {
      problems.push(`${where}: ${answers.length} answers (expected exactly one)`);
      if (answers.length === 0) continue;
    }
    const answer = answers[0]!;
    if (answer.rejected) {
      problems.push(`${where}: rejected`);
      continue;
    }
    if (answer.results.length !== 1) problems.push(`${where}: ${answer.results.length} result versions (expected 1)`);
    const lastResult = answer.results.at(-1);
    if (!lastResult) {
      problems.push(`${where}: no result file`);
      continue;
    }
    const lines = parseResultCsv(await fs.readFile(lastResult));
    const seen = new Map<string, number>();
    for (const line of lines) {
      const key = line[file.keyColumn] ?? '';
      seen.set(key, (seen.get(key) ?? 0) + 1);
      const status = line.status ?? '';
      outcomes[status] = (outcomes[status] ?? 0) + 1;
      if (status !== 'succeeded' && status !== 'failed') {
        problems.push(`${where}: row ${key} left ${status} (${line.errorCode ?? ''} ${line.errorMessage ?? ''})`);
      }
      const effect = file.kind === 'bill-payments' ? paid.get(key) : created.has(key) ? key : undefined;
      if (status === 'failed' && effect !== undefined) {
        problems.push(`${where}: row ${key} failed (${line.errorCode}) but the bank did it (a false failed)`);
      }
      if (status === 'succeeded') {
        if (effect === undefined) problems.push(`${where}: row ${key} succeeded with no effect at the bank`);
        (file.kind === 'bill-payments' ? succeededBills : succeededCharges).add(key);
      }
    }
    for (const key of file.keys) {
      const n = seen.get(key) ?? 0;
      if (n !== 1) problems.push(`${where}: row ${key} in ${n} result lines (expected exactly one)`);
    }
    for (const key of seen.keys()) if (!file.keys.includes(key)) problems.push(`${where}: a stray result line ${key}`);
  }

  // The bank's effects are exactly the succeeded rows' (nothing paid or created that no result line owns).
  for (const [barCode, key] of paid) {
    if (!succeededBills.has(barCode)) problems.push(`bill ${barCode} paid at the bank but no row succeeded with it`);
    if (!billKeys.has(key)) problems.push(`bill ${barCode} paid without its ledger entry (${key})`);
  }
  for (const id of created) {
    if (!succeededCharges.has(id)) problems.push(`charge ${id} created at the bank but no row succeeded with it`);
  }

  // The store: no row outside a terminal state.
  const states = await fleet.query<{ state: string; n: string }>(
    'SELECT state, COUNT(*) AS n FROM rows GROUP BY state ORDER BY state',
  );
  for (const s of states) if (!TERMINAL.has(s.state)) problems.push(`store: ${s.n} rows ${s.state}`);

  // Folders: nothing left in the inbox, nor in the work area of a daemon still alive.
  const left = await filesUnder(fleet.shared.inbox);
  if (left.length > 0) problems.push(`inbox not empty: ${left.join(', ')}`);
  for (let i = 0; i < fleet.workspaces.length; i++) {
    if (fleet.gone.has(i)) continue;
    const work = await filesUnder(path.join(fleet.workspaces[i]!.data, 'work'));
    if (work.length > 0) problems.push(`daemon ${i}: work area not empty: ${work.join(', ')}`);
  }
  return { problems, outcomes, effects: effectCount };
}

/** The sandbox's PAID bill payments: bar code -> the key its ledger entry is under (idempotency key, else bar code). */
function readPaidBills(file: string): Map<string, string> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    const rows = db
      .prepare(`SELECT bar_code AS barCode, idempotency_key AS key FROM bill_payments WHERE status = 'PAID'`)
      .all() as Array<{ barCode: string; key: string | null }>;
    const paid = new Map<string, string>();
    for (const r of rows) paid.set(r.barCode, r.key ?? r.barCode);
    return paid;
  } finally {
    db.close();
  }
}

/** The files under `dir`, but the name of the store that serves a shared inbox (src/runner/inbox-store.ts). */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  const storeMark = path.join(SHARED_WORK_DIR, INBOX_STORE_FILE);
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .filter((f) => f !== storeMark);
}

/** A bill-payments file of `n` distinct payable bills (by bar code), set `set` (0-9) apart from other sets. */
export function billsFile(set: number, n: number, stem = `bills-${set}`): DroppedFile & { content: string } {
  const keys: string[] = [];
  const lines = ['barCode,amount'];
  for (let i = 0; i < n; i++) {
    const cents = 2000 + set * 1000 + i;
    const barCode = buildBankSlipBarCode({
      bankCode: '341',
      dueDate: '2030-09-30',
      amountCents: cents,
      freeField: `1090000765432100${set % 10}${String(i).padStart(8, '0')}`,
    });
    keys.push(barCode);
    lines.push(`${barCode},${(cents / 100).toFixed(2)}`);
  }
  return { kind: 'bill-payments', stem, keys, keyColumn: 'barCode', content: `${lines.join('\n')}\n` };
}

/** A charges file of `n` bank slips with correlation ids `MULTI-<set>-<i>`. */
export function chargesFile(set: number, n: number, stem = `slips-${set}`): DroppedFile & { content: string } {
  const keys: string[] = [];
  const lines = [
    'type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state',
  ];
  for (let i = 0; i < n; i++) {
    const id = `MULTI-${set}-${i}`;
    keys.push(id);
    lines.push(
      `BANKSLIP,${id},${(30 + i).toFixed(2)},2027-11-30,Cliente ${i},390.533.447-05,01310-100,Rua A,Recife,PE`,
    );
  }
  return { kind: 'charges', stem, keys, keyColumn: 'correlationId', content: `${lines.join('\n')}\n` };
}

/** Drops each file into the fleet's inbox (`<kind>/<stem>.csv`). */
export async function dropAll(fleet: Fleet, files: ReadonlyArray<DroppedFile & { content: string }>): Promise<void> {
  for (const f of files) await fleet.drop(f.content, `${f.kind}/${f.stem}.csv`);
}

/** Whether every file has its answer (a result or a rejection). */
export async function allAnswered(fleet: Fleet, files: readonly DroppedFile[]): Promise<boolean> {
  for (const f of files) {
    const a = (await answersOf(fleet.shared, f.kind, f.stem)).at(-1);
    if (!a || (a.results.length === 0 && !a.rejected)) return false;
  }
  return true;
}

/** What a daemon logs (stderr) once it takes files (src/runner/daemon.ts). */
export const DAEMON_READY = 'remessa daemon ready';

/** Slots whose daemon is alive and has said it is ready. */
function readySlots(fleet: Fleet): number[] {
  return fleet.daemons.flatMap((p, i) =>
    p && p.child.exitCode === null && p.stderr().includes(DAEMON_READY) ? [i] : [],
  );
}

/** What a daemon logs when it stops because its lease was lost (src/runner/daemon.ts): exit 1, for systemd to restart. */
export const LEASE_LOST_STOP = 'its lease was lost';

/**
 * Plays systemd for the fleet: a daemon that stopped by itself because its lease was lost (frozen or cut off long
 * enough: a designed stop, which a loaded machine can cause) is restarted; one that exited for any other reason (a
 * crash at start or at work) is a failure: throws with the end of its log.
 */
export function superviseFleet(fleet: Fleet): void {
  for (const [i, p] of fleet.daemons.entries()) {
    if (!p || p.child.exitCode === null) continue;
    if (p.child.exitCode === 1 && p.stderr().includes(LEASE_LOST_STOP)) {
      fleet.leaseRestarts++;
      fleet.start(i);
      continue;
    }
    throw new Error(`daemon ${i} exited by itself (${p.child.exitCode}): ${p.stderr().slice(-3000)}`);
  }
}

export interface ChaosOptions {
  /** SIGKILLs to deal (fewer when the work ends first). */
  kills: number;
  /** After this many kills, the next victim is killed for good (never restarted); only while another one lives. */
  forGoodAfter?: number;
  /** Seed of the victims and moments: a failure replays. */
  seed: number;
  /** Longest random wait after the fleet acted, before a kill, in ms. @defaultValue 400 */
  maxPauseMs?: number;
  /** Called with a line per kill. */
  log?: (line: string) => void;
}

/**
 * Random SIGKILLs of any live daemon while the files are worked: each time the bank has acted since the last kill (so
 * that kills land mid-batch), a seeded random moment later, a seeded random live daemon dies and is restarted at once
 * (or, once, killed for good). Stops early when every file is answered. Returns the kills dealt and the slot killed
 * for good, if any.
 */
export async function chaos(
  fleet: Fleet,
  files: readonly DroppedFile[],
  options: ChaosOptions,
): Promise<{ kills: number; forGood: number | undefined }> {
  const random = createPrng(options.seed);
  const effectsNow = async () => (await fleet.sandbox.effects()).reduce((n, e) => n + e.count, 0);
  let kills = 0;
  let forGood: number | undefined;
  for (let k = 0; k < options.kills; k++) {
    const before = await effectsNow();
    const acted = await waitFor(
      'the fleet to act',
      async () => {
        superviseFleet(fleet);
        if ((await effectsNow()) > before && readySlots(fleet).length > 0) return 'acted';
        if (await allAnswered(fleet, files)) return 'done';
        return undefined;
      },
      60_000,
      20,
    );
    if (acted !== 'acted') break;
    await new Promise((r) => setTimeout(r, Math.floor(random() * (options.maxPauseMs ?? 400))));
    // A victim among the daemons at work (ready): a daemon still starting is not where rows are in flight.
    const live = fleet.daemons.flatMap((p, i) => (p ? [i] : []));
    const ready = readySlots(fleet);
    const victim = ready[Math.floor(random() * ready.length)];
    if (victim === undefined) continue; // the one at work died by itself meanwhile: the next wait says so
    const goodbye = forGood === undefined && options.forGoodAfter !== undefined && k >= options.forGoodAfter;
    if (goodbye && live.length > 1) {
      await fleet.kill(victim, true);
      forGood = victim;
      options.log?.(`kill ${k + 1}: daemon ${victim} SIGKILLed for good`);
    } else {
      await fleet.kill(victim);
      fleet.start(victim);
      options.log?.(`kill ${k + 1}: daemon ${victim} SIGKILLed and restarted`);
    }
    kills++;
  }
  return { kills, forGood };
}

/**
 * Waits until every file is answered and archived (nothing left in the shared inbox and its work area). On a timeout, the error says what the audit sees by then (the files without an
 * answer, rows of the store not ended, what is left in the work areas) and the end of each daemon's log, so that a
 * stall shows where it stands.
 */
export async function waitAllAnswered(fleet: Fleet, files: readonly DroppedFile[], timeoutMs: number): Promise<void> {
  try {
    await waitFor(
      'every file answered and archived',
      async () => {
        superviseFleet(fleet);
        // Answered is not the end: the holder archives the file after its answer, and a holder killed in between
        // leaves it in the shared work area for another daemon to adopt once its lease has run out.
        return (await allAnswered(fleet, files)) && (await filesUnder(fleet.shared.inbox)).length === 0;
      },
      timeoutMs,
      100,
    );
  } catch (error) {
    const report = await auditMulti(fleet, files).catch((e: unknown) => ({ problems: [`audit failed: ${e}`] }));
    const logs = fleet.daemons.map((p, i) =>
      p ? `--- daemon ${i}:\n${p.stderr().slice(-2500)}` : `--- daemon ${i}: gone`,
    );
    throw new Error(
      `${error instanceof Error ? error.message : String(error)}\nthe audit by then:\n  ${report.problems.join('\n  ')}\n${logs.join('\n')}`,
    );
  }
}
