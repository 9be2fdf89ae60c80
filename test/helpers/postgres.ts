/**
 * A throw-away PostgreSQL cluster for the tests that need a real server (issue 13 §2): `initdb` + `pg_ctl` in a temp
 * folder, listening on 127.0.0.1 at a free port and on a unix socket in that folder, stopped and deleted afterwards.
 * One cluster per test file (`useTestCluster`: beforeAll/afterAll); each test takes a fresh database of its own from it
 * (`createDatabase`), which costs a few milliseconds where a cluster costs about a second.
 *
 * - Binaries: `initdb` on PATH, else the newest /usr/lib/postgresql/<version>/bin (Debian keeps them off PATH).
 * - User: PostgreSQL refuses to run as root. When the tests run as root (CI does), the cluster runs as the `postgres`
 *   user Debian's package creates (`runuser -u postgres --`), and its folder is chowned to it.
 * - Skipping: only when told so, by REMESSA_TEST_NO_POSTGRES=1 (README, "Tests"). Without it, missing binaries make
 *   the tests fail with a message that says what to install; they are never skipped silently.
 * - The superuser has a password (scram-sha-256 on the socket and on TCP), so the drivers' password handling is
 *   exercised for real.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { closedPort } from './net.js';

/** Set to 1 to skip the tests that need PostgreSQL (say so: they are otherwise failures when it is missing). */
export const NO_POSTGRES_ENV = 'REMESSA_TEST_NO_POSTGRES';

/** Whether the tests that need PostgreSQL are skipped (only on request, never because it is missing). */
export const skipPostgres = process.env[NO_POSTGRES_ENV] === '1';

if (skipPostgres) {
  // A visible line in the run's output besides vitest's "skipped" count.
  console.warn(`${NO_POSTGRES_ENV}=1: the tests that need PostgreSQL are skipped`);
}

export const MISSING_POSTGRES_MESSAGE =
  'PostgreSQL server binaries (initdb, pg_ctl) were found neither on PATH nor in /usr/lib/postgresql/*/bin: ' +
  "install Debian's package (apt-get install postgresql; .ci/run does it) or set " +
  `${NO_POSTGRES_ENV}=1 to skip the tests that need PostgreSQL`;

/** The folder holding initdb and pg_ctl, or undefined when there is none. */
export function findPostgresBin(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'pg_ctl'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+(\.\d+)?$/.test(v) && existsSync(path.join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(root, versions[0], 'bin');
}

export interface TestCluster {
  /** 127.0.0.1 port. */
  port: number;
  /** The folder of its unix socket (a libpq "host"). */
  socketDir: string;
  /** Superuser and its password. */
  user: string;
  password: string;
  /**
   * A fresh database owned by the superuser, empty or a copy of `template` (`CREATE DATABASE ... TEMPLATE`, a file
   * copy: much faster than migrating; the template must have no session open); a URL without the password (give it
   * separately).
   */
  createDatabase(template?: string): Promise<{ name: string; url: string }>;
  /**
   * What a crash of every client of `database` leaves in it, copied into a new database: new sessions to it are
   * refused and its open ones terminated (their transactions roll back, as when their process dies), then it is
   * copied. `database` takes no session afterwards.
   */
  crashCopy(database: string): Promise<{ name: string; url: string }>;
  /** A URL to `database` over TCP, without the password. */
  url(database: string): string;
  /** Runs SQL as the superuser in `database` (default `postgres`). */
  query<T extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, database?: string): Promise<T[]>;
  /** Stops the server and deletes its folder. */
  stop(): Promise<void>;
}

const USER = 'remessa_test';

/** Starts a throw-away cluster; throws MISSING_POSTGRES_MESSAGE when the binaries are missing. */
export async function startPostgres(): Promise<TestCluster> {
  const bin = findPostgresBin();
  if (!bin) throw new Error(MISSING_POSTGRES_MESSAGE);
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(path.join(tmpdir(), 'remessa-pg-'));
  const data = path.join(dir, 'data');
  const socketDir = path.join(dir, 'socket');
  mkdirSync(socketDir);
  const password = `pw-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const pwfile = path.join(dir, 'pwfile');
  writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
  let owner: { uid: number; gid: number } | undefined;
  if (asRoot) {
    owner = postgresUser();
    chmodSync(dir, 0o700);
    for (const p of [dir, socketDir, pwfile]) chownSync(p, owner.uid, owner.gid);
  }
  // runuser lives in /usr/sbin (util-linux), which a non-login PATH may lack.
  const runuser = ['/usr/sbin/runuser', '/sbin/runuser', '/usr/bin/runuser'].find((f) => existsSync(f)) ?? 'runuser';
  const run = (tool: string, args: string[]) => {
    const command = asRoot ? runuser : path.join(bin, tool);
    const argv = asRoot ? ['-u', 'postgres', '--', path.join(bin, tool), ...args] : args;
    const result = spawnSync(command, argv, { encoding: 'utf8', env: { ...process.env, LC_ALL: 'C.UTF-8' } });
    if (result.status !== 0) {
      const why = result.error ? result.error.message : `exit ${result.status}: ${result.stderr || result.stdout}`;
      throw new Error(`${command} ${argv.join(' ')} failed (${why})`);
    }
  };
  try {
    run('initdb', [
      '-D',
      data,
      '-U',
      USER,
      `--pwfile=${pwfile}`,
      '--auth-local=scram-sha-256',
      '--auth-host=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ]);
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  let port = 0;
  // A free port can be taken by someone else between finding and binding it: a few tries.
  for (let attempt = 1; ; attempt++) {
    port = await closedPort();
    const options = [
      `-p ${port}`,
      "-c listen_addresses='127.0.0.1'",
      `-c unix_socket_directories='${socketDir}'`,
      // A throw-away cluster: nothing in it must survive a crash of this machine, so it need not reach the disk.
      // (The drivers' own durability settings, synchronous_commit included, are still set and checked.)
      '-c fsync=off',
      '-c full_page_writes=off',
      '-c max_connections=60',
      '-c shared_buffers=16MB',
    ].join(' ');
    try {
      run('pg_ctl', ['-D', data, '-l', path.join(dir, 'server.log'), '-w', '-t', '60', '-o', options, 'start']);
      break;
    } catch (error) {
      if (attempt >= 3) {
        rmSync(dir, { recursive: true, force: true });
        throw error;
      }
    }
  }
  const url = (database: string) => `postgres://${USER}@127.0.0.1:${port}/${database}`;
  const query = async <T extends pg.QueryResultRow>(sql: string, database = 'postgres') => {
    const client = new pg.Client({ host: socketDir, port, user: USER, password, database });
    await client.connect();
    try {
      return (await client.query<T>(sql)).rows;
    } finally {
      await client.end();
    }
  };
  let count = 0;
  const createDatabase = async (template?: string) => {
    count += 1;
    const name = `t${count}_${process.pid}`;
    await query(template === undefined ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template}`);
    return { name, url: url(name) };
  };
  let stopped = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    try {
      reportServerCpu(data);
      // Immediate: a throw-away cluster needs no checkpoint.
      run('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  // A test process that ends without afterAll (a crash, a timeout) still stops its server.
  process.once('exit', stopNow);
  return {
    port,
    socketDir,
    user: USER,
    password,
    url,
    query,
    createDatabase,
    async crashCopy(database) {
      if (!/^[a-z0-9_]+$/.test(database)) throw new Error(`Not a test database name: ${database}`);
      await query(`ALTER DATABASE ${database} ALLOW_CONNECTIONS false`);
      // pg_terminate_backend only signals the sessions; CREATE DATABASE waits up to 5 s for the source's to end. A
      // session that was starting while connections were being closed may appear after the signals: hence the loop.
      for (let attempt = 1; ; attempt++) {
        await query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${database}' AND pid <> pg_backend_pid()`,
        );
        try {
          return await createDatabase(database);
        } catch (error) {
          if (attempt >= 3 || (error as { code?: string }).code !== '55006') throw error;
        }
      }
    },
    async stop() {
      process.removeListener('exit', stopNow);
      stopNow();
    },
  };
}

/**
 * One cluster for the test file: started before its tests, stopped after them. The function returned gives the
 * cluster, or throws why it could not start (binaries missing, ...): call it in each test (or its beforeEach), so
 * that every test fails with that message rather than being reported as skipped.
 */
export function useTestCluster(): () => TestCluster {
  let cluster: TestCluster | undefined;
  let failure: unknown;
  beforeAll(async () => {
    try {
      cluster = await startPostgres();
    } catch (error) {
      failure = error;
    }
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (cluster) return cluster;
    throw failure ?? new Error('The PostgreSQL test cluster was asked for before it started');
  };
}

/**
 * When REMESSA_TEST_PG_CPU names a file, appends to it the CPU seconds the server has spent so far (the postmaster,
 * its exited sessions and its live processes: Linux's /proc), one line per cluster, to measure what the suites on
 * PostgreSQL cost besides the test process's own time (the server is not the test process's child).
 */
function reportServerCpu(data: string): void {
  const out = process.env.REMESSA_TEST_PG_CPU;
  if (!out) return;
  try {
    const postmaster = Number(readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    // /proc/<pid>/stat: the fields after the command's closing parenthesis; utime, stime, cutime, cstime are 14..17.
    const fields = (pid: string) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    const [, , , , , , , , , , , utime, stime, cutime, cstime] = fields(String(postmaster)).map(Number);
    let ticks = utime! + stime! + cutime! + cstime!;
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue;
      try {
        const f = fields(pid);
        if (Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
      } catch {
        // gone meanwhile
      }
    }
    appendFileSync(out, `${(ticks / 100).toFixed(2)}\n`);
  } catch (error) {
    appendFileSync(out, `unknown (${(error as Error).message})\n`);
  }
}

/** The `postgres` user of Debian's package, which runs the cluster when the tests run as root. */
function postgresUser(): { uid: number; gid: number } {
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    return { uid, gid };
  } catch {
    throw new Error(
      `The tests run as root (${userInfo().username}) and PostgreSQL refuses to: they run it as the user "postgres", ` +
        `which does not exist here. Install Debian's package postgresql (it creates the user) or set ${NO_POSTGRES_ENV}=1`,
    );
  }
}
