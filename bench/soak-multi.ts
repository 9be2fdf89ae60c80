/**
 * `npm run soak:multi`: the crash suite of test/e2e-multi-crash.test.ts, round after round, for longer and with more
 * rows than `npm test` can afford (issue 13 §2). Each round: a fresh database on one throw-away PostgreSQL cluster
 * (test/helpers/postgres.ts), a fresh sandbox process with faults, `--daemons` daemons sharing the store, one inbox,
 * outbox and archive; bill-payment and charge files dropped; seeded random SIGKILLs of any daemon (restarted at once),
 * one killed for good mid-way when there are several; then `auditMulti` (test/helpers/multi.ts): every row once in
 * its result, every effect once in the ledger, no false `failed`, nothing unanswered. Exit 1 at the first round with
 * a problem (printed with its seed: `--seed S --rounds 1` replays it).
 *
 * Several daemons need `store.daemonName` / `store.leaseMs` (the shared-rows work); until the config accepts them the
 * rounds run with one daemon and say so.
 *
 * Flags: --rounds N (default 3) | --daemons N (default 3) | --bills N (rows per bill file, default 40)
 * | --big-bills N (rows of one big bill file a round, shared by the daemons a page at a time; 0: none; default 600)
 * | --charges N (rows per charges file, default 10) | --kills N (per round, default 6) | --seed S (first round's)
 * REMESSA_TEST_NO_POSTGRES=1: prints that it is skipped and exits 0 (as the tests do).
 */
import { rmSync } from 'node:fs';
import {
  auditMulti,
  billsFile,
  chaos,
  chargesFile,
  dropAll,
  type Fleet,
  multiDaemonUnsupported,
  startFleet,
  waitAllAnswered,
} from '../test/helpers/multi.js';
import { NO_POSTGRES_ENV, skipPostgres, startPostgres } from '../test/helpers/postgres.js';

interface Args {
  rounds: number;
  daemons: number;
  bills: number;
  bigBills: number;
  charges: number;
  kills: number;
  seed: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = {
    rounds: 3,
    daemons: 3,
    bills: 40,
    bigBills: 600,
    charges: 10,
    kills: 6,
    seed: Date.now() % 1_000_000,
  };
  const count = (flag: string, value: string | undefined, min = 1): number => {
    const n = Number(value);
    if (!value || !Number.isSafeInteger(n) || n < min)
      throw new Error(`${flag}: expected a whole number >= ${min}, got ${value}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--rounds') args.rounds = count(a, argv[++i]);
    else if (a === '--daemons') args.daemons = count(a, argv[++i]);
    else if (a === '--bills') args.bills = count(a, argv[++i]);
    else if (a === '--big-bills') args.bigBills = count(a, argv[++i], 0);
    else if (a === '--charges') args.charges = count(a, argv[++i], 0);
    else if (a === '--kills') args.kills = count(a, argv[++i], 0);
    else if (a === '--seed') args.seed = count(a, argv[++i], 0);
    else throw new Error(`unknown flag ${a}`);
  }
  return args;
}

function log(message: string): void {
  process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

const FAULTS = [
  { route: '*', latencyMs: 15, responseLatencyMs: 25, errorRate: 0.04, resetRate: 0.02, dropAfterCommitRate: 0.03 },
];

async function main(): Promise<number> {
  const args = parseArgs(process.argv.slice(2));
  if (skipPostgres) {
    log(`${NO_POSTGRES_ENV}=1: the multi-daemon soak needs PostgreSQL; skipped`);
    return 0;
  }
  const why = multiDaemonUnsupported();
  let daemons = args.daemons;
  if (why && daemons > 1) {
    log(`${why}: the rounds run with ONE daemon on PostgreSQL`);
    daemons = 1;
  }
  const cluster = await startPostgres();
  let failed = 0;
  try {
    for (let round = 1; round <= args.rounds; round++) {
      const seed = args.seed + round - 1;
      const started = performance.now();
      log(`round ${round}/${args.rounds}: ${daemons} daemon(s), seed ${seed}`);
      let fleet: Fleet | undefined;
      try {
        fleet = await startFleet(daemons, cluster, {
          faults: FAULTS,
          seed,
          leaseMs: 3000,
          queue: { concurrency: 4 },
          // The daemons' own vacuums (src/store/vacuum.ts) run often, among the kills and the takeovers.
          store: { vacuumEveryRows: 25 },
        });
        const files = [
          ...Array.from({ length: daemons + 1 }, (_, i) => billsFile(i, args.bills)),
          // Many pages of rows (64 each on a shared store): the daemons that did not take it help with it.
          ...(args.bigBills > 0 ? [billsFile(9, args.bigBills, 'big-bills')] : []),
          ...(args.charges > 0 ? [chargesFile(round, args.charges)] : []),
        ];
        await dropAll(fleet, files);
        const { kills, forGood } = await chaos(fleet, files, {
          kills: args.kills,
          forGoodAfter: daemons > 1 ? Math.floor(args.kills / 2) : undefined,
          seed,
          log: (line) => log(`  ${line}`),
        });
        await fleet.sandbox.clearFaults();
        await waitAllAnswered(fleet, files, 180_000);
        const codes = await fleet.stopAll();
        const report = await auditMulti(fleet, files);
        for (const [i, c] of codes.entries()) {
          if (c !== undefined && c !== 0) report.problems.push(`daemon ${i} exited with ${c} on SIGTERM`);
        }
        const rows = files.reduce((n, f) => n + f.keys.length, 0);
        log(
          `  ${rows} rows, ${kills} kills${forGood === undefined ? '' : ` (daemon ${forGood} for good)`}, ` +
            `${fleet.leaseRestarts} restarts after a lost lease, ` +
            `outcomes ${JSON.stringify(report.outcomes)}, effects ${JSON.stringify(report.effects)}, ` +
            `${((performance.now() - started) / 1000).toFixed(1)} s`,
        );
        if (report.problems.length > 0) {
          failed++;
          log(`  round ${round} (seed ${seed}) FAILED the audit:\n    ${report.problems.join('\n    ')}`);
          log(`  its folders are kept: ${fleet.shared.dir}`);
          break;
        }
        log('  audit clean');
        await fleet.close();
        rmSync(fleet.shared.dir, { recursive: true, force: true });
        fleet = undefined;
      } finally {
        await fleet?.close();
      }
    }
  } finally {
    await cluster.stop();
  }
  log(failed === 0 ? `${args.rounds} round(s) clean` : 'FAILED');
  return failed === 0 ? 0 : 1;
}

process.exitCode = await main();
