/**
 * `npm run bench`: the two benchmarks of issue 4 section 9, measured in one run, each against a baseline measured in
 * the same run on the same machine (never a remembered figure). docs/performance.md records the results.
 *
 * (a) validate: `remessa validate FILE` of a generated charges file (default 1,000,000 rows) as a child process, vs
 *     csv-parse alone reading the same file (bench/baseline-csv-parse.mjs), also a child. Rows/s, ratio, peak RSS.
 *     Targets: ratio >= 0.5, peak RSS < 200 MB.
 * (b) bill payments: `remessa run FILE` of a generated bill-payments file (default 20,000 distinct payable synthetic
 *     slips) against `remessa sandbox` in a separate process, rate limits off, vs a bare undici loop
 *     (bench/baseline-bills.mjs: lookup + pay with an IdempotencyKey, same concurrency) against a fresh sandbox with
 *     the same bills. Rows/s, ratio, peak RSS. Target: ratio >= 0.8.
 *     And the cost of a row (issue 13 §3), from the same two runs: CPU ms per row and peak RSS of remessa against the
 *     loop's, as ratios, and remessa's store bytes per row (remessa.sqlite + WAL after the run) against the input
 *     line's. Targets: CPU per row <= 2x the loop's, peak RSS < 150 MB, store < 600 bytes a row.
 *
 * remessa runs compiled (tsc into .bench/dist, as `npm run build` does; `--tsx` runs the sources through tsx instead),
 * so what is measured is the program, not the TypeScript loader. Data generation and the build are not timed.
 * Wall time includes process start-up for remessa and baselines alike. The machine may be shared: the load average
 * is printed, and CPU time (user + system of the measured process) is reported beside wall time.
 *
 * (c) rate limit (bench/rate-limit.ts): the request queue on the real clock, saturated for --rate-seconds (default 20)
 *     at 50 requests per 1,000 ms: mean rate / setting (target within 2%), busiest window / setting (target <= 1), and
 *     how many windows went over; the queue as it was before (p-queue fixed windows) is measured in the same run.
 *
 * (e) shared rate limit (bench/shared-rate.ts, issue 13): the same limit shared by 1, 2 and 3 daemons on one
 *     PostgreSQL store (a throw-away cluster, as the tests start it): mean rate / setting and busiest window / setting
 *     for each. Run when PostgreSQL's binaries are found (else said and left out of a full run).
 *
 * (f) scaling across daemons (bench/scaling.ts, issue 13 §2): bill payments (--scaling-rows, default 1,200, in
 *     --scaling-files files, default 6) worked by 1, 2 and 3 daemons on one PostgreSQL store against a sandbox answering after 80 ms per request, rows/s
 *     and the ratio to the single daemon, and the single daemon on SQLite. Run when PostgreSQL's binaries are found.
 *
 * Flags: --quick (50,000 rows, 1,000 bills, 300 scaling rows) | --rows N | --bills N | --concurrency N (default 8)
 * | --only validate|bills|rate|shared-rate|scaling | --rate-seconds N | --scaling-rows N | --scaling-files N
 * | --tsx | --no-build (reuse .bench/dist) | --cpu-prof (profiles of the remessa processes into .bench/prof)
 * | --same-calls (also a baseline that looks each bill up twice before paying, as remessa's pay step once did)
 * | --client (also remessa's bank client alone, bench/baseline-client.mjs: the same calls through the built BankClient,
 *   no store, engine or files; the cost table then splits a row's CPU between the HTTP layer and the rest)
 * | --floor (also the durability rules at the least, bench/durable-floor.mjs per-page: the built client and the durable
 *   writes a page of 256 rows at a time, no validation, engine or state machine; the cost table then says what remessa
 *   spends above that floor a row)
 * | --repeat N (each side N times, alternating which goes first; the fastest run of each side is compared)
 * | --dir DIR (work folder, default .bench/; use your own when others run the bench at the same time)
 * | --store sqlite|postgres|both (the store of remessa's bill-payment run, default sqlite; postgres runs a throw-away
 *   cluster as the tests do, and its store bytes are the tables' with their indexes and TOAST after a VACUUM)
 * | --nights N (default 1: after the measured run, N - 1 more files of as many other bills go through the same store,
 *   one run each, as on the nights after: what each adds to the store a row, once the space the runs before freed
 *   can be used again; a VACUUM before each size on PostgreSQL, as autovacuum would have run between nights).
 *   After the last night the store is compacted (VACUUM FULL on PostgreSQL, VACUUM on SQLite): what its rows hold
 *   with no free space at all, a row of every night, the least any vacuum could leave (docs/performance.md (d)).
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { findPostgresBin, startPostgres, type TestCluster } from '../test/helpers/postgres.js';
import { writeBillsFile, writeChargesFile } from './generate.js';
import { type Measured, runMeasured } from './measure.js';
import { shebangFlags } from './node-flags.js';
import { benchRateLimit, rateTable } from './rate-limit.js';
import { benchScaling, scalingTable } from './scaling.js';
import { benchSharedRate, sharedRateTable } from './shared-rate.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const SANDBOX_KEY = 'sandbox-public-test-key';
const MB = 1024 * 1024;

/** Targets of issue 4, section 9. */
export const TARGETS = { validateRatio: 0.5, validatePeakRssMb: 200, billsRatio: 0.8 } as const;

interface Args {
  rows: number;
  bills: number;
  concurrency: number;
  only: 'validate' | 'bills' | 'rate' | 'shared-rate' | 'scaling' | undefined;
  rateSeconds: number;
  scalingRows: number;
  scalingFiles: number;
  tsx: boolean;
  build: boolean;
  cpuProf: boolean;
  sameCalls: boolean;
  client: boolean;
  floor: boolean;
  repeat: number;
  /** Runs of the bill payments through one store (the first measured; see --nights). */
  nights: number;
  dir: string;
  /** Which store(s) remessa's bill-payment run uses (the cost of a row is measured on each). */
  stores: ReadonlyArray<'sqlite' | 'postgres'>;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = {
    rows: 1_000_000,
    bills: 20_000,
    concurrency: 8,
    only: undefined,
    rateSeconds: 20,
    scalingRows: 1_200,
    scalingFiles: 6,
    tsx: false,
    build: true,
    cpuProf: false,
    sameCalls: false,
    client: false,
    floor: false,
    repeat: 1,
    nights: 1,
    dir: path.join(ROOT, '.bench'),
    stores: ['sqlite'],
  };
  const count = (flag: string, value: string | undefined): number => {
    const n = Number(value);
    if (!value || !Number.isSafeInteger(n) || n < 1)
      throw new Error(`${flag}: expected a whole number >= 1, got ${value}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--quick') {
      args.rows = 50_000;
      args.bills = 1_000;
      args.scalingRows = 300;
    } else if (a === '--rows') args.rows = count(a, argv[++i]);
    else if (a === '--bills') args.bills = count(a, argv[++i]);
    else if (a === '--concurrency') args.concurrency = count(a, argv[++i]);
    else if (a === '--only') {
      const v = argv[++i];
      if (v !== 'validate' && v !== 'bills' && v !== 'rate' && v !== 'shared-rate' && v !== 'scaling')
        throw new Error(`--only: expected validate, bills, rate, shared-rate or scaling, got ${v}`);
      args.only = v;
    } else if (a === '--rate-seconds') {
      args.rateSeconds = count(a, argv[++i]);
    } else if (a === '--scaling-rows') {
      args.scalingRows = count(a, argv[++i]);
    } else if (a === '--scaling-files') {
      args.scalingFiles = count(a, argv[++i]);
    } else if (a === '--tsx') args.tsx = true;
    else if (a === '--no-build') args.build = false;
    else if (a === '--cpu-prof') args.cpuProf = true;
    else if (a === '--same-calls') args.sameCalls = true;
    else if (a === '--client') args.client = true;
    else if (a === '--floor') args.floor = true;
    else if (a === '--repeat') args.repeat = count(a, argv[++i]);
    else if (a === '--nights') args.nights = count(a, argv[++i]);
    else if (a === '--dir') args.dir = path.resolve(argv[++i] ?? '');
    else if (a === '--store') {
      const v = argv[++i];
      if (v !== 'sqlite' && v !== 'postgres' && v !== 'both')
        throw new Error(`--store: expected sqlite, postgres or both, got ${v}`);
      args.stores = v === 'both' ? ['sqlite', 'postgres'] : [v];
    } else throw new Error(`unknown flag ${a}`);
  }
  return args;
}

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

/** Compiles src/ into `<dir>/dist` with the project's build config and copies the migrations, like `npm run build`. */
function build(dir: string): string {
  const out = path.join(dir, 'dist');
  log(`building remessa into ${path.relative(ROOT, out)} (not timed)`);
  rmSync(out, { recursive: true, force: true });
  try {
    execFileSync(
      process.execPath,
      [path.join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', out],
      { cwd: ROOT, stdio: 'pipe' },
    );
  } catch (err) {
    // tsc still emits when another part has a type error mid-work; only a missing output is fatal.
    const stdout = String((err as { stdout?: unknown }).stdout ?? '');
    log(`tsc reported errors (output still emitted):\n${stdout.split('\n').slice(0, 10).join('\n')}`);
  }
  if (!existsSync(path.join(out, 'cli.js'))) throw new Error(`build produced no ${out}/cli.js`);
  // A build outside the repository (--dir elsewhere) must still find the packages.
  const modules = path.join(dir, 'node_modules');
  if (path.relative(ROOT, dir).startsWith('..') && !existsSync(modules)) {
    symlinkSync(path.join(ROOT, 'node_modules'), modules, 'dir');
  }
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const full = path.join(d, name);
      if (!statSync(full).isDirectory()) continue;
      // Both engines' migrations (src/store/migrations and src/store/migrations-pg), as scripts/copy-assets.mjs does.
      if (name === 'migrations' || name === 'migrations-pg')
        cpSync(full, path.join(out, path.relative(path.join(ROOT, 'src'), full)), { recursive: true });
      else walk(full);
    }
  };
  walk(path.join(ROOT, 'src'));
  return out;
}

interface Remessa {
  /** node arguments that start the CLI, before the command. */
  prefix(profileName?: string): string[];
  describe: string;
  /** The build of src/ that runs (absent with --tsx). */
  dist?: string;
}

/** remessa as it runs: with the node flags of its first line (./node-flags.ts). */
function remessaCommand(args: Args, dist: string | undefined): Remessa {
  const profDir = path.join(args.dir, 'prof');
  const prof = (name?: string) =>
    args.cpuProf && name ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
  if (dist) {
    const cli = path.join(dist, 'cli.js');
    const flags = shebangFlags(cli);
    return {
      prefix: (n) => [...flags, ...prof(n), cli],
      describe: `node ${[...flags, path.relative(ROOT, cli)].join(' ')} (compiled with tsconfig.build.json)`,
      dist,
    };
  }
  const cli = path.join(ROOT, 'src/cli.ts');
  const flags = shebangFlags(cli);
  return {
    prefix: (n) => [...flags, ...prof(n), '--import', 'tsx', cli],
    describe: `node ${[...flags, '--import tsx src/cli.ts'].join(' ')}`,
  };
}

/** Generates `file` unless a complete copy is there already (same content every time: deterministic). */
function ensureGenerated(file: string, rows: number, write: (file: string, rows: number) => void): void {
  const marker = `${file}.complete`;
  if (existsSync(file) && existsSync(marker)) return;
  log(`generating ${path.relative(ROOT, file)} (${rows} rows, not timed)`);
  const started = performance.now();
  write(file, rows);
  writeFileSync(marker, '');
  log(`generated in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

function writeConfig(file: string, folder: string, bankUrl: string, concurrency: number, store?: object): void {
  const off = { requests: 0, intervalMs: 1000 };
  const config = {
    folders: {
      inbox: path.join(folder, 'inbox'),
      outbox: path.join(folder, 'outbox'),
      archive: path.join(folder, 'archive'),
      data: path.join(folder, 'data'),
    },
    bank: { url: bankUrl },
    queue: {
      concurrency,
      rateLimits: { charges: off, 'bill-payments': off, pix: off, claims: off },
    },
    log: { level: 'info' },
    // The sandbox runs in a process of its own (a URL, as a real bank would be): approval is on by default for
    // bill payments there, and the bench measures the run, not a person's decision.
    approval: { kinds: [] },
    ...(store ? { store } : {}),
  };
  mkdirSync(folder, { recursive: true });
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
}

interface Row {
  name: string;
  rows: number;
  m: Measured;
  /** Every measurement when repeated (`m` is the fastest). */
  all?: Measured[];
  ratio?: { value: number; target: number; cpuValue: number };
  rssTargetMb?: number;
  note?: string;
  /** remessa's store after the run (database + WAL), in bytes; with the input file's bytes per data line. */
  store?: StoreSize & { inputBytesPerRow: number };
}

function rate(rows: number, ms: number): number {
  return rows / (ms / 1000);
}

// ---------------------------------------------------------------- (a) validate

/** The fastest of several measurements (wall time): the least disturbed by other work on a shared machine. */
function best(runs: readonly Measured[]): Measured {
  return runs.reduce((a, b) => (b.wallMs < a.wallMs ? b : a));
}

/**
 * Runs `a` and `b` `repeat` times each, alternating which goes first (a b, b a, a b...), so that a slow spell of the
 * machine does not fall on one side only. Returns every measurement of each.
 */
async function alternate(
  repeat: number,
  a: (round: number) => Promise<Measured>,
  b: (round: number) => Promise<Measured>,
): Promise<[Measured[], Measured[]]> {
  const ra: Measured[] = [];
  const rb: Measured[] = [];
  for (let round = 1; round <= repeat; round++) {
    if (round % 2 === 1) {
      ra.push(await a(round));
      rb.push(await b(round));
    } else {
      rb.push(await b(round));
      ra.push(await a(round));
    }
  }
  return [ra, rb];
}

function ratioOf(rows: number, m: Measured, base: Measured, target: number): NonNullable<Row['ratio']> {
  return { value: rate(rows, m.wallMs) / rate(rows, base.wallMs), cpuValue: base.cpuMs / m.cpuMs, target };
}

async function benchValidate(args: Args, remessa: Remessa, results: Row[]): Promise<void> {
  const dataDir = path.join(args.dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  // The kind comes from the name prefix, as in the inbox.
  const file = path.join(dataDir, `charges-bench-${args.rows}.csv`);
  ensureGenerated(file, args.rows, writeChargesFile);
  const folder = path.join(args.dir, 'validate');
  rmSync(folder, { recursive: true, force: true });
  const config = path.join(folder, 'remessa.json');
  writeConfig(config, folder, 'embedded', args.concurrency);
  const io = (name: string) => ({
    stdoutFile: path.join(folder, `${name}.stdout`),
    stderrFile: path.join(folder, `${name}.stderr`),
  });

  const baseline = async (round: number): Promise<Measured> => {
    log(`(a) baseline: csv-parse alone (round ${round})`);
    const m = await runMeasured(process.execPath, [path.join(ROOT, 'bench/baseline-csv-parse.mjs'), file], {
      cwd: ROOT,
      ...io('csv-parse'),
    });
    const records = (JSON.parse(readFileSync(path.join(folder, 'csv-parse.stdout'), 'utf8')) as { records: number })
      .records;
    if (m.exitCode !== 0 || records !== args.rows + 1) {
      throw new Error(`csv-parse baseline: exit ${m.exitCode}, ${records} records (expected ${args.rows + 1})`);
    }
    return m;
  };
  const ours = async (round: number): Promise<Measured> => {
    log(`(a) remessa validate (round ${round})`);
    const m = await runMeasured(
      process.execPath,
      [...remessa.prefix(`validate-${round}`), '--config', config, 'validate', file],
      { cwd: ROOT, ...io('remessa-validate') },
    );
    const out = readFileSync(path.join(folder, 'remessa-validate.stdout'), 'utf8');
    const expected = `${args.rows} rows, ${args.rows} valid, 0 invalid`;
    if (m.exitCode !== 0 || !out.includes(expected)) {
      throw new Error(`remessa validate: exit ${m.exitCode}; expected "${expected}", got:\n${out.slice(-500)}`);
    }
    return m;
  };
  const [bases, mine] = await alternate(args.repeat, baseline, ours);
  const base = best(bases);
  const m = best(mine);
  results.push({ name: 'csv-parse alone (baseline)', rows: args.rows, m: base, all: bases });
  results.push({
    name: 'remessa validate',
    rows: args.rows,
    m,
    all: mine,
    ratio: ratioOf(args.rows, m, base, TARGETS.validateRatio),
    rssTargetMb: TARGETS.validatePeakRssMb,
  });
}

// ---------------------------------------------------------------- (b) bill payments

interface RunningSandbox {
  url: string;
  child: ChildProcess;
  dataFile: string;
}

async function startSandboxProcess(remessa: Remessa, folder: string, config: string): Promise<RunningSandbox> {
  const dataFile = path.join(folder, 'sandbox.sqlite');
  const child = spawn(
    process.execPath,
    [...remessa.prefix(), '--config', config, 'sandbox', '--port', '0', '--data', dataFile],
    // Request logging of the sandbox off: it would be the bottleneck of both sides alike.
    { cwd: ROOT, env: { ...process.env, REMESSA_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`sandbox did not start in 60 s; said: ${text}`)), 60_000);
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const m = /sandbox listening on (http:\/\/\S+)/.exec(text);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`sandbox exited with ${code}: ${text}`));
    });
  });
  child.stdout!.resume();
  return { url, child, dataFile };
}

async function stopSandbox(sandbox: RunningSandbox): Promise<void> {
  if (sandbox.child.exitCode !== null) return;
  const exited = new Promise<void>((resolve) => sandbox.child.once('exit', () => resolve()));
  sandbox.child.kill('SIGTERM');
  await exited;
}

/** Payments the sandbox recorded as PAID (the proof both sides did the real work). */
function paidInSandbox(dataFile: string): number {
  const db = new Database(dataFile, { readonly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM bill_payments WHERE status = 'PAID'`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function withSandbox<T>(
  remessa: Remessa,
  folder: string,
  config: string,
  body: (sandbox: RunningSandbox) => Promise<T>,
): Promise<{ result: T; paid: number }> {
  const sandbox = await startSandboxProcess(remessa, folder, config);
  let result: T;
  try {
    result = await body(sandbox);
  } finally {
    await stopSandbox(sandbox);
  }
  return { result, paid: paidInSandbox(sandbox.dataFile) };
}

async function benchBills(args: Args, remessa: Remessa, results: Row[]): Promise<void> {
  const dataDir = path.join(args.dir, 'data');
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, `bill-payments-bench-${args.bills}.csv`);
  ensureGenerated(file, args.bills, writeBillsFile);

  /** One baseline run against a fresh sandbox: `script URL FILE CONCURRENCY ...extra`, all bills paid. */
  const baseline = async (
    name: string,
    round: number,
    what: { says: string; node?: string[]; script: string; before?: string[]; extra?: string[] },
  ): Promise<Measured> => {
    const folder = path.join(args.dir, name);
    rmSync(folder, { recursive: true, force: true });
    const config = path.join(folder, 'remessa.json');
    writeConfig(config, folder, 'embedded', args.concurrency);
    log(`(b) ${name}: ${what.says}, concurrency ${args.concurrency} (round ${round})`);
    const script = path.join(ROOT, what.script);
    const { result: m, paid } = await withSandbox(remessa, folder, config, (sandbox) =>
      runMeasured(
        process.execPath,
        [
          ...(what.node ?? []),
          script,
          ...(what.before ?? []),
          sandbox.url,
          file,
          String(args.concurrency),
          ...(what.extra ?? []),
        ],
        {
          cwd: ROOT,
          env: { REMESSA_API_KEY: SANDBOX_KEY },
          stdoutFile: path.join(folder, 'baseline.stdout'),
          stderrFile: path.join(folder, 'baseline.stderr'),
        },
      ),
    );
    if (m.exitCode !== 0 || paid !== args.bills) {
      throw new Error(`${name}: exit ${m.exitCode}, ${paid} of ${args.bills} bills paid in the sandbox`);
    }
    return m;
  };
  const loop = (lookups: number) => ({
    says: `bare undici loop, ${lookups} lookup(s) + pay per bill`,
    script: 'bench/baseline-bills.mjs',
    extra: [String(lookups)],
  });

  const bases: Measured[] = [];
  const loopFirst = async (round: number) => bases.push(await baseline('bills-baseline', round, loop(1)));
  const storeBytes = new Map<Measured, StoreSize>();
  const byStore = new Map<'sqlite' | 'postgres', Measured[]>();
  let cluster: TestCluster | undefined;
  try {
    for (const store of args.stores) {
      if (store === 'postgres') cluster = await startPostgres();
      const ours = async (round: number): Promise<Measured> => {
        const folder = path.join(args.dir, `bills-remessa-${store}`);
        rmSync(folder, { recursive: true, force: true });
        const sandboxConfig = path.join(folder, 'sandbox.json');
        writeConfig(sandboxConfig, path.join(folder, 'sandbox'), 'embedded', args.concurrency);
        const db = store === 'postgres' ? await cluster!.createDatabase() : undefined;
        log(`(b) remessa run on ${store}, concurrency ${args.concurrency}, rate limits off (round ${round})`);
        const sizeNow = () => (db ? pgStoreSize(cluster!, db.name) : storeSize(path.join(folder, 'data')));
        const compactedNow = () =>
          db ? pgStoreSize(cluster!, db.name, 'VACUUM FULL') : compactedStoreSize(path.join(folder, 'data'));
        const { result: m, paid } = await withSandbox(remessa, folder, sandboxConfig, async (sandbox) => {
          const config = path.join(folder, 'remessa.json');
          let storeConfig: object | undefined;
          if (db) {
            const passwordFile = path.join(folder, 'store-password');
            writeFileSync(passwordFile, cluster!.password, { mode: 0o600 });
            storeConfig = { url: db.url, passwordFile };
          }
          writeConfig(config, folder, sandbox.url, args.concurrency, storeConfig);
          /** One night: `input` through the store, all of it paid (its answer says so). */
          const night = async (input: string, label: string): Promise<Measured> => {
            const run = await runMeasured(
              process.execPath,
              [...remessa.prefix(`run-${store}-${label}`), '--config', config, 'run', input],
              {
                cwd: ROOT,
                env: { REMESSA_API_KEY: SANDBOX_KEY, REMESSA_ACCOUNT_ID: 'bench-account' },
                stdoutFile: path.join(folder, `remessa-run-${label}.stdout`),
                stderrFile: path.join(folder, `remessa-run-${label}.stderr`),
              },
            );
            const out = readFileSync(path.join(folder, `remessa-run-${label}.stdout`), 'utf8');
            if (run.exitCode !== 0 || !out.includes(`succeeded ${args.bills}`)) {
              throw new Error(`remessa run (${store}, ${label}): exit ${run.exitCode}; said:\n${out.slice(-800)}`);
            }
            return run;
          };
          const first = await night(file, String(round));
          const size = await sizeNow();
          // The nights after: as many other bills each, in the same store.
          const after: number[] = [];
          for (let n = 2; n <= args.nights; n++) {
            const next = path.join(folder, `bill-payments-night-${n}.csv`);
            writeBillsFile(next, args.bills, (n - 1) * args.bills);
            await night(next, `${round}-night-${n}`);
            after.push((await sizeNow()).bytes);
          }
          storeBytes.set(first, {
            ...size,
            nights: after.map((b, i) => b - (i === 0 ? size.bytes : after[i - 1]!)),
            compacted: (await compactedNow()).bytes,
          });
          return first;
        });
        if (paid !== args.bills * args.nights) {
          throw new Error(`remessa run (${store}): ${paid} of ${args.bills * args.nights} bills paid in the sandbox`);
        }
        return m;
      };
      const mine: Measured[] = [];
      // Each side N times, alternating which goes first; the loop is measured with the first store only.
      for (let round = 1; round <= args.repeat; round++) {
        const loopToo = store === args.stores[0] && bases.length < args.repeat;
        if (loopToo && round % 2 === 1) await loopFirst(round);
        mine.push(await ours(round));
        if (loopToo && round % 2 === 0) await loopFirst(round);
      }
      byStore.set(store, mine);
    }
  } finally {
    await cluster?.stop();
  }
  const base = best(bases);
  results.push({ name: 'undici loop: lookup + pay (baseline)', rows: args.bills, m: base, all: bases });
  /** An extra baseline, `--repeat` times: its fastest run is its row of the results. */
  const extraBaseline = async (name: string, row: string, what: Parameters<typeof baseline>[2]) => {
    const all: Measured[] = [];
    for (let round = 1; round <= args.repeat; round++) all.push(await baseline(name, round, what));
    const m = best(all);
    results.push({ name: row, rows: args.bills, m, all });
    return m;
  };
  const same = args.sameCalls
    ? await extraBaseline('bills-baseline-same-calls', 'undici loop: lookup x2 + pay', loop(2))
    : undefined;
  if (args.client) {
    if (!remessa.dist) throw new Error('--client measures the built client: it cannot run with --tsx');
    await extraBaseline('bills-client', CLIENT_ROW, {
      says: "remessa's bank client alone, lookup + pay per bill",
      script: 'bench/baseline-client.mjs',
      before: [remessa.dist],
    });
  }
  if (args.floor) {
    if (!remessa.dist) throw new Error('--floor runs the built client: it cannot run with --tsx');
    await extraBaseline('bills-floor', FLOOR_ROW, {
      says: 'the durability rules at the least: the client, the durable writes a page at a time',
      script: 'bench/durable-floor.mjs',
      before: [remessa.dist],
      extra: [path.join(args.dir, 'bills-floor', 'floor.sqlite'), 'per-page'],
    });
  }
  for (const [store, mine] of byStore) {
    const m = best(mine);
    results.push({
      name: store === 'sqlite' ? 'remessa run' : `remessa run (${store})`,
      rows: args.bills,
      m,
      all: mine,
      ratio: ratioOf(args.bills, m, base, TARGETS.billsRatio),
      note: same
        ? `vs lookup x2: ${(rate(args.bills, m.wallMs) / rate(args.bills, same.wallMs)).toFixed(2)}`
        : undefined,
      store: { ...storeBytes.get(m)!, inputBytesPerRow: inputBytesPerRow(file) },
    });
  }
}

/**
 * A PostgreSQL store's bytes: every table of the database with its indexes and TOAST (pg_total_relation_size),
 * the empty tables' first pages included, as the SQLite figure includes its empty tables' pages.
 */
async function pgStoreSize(
  cluster: TestCluster,
  database: string,
  vacuum: 'VACUUM' | 'VACUUM FULL' = 'VACUUM',
): Promise<StoreSize> {
  await cluster.query(vacuum, database).catch(() => undefined);
  const tables = await cluster.query<{ name: string; bytes: string }>(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid)::text AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`,
    database,
  );
  return storeSizeOf(tables.map((t) => ({ name: t.name, bytes: Number(t.bytes) })));
}

/**
 * The SQLite store's bytes in a data folder: remessa.sqlite and its -wal / -shm when left; by table, the pages of
 * each table and its indexes (SQLite's dbstat; the WAL, the file's header and free pages are in no table).
 */
function storeSize(dataDir: string): StoreSize {
  let bytes = 0;
  for (const suffix of ['', '-wal', '-shm']) {
    const file = path.join(dataDir, `remessa.sqlite${suffix}`);
    if (existsSync(file)) bytes += statSync(file).size;
  }
  if (bytes === 0) throw new Error(`no store (remessa.sqlite) in ${dataDir}`);
  const db = new Database(path.join(dataDir, 'remessa.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return { ...sqliteTablesSize(db), bytes };
  } finally {
    db.close();
  }
}

/**
 * The SQLite store's bytes once compacted (VACUUM: no free page left): its tables' pages with their indexes, the
 * file's header and the WAL not counted (the PostgreSQL figure counts its relations alone too).
 */
function compactedStoreSize(dataDir: string): StoreSize {
  const db = new Database(path.join(dataDir, 'remessa.sqlite'), { fileMustExist: true });
  try {
    db.exec('VACUUM');
    return sqliteTablesSize(db);
  } finally {
    db.close();
  }
}

/** A SQLite store's size by table (each with its indexes): the pages dbstat counts, free pages and header apart. */
function sqliteTablesSize(db: Database.Database): StoreSize {
  const tables = db
    .prepare(
      `SELECT COALESCE(m.tbl_name, d.name) AS name, SUM(d.pgsize) AS bytes FROM dbstat d
         LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY 1`,
    )
    .all() as Array<{ name: string; bytes: number }>;
  return storeSizeOf(tables);
}

/** A store's size from its tables' (each with its indexes). */
function storeSizeOf(tables: ReadonlyArray<{ name: string; bytes: number }>): StoreSize {
  const byTable: Record<string, number> = {};
  for (const t of [...tables].sort((a, b) => b.bytes - a.bytes)) byTable[t.name] = t.bytes;
  return { bytes: tables.reduce((sum, t) => sum + t.bytes, 0), tables: byTable };
}

/** A store's bytes after a run, and each table's with its indexes (largest first). */
interface StoreSize {
  bytes: number;
  tables: Record<string, number>;
  /** With --nights: the bytes each night after the first added to the store. */
  nights?: number[];
  /** After the last night, compacted (`compactedNow`): the bytes of every night's rows with no free space. */
  compacted?: number;
}

/** Mean bytes of a data line of a CSV file (header excluded, line end included). */
function inputBytesPerRow(file: string): number {
  const text = readFileSync(file);
  const lines = text
    .toString('utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const headerBytes = Buffer.byteLength(`${lines[0]}\n`);
  return (text.length - headerBytes) / (lines.length - 1);
}

/**
 * Issue 13 §3, the cost of a row: remessa's CPU per row, peak RSS and store bytes per row against the bare loop's,
 * as ratios (remessa / loop). Targets: CPU per row at most 2x the loop's, peak RSS under 150 MB, store under 600
 * bytes a row.
 */
export const COST_TARGETS = { cpuPerRowRatio: 2, peakRssMb: 150, storeBytesPerRow: 600 } as const;

/** The results' row of `--client` (bench/baseline-client.mjs). */
const CLIENT_ROW = "remessa's bank client alone: lookup + pay";
/** The results' row of `--floor` (bench/durable-floor.mjs per-page). */
const FLOOR_ROW = 'the durable floor: client + durable writes a page at a time';

function costTable(results: readonly Row[]): string {
  const loop = results.find((r) => r.name.startsWith('undici loop: lookup + pay'));
  const runs = results.filter((r) => r.name.startsWith('remessa run') && r.store);
  if (!loop || runs.length === 0) return '';
  const met = (ok: boolean) => (ok ? 'MET' : 'MISSED');
  const cpuRow = (r: Row) => r.m.cpuMs / r.rows;
  const sysRow = (r: Row) => r.m.systemMs / r.rows;
  const rssMb = (r: Row) => r.m.peakRssBytes / MB;
  const head = ['cost of a row (issue 13 §3)', 'remessa run', 'undici loop', 'remessa / loop', 'target'];
  const lines: string[][] = [];
  const client = results.find((r) => r.name === CLIENT_ROW);
  const floor = results.find((r) => r.name === FLOOR_ROW);
  for (const [extra, label] of [
    [client, "CPU ms per row: remessa's bank client alone"],
    [floor, 'CPU ms per row: the durable floor (per page)'],
  ] as const) {
    if (!extra) continue;
    lines.push([
      label,
      cpuRow(extra).toFixed(3),
      cpuRow(loop).toFixed(3),
      (cpuRow(extra) / cpuRow(loop)).toFixed(2),
      '',
    ]);
  }
  for (const ours of runs) {
    const storePerRow = ours.store!.bytes / ours.rows;
    const cpuRatio = cpuRow(ours) / cpuRow(loop);
    const which = ours.name === 'remessa run' ? '' : ` ${ours.name.slice('remessa run '.length)}`;
    // What the run adds to its client a row (the file, the store, the engine, the answer), with --client.
    const rest = client ? cpuRow(ours) - cpuRow(client) : undefined;
    lines.push(
      [
        `CPU ms per row${which}`,
        cpuRow(ours).toFixed(3),
        cpuRow(loop).toFixed(3),
        cpuRatio.toFixed(2),
        `<= ${COST_TARGETS.cpuPerRowRatio}x ${met(cpuRatio <= COST_TARGETS.cpuPerRowRatio)}`,
      ],
      ...(rest === undefined
        ? []
        : [[`  of which besides the client${which}`, rest.toFixed(3), '-', (rest / cpuRow(loop)).toFixed(2), '']]),
      // What the run spends above the plainest program that keeps its durability rules, with --floor.
      ...(floor === undefined
        ? []
        : [
            [
              `  of which above the durable floor${which}`,
              (cpuRow(ours) - cpuRow(floor)).toFixed(3),
              '-',
              ((cpuRow(ours) - cpuRow(floor)) / cpuRow(loop)).toFixed(2),
              '',
            ],
          ]),
      [
        `  of which system ms per row${which}`,
        sysRow(ours).toFixed(3),
        sysRow(loop).toFixed(3),
        (sysRow(ours) / sysRow(loop)).toFixed(2),
        '',
      ],
      [
        `peak RSS MB${which}`,
        rssMb(ours).toFixed(1),
        rssMb(loop).toFixed(1),
        (rssMb(ours) / rssMb(loop)).toFixed(2),
        `< ${COST_TARGETS.peakRssMb} MB ${met(rssMb(ours) < COST_TARGETS.peakRssMb)}`,
      ],
      [
        `store bytes per row${which}`,
        storePerRow.toFixed(0),
        '-',
        `${(storePerRow / ours.store!.inputBytesPerRow).toFixed(1)} x the input line (${ours.store!.inputBytesPerRow.toFixed(0)} B)`,
        `< ${COST_TARGETS.storeBytesPerRow} ${met(storePerRow < COST_TARGETS.storeBytesPerRow)}`,
      ],
      ...(ours.store!.nights ?? []).map((added, i) => [
        `  night ${i + 2}: bytes it added per row${which}`,
        (added / ours.rows).toFixed(0),
        '-',
        '',
        `< ${COST_TARGETS.storeBytesPerRow} ${met(added / ours.rows < COST_TARGETS.storeBytesPerRow)}`,
      ]),
      ...(ours.store!.compacted === undefined
        ? []
        : [
            [
              `  compacted after night ${1 + (ours.store!.nights?.length ?? 0)}: bytes per row${which}`,
              (ours.store!.compacted / (ours.rows * (1 + (ours.store!.nights?.length ?? 0)))).toFixed(0),
              '-',
              'the least a vacuum leaves',
              '',
            ],
          ]),
      [
        `wall s${which}`,
        (ours.m.wallMs / 1000).toFixed(2),
        (loop.m.wallMs / 1000).toFixed(2),
        (ours.m.wallMs / loop.m.wallMs).toFixed(2),
        '',
      ],
    );
  }
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const byTable = runs.map(
    (r) =>
      `store bytes per row by table (with its indexes)${r.name === 'remessa run' ? '' : ` ${r.name.slice('remessa run '.length)}`}: ` +
      Object.entries(r.store!.tables)
        .slice(0, 5)
        .map(([name, bytes]) => `${name} ${(bytes / r.rows).toFixed(0)}`)
        .join(', '),
  );
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt), '', ...byTable].join(
    '\n',
  );
}

// ---------------------------------------------------------------- report

function table(results: readonly Row[]): string {
  const head = [
    'measurement',
    'rows',
    'wall s',
    'rows/s',
    'CPU s',
    'peak RSS MB',
    'ratio (wall)',
    'ratio (CPU)',
    'target',
  ];
  const lines = results.map((r) => {
    const target = [
      r.ratio ? `ratio >= ${r.ratio.target} ${r.ratio.value >= r.ratio.target ? 'MET' : 'MISSED'}` : '',
      r.rssTargetMb !== undefined
        ? `RSS < ${r.rssTargetMb} MB ${r.m.peakRssBytes / MB < r.rssTargetMb ? 'MET' : 'MISSED'}`
        : '',
    ]
      .filter(Boolean)
      .join('; ');
    return [
      r.name,
      String(r.rows),
      (r.m.wallMs / 1000).toFixed(2),
      Math.round(rate(r.rows, r.m.wallMs)).toLocaleString('en-US'),
      (r.m.cpuMs / 1000).toFixed(2),
      (r.m.peakRssBytes / MB).toFixed(1),
      r.ratio ? r.ratio.value.toFixed(2) : '',
      r.ratio ? r.ratio.cpuValue.toFixed(2) : '',
      [target, r.note].filter(Boolean).join('; '),
    ];
  });
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const fmt = (cells: readonly string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [fmt(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  mkdirSync(args.dir, { recursive: true });
  const rateOptions = { seconds: args.rateSeconds, requests: 50, windowMs: 1000, concurrency: 16 };
  const sharedOptions = { seconds: args.rateSeconds, requests: 50, windowMs: 1000, concurrency: 8 };
  const sharedRate = async (): Promise<string> => {
    log(`shared rate limit: 1, 2 and 3 daemons on one PostgreSQL store, ${args.rateSeconds} s each`);
    return sharedRateTable(sharedOptions, await benchSharedRate(sharedOptions));
  };
  if (args.only === 'shared-rate') {
    process.stdout.write(`\n${await sharedRate()}\n`);
    return;
  }
  if (args.only === 'rate') {
    log(`rate limit: ${args.rateSeconds} s before, ${args.rateSeconds} s now`);
    const text = rateTable(rateOptions, await benchRateLimit(rateOptions));
    process.stdout.write(`\n${text}\n`);
    return;
  }
  const dist = args.tsx ? undefined : args.build ? build(args.dir) : path.join(args.dir, 'dist');
  if (dist && !existsSync(path.join(dist, 'cli.js'))) throw new Error(`--no-build: no ${dist}/cli.js; build first`);
  const remessa = remessaCommand(args, dist);
  if (args.cpuProf) mkdirSync(path.join(args.dir, 'prof'), { recursive: true });
  const scalingOptions = {
    prefix: () => remessa.prefix(),
    dir: args.dir,
    rows: args.scalingRows,
    files: args.scalingFiles,
    concurrency: args.concurrency,
    latencyMs: 80,
    log,
  };
  const scaling = async (): Promise<string> => scalingTable(scalingOptions, await benchScaling(scalingOptions));
  if (args.only === 'scaling') {
    const cpu = os.cpus();
    process.stdout.write(
      `\nmachine: ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), Node ${process.version}; remessa: ${remessa.describe}\n` +
        `load average (1 min): ${os.loadavg()[0]!.toFixed(1)}\n\n${await scaling()}\n`,
    );
    return;
  }
  const results: Row[] = [];
  const started = new Date();
  if (args.only !== 'bills') await benchValidate(args, remessa, results);
  if (args.only !== 'validate') await benchBills(args, remessa, results);
  let rateText = '';
  if (args.only === undefined) {
    log(`rate limit: ${args.rateSeconds} s before, ${args.rateSeconds} s now`);
    rateText = `\n${rateTable(rateOptions, await benchRateLimit(rateOptions))}\n`;
    rateText += findPostgresBin()
      ? `\n${await sharedRate()}\n`
      : '\n(e) shared rate limit: not measured (no PostgreSQL binaries; --only shared-rate says what to install)\n';
    rateText += findPostgresBin()
      ? `\n${await scaling()}\n`
      : '\n(f) scaling across daemons: not measured (no PostgreSQL binaries; --only scaling says what to install)\n';
  }

  const cpu = os.cpus();
  const header = [
    `remessa benchmark, ${started.toISOString()}`,
    `machine: ${cpu.length} cores (${cpu[0]?.model.trim() ?? 'unknown'}), ${Math.round(os.totalmem() / 1024 ** 3)} GB, Node ${process.version}, ${os.platform()} ${os.release()}`,
    `remessa: ${remessa.describe}; measured with ${results[0]?.m.method ?? '-'}; concurrency ${args.concurrency}`,
    `load average (1 min) during the runs: ${results.map((r) => r.m.loadAverage.map((l) => l.toFixed(1)).join('->')).join(', ')}`,
    'ratio (wall) = remessa rows/s / baseline rows/s; ratio (CPU) = baseline CPU s / remessa CPU s (same rows).',
  ];
  const runs = results
    .filter((r) => (r.all?.length ?? 0) > 1)
    .map((r) => `  ${r.name}: ${r.all!.map((m) => `${(m.wallMs / 1000).toFixed(1)} s`).join(', ')}`);
  if (runs.length > 0) header.push(`repeats (wall; the table shows the fastest of each):\n${runs.join('\n')}`);
  const cost = costTable(results);
  const text = `${header.join('\n')}\n\n${table(results)}\n${cost ? `\n${cost}\n` : ''}${rateText}`;
  process.stdout.write(`\n${text}`);
  const resultFile = path.join(args.dir, `results-${started.toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(resultFile, `${JSON.stringify({ started, args, results, text }, null, 2)}\n`);
  log(`results saved to ${path.relative(ROOT, resultFile)}`);
}

await main();
