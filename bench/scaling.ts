/**
 * (f) scaling across daemons (issue 13 §2): rows per second of bill-payment files (lookup + pay per row; 6 files by
 * default, as a file is driven by the daemon that took it: daemons share the work file by file) worked by
 * 1, 2 and 3 daemons sharing one PostgreSQL store (a throw-away cluster, as the tests start it), against a sandbox in
 * its own process that answers every request after a realistic delay (fault rule `{route: '*', latencyMs: 80}`:
 * docs/sandbox.md), so that the work is bound by the bank's latency and not by this machine's cores; the ratio of each
 * to the single daemon on PostgreSQL; and the same single daemon on SQLite. Rate limits off (they would bind first).
 *
 * Each measurement: a fresh database (or SQLite data folder) and a fresh sandbox; the daemons started and ready
 * ("remessa daemon ready") before the clock starts; timed from the first file's rename into the shared inbox to the
 * last result file in the outbox. Daemon start-up and data generation are not timed.
 *
 * Several daemons on one store need `store.daemonName` / `store.leaseMs` (the shared-rows work): until the config
 * accepts them, the 2- and 3-daemon lines say "not available".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { multiDaemonUnsupported } from '../test/helpers/multi.js';
import { startPostgres, type TestCluster } from '../test/helpers/postgres.js';
import { writeBillsFile } from './generate.js';

const SANDBOX_KEY = 'sandbox-public-test-key';

export interface ScalingOptions {
  /** node arguments that start remessa's CLI, before the command (compiled dist or tsx). */
  prefix: () => string[];
  /** Work folder (generated data, stores, logs). */
  dir: string;
  /** Rows in all, split over `files` bill-payments files. */
  rows: number;
  /**
   * How many files the rows come in, dropped together. A file is driven by the daemon that took it
   * (docs/postgres.md, "Several daemons"): daemons share the work file by file. @defaultValue 6
   */
  files?: number;
  /** queue.concurrency of each daemon. */
  concurrency: number;
  /** The sandbox's delay before processing each request, in ms. @defaultValue 80 */
  latencyMs?: number;
  /** Daemon counts measured on PostgreSQL. @defaultValue [1, 2, 3] */
  daemons?: readonly number[];
  log: (message: string) => void;
}

export interface ScalingFigure {
  name: string;
  engine: 'postgres' | 'sqlite';
  daemons: number;
  rows: number;
  /** Undefined when not measured (`note` says why). */
  wallMs?: number;
  note?: string;
}

interface Spawned {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | string>;
}

function spawnRemessa(prefix: string[], args: string[], env: NodeJS.ProcessEnv, logFile: string): Spawned {
  const child = spawn(process.execPath, [...prefix, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const keep = (d: Buffer) => {
    out += d.toString();
    // Only the head matters (readiness, start-up errors); the rest goes to the log file at the end.
    if (out.length > 200_000) out = out.slice(-100_000);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => {
      writeFileSync(logFile, out);
      resolve(code ?? signal ?? -1);
    });
  });
  return { child, output: () => out, exited };
}

async function until<T>(what: string, check: () => T | undefined, timeoutMs: number, everyMs = 20): Promise<T> {
  const end = performance.now() + timeoutMs;
  for (;;) {
    const v = check();
    if (v !== undefined) return v;
    if (performance.now() > end) throw new Error(`scaling bench: timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

async function stop(p: Spawned): Promise<void> {
  if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGTERM');
  await p.exited;
}

/** The sandbox in its own process, every request delayed by `latencyMs`. */
async function startSandbox(options: ScalingOptions, folder: string): Promise<{ url: string; proc: Spawned }> {
  // A config of its own (the repository's config/ must not leak in), the embedded bank's defaults otherwise.
  const config = path.join(folder, 'sandbox.json');
  writeFileSync(config, `${JSON.stringify({ folders: { base: path.join(folder, 'sandbox') } }, null, 2)}\n`);
  const proc = spawnRemessa(
    options.prefix(),
    ['--config', config, 'sandbox', '--port', '0', '--data', path.join(folder, 'sandbox.sqlite')],
    { REMESSA_LOG_LEVEL: 'warn' },
    path.join(folder, 'sandbox.log'),
  );
  const url = await until(
    'the sandbox to listen',
    () => {
      const m = /sandbox listening on (http:\/\/\S+)/.exec(proc.output());
      if (m) return m[1]!;
      if (proc.child.exitCode !== null) throw new Error(`sandbox exited: ${proc.output()}`);
      return undefined;
    },
    60_000,
  );
  const res = await fetch(`${url}/__sandbox/faults`, {
    method: 'PUT',
    headers: { 'x-service-api-key': SANDBOX_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ rules: [{ route: '*', latencyMs: options.latencyMs ?? 80 }] }),
  });
  if (!res.ok) throw new Error(`sandbox faults: ${res.status} ${await res.text()}`);
  return { url, proc };
}

/** One measurement: `daemons` daemons on one store (PostgreSQL when `pg` is given, else SQLite). */
async function measure(
  options: ScalingOptions,
  file: string,
  name: string,
  daemons: number,
  pg: { cluster: TestCluster; named: boolean } | undefined,
): Promise<number> {
  const folder = path.join(options.dir, 'scaling', name.replace(/\W+/g, '-'));
  rmSync(folder, { recursive: true, force: true });
  mkdirSync(folder, { recursive: true });
  const sandbox = await startSandbox(options, folder);
  const procs: Spawned[] = [];
  try {
    let store: Record<string, unknown> = {};
    if (pg) {
      const db = await pg.cluster.createDatabase();
      const passwordFile = path.join(folder, 'store-password');
      writeFileSync(passwordFile, `${pg.cluster.password}\n`, { mode: 0o600 });
      store = { url: db.url, passwordFile, maxConnections: 6 };
    }
    const off = { requests: 0, intervalMs: 1000 };
    const inbox = path.join(folder, 'inbox');
    const outbox = path.join(folder, 'outbox');
    for (let i = 0; i < daemons; i++) {
      const config = {
        folders: { inbox, outbox, archive: path.join(folder, 'archive'), data: path.join(folder, `data-${i}`) },
        bank: { url: sandbox.url, apiKey: SANDBOX_KEY, accountId: 'bench-account' },
        intake: { stableMs: 100 },
        queue: {
          concurrency: options.concurrency,
          rateLimits: { charges: off, 'bill-payments': off, pix: off, claims: off },
        },
        store: pg?.named ? { ...store, daemonName: `bench-${i}`, leaseMs: 10_000 } : store,
        log: { level: 'info' },
        approval: { kinds: [] },
      };
      const configFile = path.join(folder, `remessa-${i}.json`);
      writeFileSync(configFile, `${JSON.stringify(config, null, 2)}\n`);
      procs.push(
        spawnRemessa(options.prefix(), ['daemon', '--config', configFile], {}, path.join(folder, `daemon-${i}.log`)),
      );
    }
    await until(
      `${daemons} daemon(s) ready`,
      () => {
        for (const p of procs) {
          if (p.child.exitCode !== null) throw new Error(`a daemon exited at start:\n${p.output().slice(-2000)}`);
        }
        return procs.every((p) => p.output().includes('remessa daemon ready')) ? true : undefined;
      },
      60_000,
    );
    // The rows split into files (the same bills whatever the split), each written under a temp name; the clock
    // starts as the first is renamed into the inbox and stops when the last one's result is there.
    mkdirSync(path.join(inbox, 'bill-payments'), { recursive: true });
    const [header, ...rows] = readFileSync(file, 'utf8').trimEnd().split('\n');
    const count = Math.max(1, Math.min(options.files ?? 6, rows.length));
    const tmps: string[] = [];
    for (let f = 0; f < count; f++) {
      const part = rows.filter((_, i) => i % count === f);
      const tmp = path.join(inbox, 'bill-payments', `scaling-${f}.csv.tmp`);
      writeFileSync(tmp, `${header}\n${part.join('\n')}\n`);
      tmps.push(tmp);
    }
    const started = performance.now();
    for (const tmp of tmps) renameSync(tmp, tmp.slice(0, -'.tmp'.length));
    const resultDir = path.join(outbox, 'bill-payments');
    const results = await until(
      'the answers',
      () => {
        const names = existsSync(resultDir) ? readdirSync(resultDir) : [];
        if (names.some((n) => n.endsWith('.rejected.txt'))) throw new Error(`${name}: a file was rejected`);
        const done = names.filter((n) => n.endsWith('.result.csv'));
        return done.length >= count ? done.map((n) => path.join(resultDir, n)) : undefined;
      },
      30 * 60_000,
      10,
    );
    const wallMs = performance.now() - started;
    const lines = results.flatMap((r) => readFileSync(r, 'utf8').trim().split('\n').slice(1));
    const succeeded = lines.filter((l) => l.includes(',succeeded,')).length;
    if (lines.length !== options.rows || succeeded !== options.rows) {
      throw new Error(`${name}: ${succeeded} of ${lines.length} rows succeeded (expected ${options.rows})`);
    }
    return wallMs;
  } finally {
    await Promise.all(procs.map(stop));
    await stop(sandbox.proc);
  }
}

export async function benchScaling(options: ScalingOptions): Promise<ScalingFigure[]> {
  const dataDir = path.join(options.dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, `bill-payments-scaling-${options.rows}.csv`);
  if (!existsSync(file)) writeBillsFile(file, options.rows);
  const figures: ScalingFigure[] = [];
  const why = multiDaemonUnsupported();
  const cluster = await startPostgres();
  try {
    for (const n of options.daemons ?? [1, 2, 3]) {
      const name = `${n} daemon${n === 1 ? '' : 's'}, PostgreSQL`;
      if (n > 1 && why) {
        options.log(`(f) ${name}: not available (${why})`);
        figures.push({ name, engine: 'postgres', daemons: n, rows: options.rows, note: `not available: ${why}` });
        continue;
      }
      options.log(`(f) ${name}: ${options.rows} bills, concurrency ${options.concurrency} each`);
      const wallMs = await measure(options, file, name, n, { cluster, named: n > 1 || why === undefined });
      figures.push({ name, engine: 'postgres', daemons: n, rows: options.rows, wallMs });
    }
  } finally {
    await cluster.stop();
  }
  const name = '1 daemon, SQLite';
  options.log(`(f) ${name}: ${options.rows} bills, concurrency ${options.concurrency}`);
  figures.push({
    name,
    engine: 'sqlite',
    daemons: 1,
    rows: options.rows,
    wallMs: await measure(options, file, name, 1, undefined),
  });
  return figures;
}

export function scalingTable(options: ScalingOptions, figures: readonly ScalingFigure[]): string {
  const single = figures.find((f) => f.engine === 'postgres' && f.daemons === 1)?.wallMs;
  const rate = (f: ScalingFigure) => (f.wallMs === undefined ? undefined : f.rows / (f.wallMs / 1000));
  const head = ['store and daemons', 'rows', 'wall s', 'rows/s', 'ratio to 1 daemon (PostgreSQL)'];
  const lines = figures.map((f) => {
    const r = rate(f);
    return [
      f.name,
      String(f.rows),
      f.wallMs === undefined ? '-' : (f.wallMs / 1000).toFixed(2),
      r === undefined ? 'not available' : r.toFixed(1),
      r === undefined || single === undefined ? '-' : (r / (f.rows / (single / 1000))).toFixed(2),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const notes = figures.filter((f) => f.note).map((f) => `  ${f.name}: ${f.note}`);
  return [
    `(f) scaling across daemons: ${options.rows} bill payments (lookup + pay) in ${options.files ?? 6} file(s), the sandbox answering after ${options.latencyMs ?? 80} ms per request, concurrency ${options.concurrency} per daemon, rate limits off`,
    fmt(head),
    `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
    ...lines.map(fmt),
    ...notes,
  ].join('\n');
}
