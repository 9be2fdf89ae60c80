/**
 * What the PostgreSQL driver (src/store/pg-driver.ts) does beyond the shared contract (test/sql-driver.contract.test.ts):
 * the placeholder translation, integers past Number.MAX_SAFE_INTEGER, per-commit durability as the server sees it,
 * aborted transactions, migrations raced by several daemons, the password kept out of every message, and the
 * `store` settings with the factory that picks the engine. Against a real throw-away cluster (test/helpers/postgres.ts).
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../src/config.js';
import { readMigrations } from '../src/store/db.js';
import { openSqlDriver, storeTarget } from '../src/store/open-driver.js';
import {
  DEFAULT_PG_MIGRATIONS_DIR,
  openPgDriver,
  type PgDriver,
  PREPARED_MAX,
  parsePgUrl,
  translatePlaceholders,
} from '../src/store/pg-driver.js';
import { skipPostgres, type TestCluster, useTestCluster } from './helpers/postgres.js';

/** The numbers of the shipped PostgreSQL migrations, in order. */
const SHIPPED = readMigrations(DEFAULT_PG_MIGRATIONS_DIR).map((m) => m.number);

async function failure(promise: Promise<unknown>): Promise<Error & { code?: string }> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e as Error & { code?: string },
  );
}

describe('placeholders', () => {
  it('numbers ? outside strings, quoted identifiers and comments', () => {
    expect(translatePlaceholders(`SELECT ? , 'a?''?' , "b?""?" , ? -- c ?\n, ? /* d ? */ , ?`)).toEqual({
      text: `SELECT $1 , 'a?''?' , "b?""?" , $2 -- c ?\n, $3 /* d ? */ , $4`,
      count: 4,
    });
    expect(translatePlaceholders('SELECT 1')).toEqual({ text: 'SELECT 1', count: 0 });
    // A minus or slash alone is no comment.
    expect(translatePlaceholders('SELECT ? - ?, ? / ?').text).toBe('SELECT $1 - $2, $3 / $4');
  });

  it('numbers exactly the bare ? of any mix of text, strings, identifiers and comments (property)', () => {
    const text = (forbidden: RegExp) => fc.string({ maxLength: 12 }).map((t) => t.replace(forbidden, ' '));
    const token = fc.oneof(
      fc.constant({ param: true, sql: '?' }),
      text(/['"?\-/*\n]/g).map((t) => ({ param: false, sql: ` ${t} ` })),
      text(/\n/g).map((t) => ({ param: false, sql: `'${t.replaceAll("'", "''")}'` })),
      text(/\n/g).map((t) => ({ param: false, sql: `"${t.replaceAll('"', '""')}"` })),
      text(/\n/g).map((t) => ({ param: false, sql: `-- ${t}\n` })),
      text(/\*/g).map((t) => ({ param: false, sql: `/* ${t} */` })),
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 30 }), (tokens) => {
        let n = 0;
        const expected = tokens.map((t) => (t.param ? `$${++n}` : t.sql)).join('');
        expect(translatePlaceholders(tokens.map((t) => t.sql).join(''))).toEqual({ text: expected, count: n });
      }),
    );
  });

  it('keeps one translation per SQL text', () => {
    const sql = `SELECT id FROM t WHERE a = ? AND b = ? /* ${Math.random()} */`;
    expect(translatePlaceholders(sql)).toBe(translatePlaceholders(sql));
  });
});

describe('store.url', () => {
  it('reads host, port, user, database, sslmode and a unix socket folder', () => {
    expect(parsePgUrl('postgres://remessa@db.internal:6543/payroll')).toEqual({
      host: 'db.internal',
      port: 6543,
      user: 'remessa',
      database: 'payroll',
      ssl: false,
    });
    expect(parsePgUrl('postgresql:///remessa?host=/var/run/postgresql&sslmode=disable')).toMatchObject({
      host: '/var/run/postgresql',
      port: 5432,
      database: 'remessa',
    });
    expect(parsePgUrl('postgres://u@/d?host=/run/pg&port=5433')).toEqual({
      host: '/run/pg',
      port: 5433,
      user: 'u',
      database: 'd',
      ssl: false,
    });
    expect(parsePgUrl('postgres://u@h/d?sslmode=verify-full').ssl).toBe(true);
    expect(parsePgUrl('postgres://u@h/d?sslmode=require').ssl).toEqual({ rejectUnauthorized: false });
  });

  it('refuses a password in the URL, an unknown option and another scheme, without quoting the URL', () => {
    for (const url of ['postgres://u:hunter22@h/d', 'postgres://u@h/d?password=hunter22', 'mysql://u@h/d']) {
      let error: (Error & { code?: string }) | undefined;
      try {
        parsePgUrl(url);
      } catch (e) {
        error = e as Error & { code?: string };
      }
      expect(error?.code).toBe('STORE_URL_INVALID');
      expect(error?.message).not.toContain('hunter22');
    }
  });
});

describe('store settings', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-store-config-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('default: SQLite in the data folder', () => {
    const config = buildConfig({}, { cwd: dir, env: {} });
    expect(storeTarget(config)).toEqual({ engine: 'sqlite', file: path.join(dir, 'data', 'remessa.sqlite') });
    expect(config.store.maxConnections).toBe(10);
  });

  it('store.url: PostgreSQL, the password from store.passwordFile, else the systemd credential', () => {
    writeFileSync(path.join(dir, 'pw'), 'from-file\n');
    const credentials = path.join(dir, 'creds');
    mkdirSync(credentials);
    writeFileSync(path.join(credentials, 'remessa-store-password'), 'from-credential\n');
    const url = 'postgres://remessa@db:5432/remessa';
    const withFile = buildConfig(
      { store: { url, passwordFile: 'pw', maxConnections: 4 } },
      { cwd: dir, env: { CREDENTIALS_DIRECTORY: credentials } },
    );
    expect(storeTarget(withFile)).toEqual({
      engine: 'postgres',
      url,
      password: 'from-file',
      maxConnections: 4,
      preparedStatements: true,
    });
    const unprepared = buildConfig({ store: { url, preparedStatements: false } }, { cwd: dir, env: {} });
    expect(storeTarget(unprepared)).toMatchObject({ preparedStatements: false });
    const withCredential = buildConfig({ store: { url } }, { cwd: dir, env: { CREDENTIALS_DIRECTORY: credentials } });
    expect(withCredential.storePassword).toBe('from-credential');
    expect(buildConfig({ store: { url } }, { cwd: dir, env: {} }).storePassword).toBeUndefined();
  });

  it("store.url naming a unix socket folder (the README's two-daemon recipe) loads, and reads as the driver reads it", () => {
    // postgres://remessa@/remessa?host=... is no WHATWG URL: the config's own check refused it at every start.
    const url = 'postgres://remessa@/remessa?host=/var/run/postgresql';
    const config = buildConfig({ store: { url, daemonName: 'remessa-a' } }, { cwd: dir, env: {} });
    expect(storeTarget(config)).toMatchObject({ engine: 'postgres', url });
    expect(parsePgUrl(url)).toMatchObject({
      host: '/var/run/postgresql',
      port: 5432,
      user: 'remessa',
      database: 'remessa',
    });
    // An option the driver refuses is refused at load, with the setting named, not at the first connection.
    expect(() => buildConfig({ store: { url: `${url}&connect_timeout=5` } }, { cwd: dir, env: {} })).toThrow(
      /store\.url: Expected only sslmode/,
    );
  });

  it('refuses a password in store.url (never quoting it), a missing password file, and a non-postgres URL', () => {
    const errorOf = (raw: unknown) => {
      try {
        buildConfig(raw, { cwd: dir, env: {} });
      } catch (e) {
        return e as Error & { code?: string };
      }
      throw new Error('expected a ConfigError');
    };
    const inUrl = errorOf({ store: { url: 'postgres://remessa:hunter22@db/remessa' } });
    expect(inUrl.message).toContain('store.url');
    expect(inUrl.message).not.toContain('hunter22');
    // libpq's other way (?password=): told where the password goes, as above, not only that the option is unknown.
    const inQuery = errorOf({ store: { url: 'postgres://remessa@db/remessa?sslmode=require&password=hunter22' } });
    expect(inQuery.message).toContain('store.url: the password does not belong in the URL');
    expect(inQuery.message).not.toContain('hunter22');
    const missing = errorOf({ store: { url: 'postgres://remessa@db/remessa', passwordFile: 'nope' } });
    expect(missing.message).toContain('store.passwordFile');
    expect(missing.code).toBe('CONFIG_NOT_FOUND');
    expect(errorOf({ store: { url: 'sqlite:///x' } }).message).toContain('store.url');
    expect(errorOf({ store: { passwordFile: 'pw' } }).message).toContain('store.passwordFile');
    expect(errorOf({ store: { uri: 'postgres://x@y/z' } }).message).toContain('uri');
  });

  it('openSqlDriver: without store.url, the SQLite store in the data folder, migrated', async () => {
    const config = buildConfig({}, { cwd: dir, env: {} });
    const driver = await openSqlDriver(config);
    try {
      expect(driver.dialect).toBe('sqlite');
      expect(await driver.get('SELECT COUNT(*) AS n FROM schema_migrations')).toEqual({ n: SHIPPED.length });
      expect(existsSync(path.join(config.folders.data, 'remessa.sqlite'))).toBe(true);
    } finally {
      await driver.close();
    }
  });
});

describe.skipIf(skipPostgres)('PostgreSQL driver', () => {
  const useCluster = useTestCluster();
  let cluster: TestCluster;
  let url: string;
  let dbName: string;
  const drivers: PgDriver[] = [];
  const open = (
    options: { password?: string; url?: string; maxConnections?: number; preparedStatements?: boolean } = {},
  ) => {
    const d = openPgDriver({
      url: options.url ?? url,
      password: options.password ?? cluster.password,
      ...(options.maxConnections === undefined ? {} : { maxConnections: options.maxConnections }),
      ...(options.preparedStatements === undefined ? {} : { preparedStatements: options.preparedStatements }),
    });
    drivers.push(d);
    return d;
  };

  beforeEach(async () => {
    cluster = useCluster();
    ({ url, name: dbName } = await cluster.createDatabase());
  });
  afterEach(async () => {
    for (const d of drivers.splice(0)) await d.close();
  });

  it('refuses an integer past Number.MAX_SAFE_INTEGER instead of rounding it', async () => {
    const d = open();
    await d.run('CREATE TABLE t (id TEXT PRIMARY KEY, cents BIGINT NOT NULL)');
    await d.run('INSERT INTO t VALUES (?, ?)', ['max', Number.MAX_SAFE_INTEGER]);
    expect(await d.get('SELECT cents FROM t')).toEqual({ cents: Number.MAX_SAFE_INTEGER });
    await d.run('INSERT INTO t VALUES (?, ?)', ['over', 9_007_199_254_740_993n]);
    expect((await failure(d.all('SELECT cents FROM t'))).code).toBe('STORE_INTEGER_TOO_LARGE');
    // A SUM is NUMERIC in PostgreSQL: the same rule.
    expect((await failure(d.get('SELECT SUM(cents) AS s FROM t'))).code).toBe('STORE_INTEGER_TOO_LARGE');
    expect(await d.get('SELECT SUM(cents) / 2 AS half FROM t WHERE id = ?', ['max'])).toEqual({
      half: 4_503_599_627_370_495.5,
    });
    // The pool's parsers are its own: pg's global ones still give a string.
    const pg = (await import('pg')).default;
    expect(pg.types.getTypeParser(20, 'text')('9007199254740993')).toBe('9007199254740993');
  });

  /** The prepared statements of the driver's one connection (pg_prepared_statements is per session). */
  const prepared = (d: PgDriver) =>
    d.all<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements ORDER BY name');

  it('prepares a statement with values once it is sent again, and none with preparedStatements off', async () => {
    const d = open({ maxConnections: 1 });
    const answers = [];
    for (let i = 1; i <= 3; i++) answers.push(await d.get('SELECT ?::int + 1 AS n', [i]));
    expect(answers).toEqual([{ n: 2 }, { n: 3 }, { n: 4 }]);
    // Inside a transaction too, on the same connection: the name is known there.
    expect(await d.transaction((tx) => tx.get('SELECT ?::int + 1 AS n', [9]))).toEqual({ n: 10 });
    expect(await prepared(d)).toEqual([{ name: 'remessa_1', statement: 'SELECT $1::int + 1 AS n' }]);
    // Sent once, or without values: not prepared.
    await d.get('SELECT ?::int AS once', [1]);
    await d.get('SELECT 1 AS no_values');
    await d.get('SELECT 1 AS no_values');
    expect((await prepared(d)).map((p) => p.name)).toEqual(['remessa_1']);

    const off = open({ maxConnections: 1, preparedStatements: false });
    for (let i = 1; i <= 3; i++) expect(await off.get('SELECT ?::int + 1 AS n', [i])).toEqual({ n: i + 1 });
    expect(await prepared(off)).toEqual([]);
  });

  it(`prepares at most ${PREPARED_MAX} texts; the others go unnamed`, async () => {
    const d = open({ maxConnections: 1 });
    for (let i = 0; i < PREPARED_MAX + 5; i++) {
      for (let twice = 0; twice < 2; twice++)
        expect(await d.get(`SELECT ?::int AS n${i}`, [i])).toEqual({ [`n${i}`]: i });
    }
    expect(await prepared(d)).toHaveLength(PREPARED_MAX);
  });

  it('a cached plan refused after a migration turns preparing off and runs the statement again', async () => {
    const admin = open();
    await admin.run("CREATE TABLE t (id TEXT PRIMARY KEY, v TEXT NOT NULL DEFAULT 'a')");
    await admin.run("INSERT INTO t (id) VALUES ('x')");
    const select = 'SELECT * FROM t WHERE id = ?';
    // Outside a transaction: sent again unnamed at once.
    const direct = open({ maxConnections: 1 });
    for (let i = 0; i < 2; i++) expect(await direct.get(select, ['x'])).toEqual({ id: 'x', v: 'a' });
    // Inside one: the transaction is run again.
    const inTx = open({ maxConnections: 1 });
    for (let i = 0; i < 2; i++)
      expect(await inTx.transaction((tx) => tx.get(select, ['x']))).toEqual({ id: 'x', v: 'a' });
    await admin.run("ALTER TABLE t ADD COLUMN w TEXT NOT NULL DEFAULT 'b'");

    expect(await direct.get(select, ['x'])).toEqual({ id: 'x', v: 'a', w: 'b' });
    expect(direct.plansChanged).toBe(1);
    let runs = 0;
    const seen = await inTx.transaction(async (tx) => {
      runs += 1;
      await tx.run("UPDATE t SET v = 'c' WHERE id = ?", ['x']);
      return tx.get(select, ['x']);
    });
    expect(seen).toEqual({ id: 'x', v: 'c', w: 'b' });
    expect({ runs, plansChanged: inTx.plansChanged }).toEqual({ runs: 2, plansChanged: 1 });
    // Off for good: nothing more is prepared by either.
    await direct.get('SELECT ?::int AS later', [1]);
    await direct.get('SELECT ?::int AS later', [1]);
    expect((await prepared(direct)).filter((p) => p.statement.includes('later'))).toEqual([]);
  });

  it('refuses a statement whose placeholders and values differ in number, before sending it', async () => {
    const d = open();
    const e = await failure(d.get('SELECT ?::int AS a, ?::int AS b', [1]));
    expect(e.code).toBe('STORE_SQL_PARAMS');
    expect(e.message).toContain('Expected 2 values');
  });

  it('commits with synchronous_commit on, whatever the role says, and off only for durable: false', async () => {
    await cluster.query(`ALTER DATABASE ${dbName} SET synchronous_commit = off`);
    const d = open();
    const setting = (tx: { get: PgDriver['get'] }) =>
      tx.get<{ synchronous_commit: string }>('SHOW synchronous_commit').then((r) => r?.synchronous_commit);
    expect(await setting(d)).toBe('on');
    expect(await d.transaction((tx) => setting(tx))).toBe('on');
    expect(await d.transaction((tx) => setting(tx), { durable: false })).toBe('off');
    // SET LOCAL ends with its transaction: the connection goes back to the pool durable.
    const after = await Promise.all(Array.from({ length: 4 }, () => d.transaction((tx) => setting(tx))));
    expect(after).toEqual(['on', 'on', 'on', 'on']);
  });

  it('rejects a transaction that PostgreSQL aborted after a failed statement fn caught, and commits nothing', async () => {
    const d = open();
    await d.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
    const e = await failure(
      d.transaction(async (tx) => {
        await tx.run("INSERT INTO t VALUES ('a')");
        await tx.run("INSERT INTO t VALUES ('a')").catch(() => undefined);
        return 'fn thinks all is well';
      }),
    );
    expect(e.code).toBe('STORE_TRANSACTION_ABORTED');
    expect(await d.all('SELECT id FROM t')).toEqual([]);
    // The connection is usable again.
    await d.transaction((tx) => tx.run("INSERT INTO t VALUES ('b')"));
    expect(await d.all('SELECT id FROM t')).toEqual([{ id: 'b' }]);
  });

  it('refuses a statement given to a transaction after it ended', async () => {
    const d = open();
    let leaked: { run: PgDriver['run'] } | undefined;
    await d.transaction(async (tx) => {
      leaked = tx;
    });
    expect((await failure(leaked!.run('SELECT 1'))).code).toBe('STORE_TRANSACTION_ENDED');
  });

  it('wraps a server error in StoreError with its SQLSTATE and the statement, never the values', async () => {
    const d = open();
    await d.run('CREATE TABLE t (id TEXT PRIMARY KEY)');
    await d.run("INSERT INTO t VALUES ('12345678909')");
    const e = await failure(d.run('INSERT INTO t VALUES (?)', ['12345678909']));
    expect(e.name).toBe('StoreError');
    expect(e.code).toBe('STORE_SQL');
    expect(e.message).toContain('23505');
    expect(e.message).toContain('"INSERT INTO t VALUES (?)"');
    expect(e.message).not.toContain('12345678909');
  });

  it('several daemons migrating one database at once apply each migration exactly once', async () => {
    const racers = [open(), open(), open()];
    const applied = await Promise.all(racers.map((d) => d.migrate()));
    const all = applied.flat().sort((a, b) => a - b);
    expect(all).toEqual(SHIPPED);
    const recorded = await racers[0]!.all<{ version: number }>('SELECT version FROM schema_migrations ORDER BY 1');
    expect(recorded.map((r) => r.version)).toEqual(SHIPPED);
  });

  it('keeps the password out of every message, even where the server quotes it back', async () => {
    const secret = 'sekritvalue4711';
    await cluster.query(`CREATE ROLE app LOGIN PASSWORD '${secret}'`);
    await cluster.query(`GRANT ALL ON DATABASE ${dbName} TO app`);
    const appUrl = `postgres://app@127.0.0.1:${cluster.port}/${dbName}`;
    const d = open({ url: appUrl, password: secret });
    // An error whose text holds the password (here as a column name the server says does not exist).
    const quoted = await failure(d.get(`SELECT ${secret}`));
    expect(quoted.code).toBe('STORE_SQL');
    expect(quoted.message).not.toContain(secret);
    expect(quoted.message).toContain('***');
    expect(String((quoted.cause as Error).message)).not.toContain(secret);
    // A wrong password: the message names the role and the database, not the password tried.
    const wrong = await failure(open({ url: appUrl, password: `${secret}-wrong` }).get('SELECT 1'));
    expect(wrong.code).toBe('STORE_CONNECT_FAILED');
    expect(wrong.message).toContain(`postgres://app@127.0.0.1:${cluster.port}/${dbName}`);
    expect(wrong.message).not.toContain(secret);
    expect(JSON.stringify(wrong)).not.toContain(secret);
  });

  it('survives its connections being cut: an idle one is reported and replaced, a transaction’s is dropped', async () => {
    const idleErrors: Array<{ code: string }> = [];
    const d = openPgDriver({ url, password: cluster.password, onIdleError: (e) => idleErrors.push(e) });
    drivers.push(d);
    await Promise.all([d.get('SELECT pg_sleep(0.05)'), d.get('SELECT pg_sleep(0.05)')]);
    await cluster.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'remessa' AND datname = '${dbName}'`,
    );
    for (let i = 0; i < 50 && idleErrors.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(idleErrors.length).toBe(2);
    expect(await d.get('SELECT 1 AS ok')).toEqual({ ok: 1 });
    // Cut inside a transaction: it rejects, and its connection is not given back to the pool.
    const cut = await failure(d.transaction((tx) => tx.get('SELECT pg_terminate_backend(pg_backend_pid())')));
    expect(cut.code).toBe('STORE_CONNECTION_LOST');
    expect(await d.transaction((tx) => tx.get('SELECT 2 AS ok'))).toEqual({ ok: 2 });
  });

  it('connects over the unix socket named by ?host= and ?port=', async () => {
    const d = open({
      url: `postgres://${cluster.user}@/${dbName}?host=${encodeURIComponent(cluster.socketDir)}&port=${cluster.port}`,
    });
    expect(await d.get("SELECT current_setting('port')::int AS port")).toEqual({ port: cluster.port });
    expect(await d.get('SELECT inet_server_addr() AS addr')).toEqual({ addr: null });
  });

  it('openSqlDriver opens PostgreSQL when store.url is set, and migrates it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-store-config-'));
    try {
      writeFileSync(path.join(dir, 'pw'), `${cluster.password}\n`);
      const config = buildConfig({ store: { url, passwordFile: 'pw' } }, { cwd: dir, env: {} });
      const d = await openSqlDriver(config);
      try {
        expect(d.dialect).toBe('postgres');
        expect(await d.get('SELECT COUNT(*) AS n FROM schema_migrations')).toEqual({ n: SHIPPED.length });
      } finally {
        await d.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
