/**
 * The store's suites on both engines (issue 13 §2, "the store contract's test suite runs against both
 * implementations"): `storeEngines()` gives one entry per engine, each opening a fresh, empty store:
 * - sqlite: a file in a temp folder of its own (`openStore`, as the daemon opens it);
 * - postgres: a fresh database of this test file's throw-away cluster (test/helpers/postgres.ts), through
 *   `openStoreWith(openPgDriver(...))`: a copy (`CREATE DATABASE ... TEMPLATE`) of a database migrated once per test
 *   file (measured on test/engine.test.ts: about a third of the server's CPU time of migrating each database).
 * Call it once at the top of a test file (it registers the cluster's beforeAll/afterAll), then
 * `describe.each(engines)('... ($name)', (engine) => ...)`, with `skipIfAsked(engine)` at the top of the body
 * (`REMESSA_TEST_NO_POSTGRES=1` skips the PostgreSQL half, visibly; nothing else does).
 */
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach } from 'vitest';
import { DEFAULT_MIGRATIONS_DIR } from '../../src/store/db.js';
import { DEFAULT_PG_MIGRATIONS_DIR, describePgUrl, openPgDriver } from '../../src/store/pg-driver.js';
import { SQLITE_STORE_FILE, type StorePlace, sqliteStorePlace } from '../../src/store/place.js';
import type { SqlExecutor, SqlTransaction } from '../../src/store/sql.js';
import { openStore, openStoreWith, type Store, type StoreOptions } from '../../src/store/store.js';
import { skipPostgres, type TestCluster, useTestCluster } from './postgres.js';
import { committedSnapshot } from './sqlite-of.js';

export type EngineName = 'sqlite' | 'postgres';

/** Options both engines take (the SQLite-only ones, a lock file or a busy timeout, are left out). */
export type EngineStoreOptions = Omit<StoreOptions, 'exclusive' | 'migrationsDir' | 'busyTimeoutMs'>;

export interface StoreEngine {
  readonly name: EngineName;
  /** Skipped on request (REMESSA_TEST_NO_POSTGRES=1), never because the server is missing. */
  readonly skip: boolean;
  /** A fresh, empty store (migrations applied). */
  open(options?: EngineStoreOptions): Promise<Store>;
  /**
   * A fresh store with only its engine's migrations numbered below `before`: a store as an older version left it.
   * `reopen` applies the rest (the upgrade).
   */
  openBefore(before: number): Promise<Store>;
  /** The same file or database as `store` (closed or not), opened again. */
  reopen(store: Store, options?: EngineStoreOptions): Promise<Store>;
  /**
   * A crash at this instant: the store's committed state as a SIGKILL of its process leaves it, as a copy to open
   * (`open`). SQLite: a copy of the file read in a transaction of its own (a group commit under way is wholly in it or
   * not at all); `store` stays usable. PostgreSQL: the store's sessions are terminated (a transaction under way rolls
   * back) and the database is copied; `store` can no longer reach its database, so its next statements fail, as a
   * dead process's would.
   */
  crash(store: Store): Promise<{ open(options?: EngineStoreOptions): Promise<Store> }>;
  /**
   * A fresh store for what opens it by itself (a pipeline from its config, the webhook receiver from its place):
   * `section` is the config's `store` (none on SQLite: the file in folders.data, `dataDir`; on PostgreSQL a fresh
   * database, its password in a file in `secretsDir`), and `place` where it is (src/store/place.ts), which the test
   * opens it by too.
   */
  configured(
    dataDir: string,
    secretsDir: string,
  ): Promise<{ section: { url: string; passwordFile: string } | undefined; place: StorePlace }>;
}

export function storeEngines(): StoreEngine[] {
  const dirs: string[] = [];
  let crashes = 0;
  /** A folder with the migrations of `all` numbered below `before`. */
  const migrationsBefore = (all: string, before: number): string => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-migrations-'));
    dirs.push(dir);
    for (const f of readdirSync(all)) if (Number(f.slice(0, 3)) < before) cpSync(path.join(all, f), path.join(dir, f));
    return dir;
  };
  afterAll(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
  const sqlite: StoreEngine = {
    name: 'sqlite',
    skip: false,
    async open(options = {}) {
      const dir = mkdtempSync(path.join(tmpdir(), 'remessa-store-engine-'));
      dirs.push(dir);
      return openStore(path.join(dir, 'remessa.sqlite'), options);
    },
    async openBefore(before) {
      const dir = mkdtempSync(path.join(tmpdir(), 'remessa-store-engine-'));
      dirs.push(dir);
      const migrationsDir = migrationsBefore(DEFAULT_MIGRATIONS_DIR, before);
      return openStore(path.join(dir, 'remessa.sqlite'), { migrationsDir });
    },
    reopen(store, options = {}) {
      return openStore(store.file, options);
    },
    async configured(dataDir) {
      return { section: undefined, place: sqliteStorePlace(path.join(dataDir, SQLITE_STORE_FILE)) };
    },
    async crash(store) {
      const file = `${store.file}.crashed-${++crashes}`;
      writeFileSync(file, await committedSnapshot(store));
      return { open: (options = {}) => openStore(file, options) };
    },
  };
  const cluster: (() => TestCluster) | undefined = skipPostgres ? undefined : useTestCluster();
  const openPg = async (url: string, options: EngineStoreOptions, migrationsDir?: string): Promise<Store> => {
    const c = cluster!();
    const driver = openPgDriver({
      url,
      password: c.password,
      maxConnections: 4,
      ...(migrationsDir && { migrationsDir }),
    });
    try {
      const store = await openStoreWith(driver, describePgUrl(url), options);
      return store;
    } catch (error) {
      await driver.close();
      throw error;
    }
  };
  // The migrated database this file's stores are copies of, made by the first `open`.
  let template: Promise<string> | undefined;
  const migrated = (): Promise<string> => {
    template ??= (async () => {
      const { name, url } = await cluster!().createDatabase();
      const store = await openPg(url, {});
      await store.close(); // a template is copied only when no session is open on it
      return name;
    })();
    return template;
  };
  // store.file is the URL without credentials (describePgUrl): its last part is the database.
  const databaseOf = (store: Store): string => store.file.split('/').pop()!;
  const postgres: StoreEngine = {
    name: 'postgres',
    skip: skipPostgres,
    async open(options = {}) {
      const { url } = await cluster!().createDatabase(await migrated());
      return openPg(url, options);
    },
    async openBefore(before) {
      const { url } = await cluster!().createDatabase();
      return openPg(url, {}, migrationsBefore(DEFAULT_PG_MIGRATIONS_DIR, before));
    },
    reopen(store, options = {}) {
      return openPg(cluster!().url(databaseOf(store)), options);
    },
    async configured(_dataDir, secretsDir) {
      const c = cluster!();
      const { url } = await c.createDatabase(await migrated());
      const passwordFile = path.join(secretsDir, 'store-password');
      writeFileSync(passwordFile, `${c.password}\n`, { mode: 0o600 });
      const place: StorePlace = {
        engine: 'postgres',
        where: url,
        exists: () => true,
        open: (o = {}) => openPg(url, { now: o.now, readonly: o.readonly }),
      };
      return { section: { url, passwordFile }, place };
    },
    async crash(store) {
      const { url } = await cluster!().crashCopy(databaseOf(store));
      return { open: (options = {}) => openPg(url, options) };
    },
  };
  return [sqlite, postgres];
}

/** At the top of a `describe.each(engines)` body: skips the engine's tests when asked to (they show as skipped). */
export function skipIfAsked(engine: StoreEngine): void {
  if (!engine.skip) return;
  beforeEach((context) => {
    context.skip();
  });
}

/**
 * What `interceptWrites` may put in place of a view method: given the real one, the write it is called in (one object
 * per `store.write` call, the same when the group commit runs that write again) and the call's arguments.
 */
export type WriteInterceptors = {
  [K in keyof Store]?: Store[K] extends (...args: infer A) => infer R
    ? (real: (...args: A) => R, write: object, ...args: A) => R
    : never;
};

/**
 * From now on, the views `store.write` hands its callers run `around[method](real, write, ...args)` in place of those
 * methods (every other method as it is): a test's way to make a chosen write fail inside its transaction, as a store
 * failure would (the group commit then undoes that write only). A write may run more than once: a group in which a
 * write failed is run again, a savepoint each (src/store/store.ts `flush`); a failure meant for one write keys on
 * `write`, so that it fails every run of that write, as a real store failure would.
 */
export function interceptWrites(store: Store, around: WriteInterceptors): void {
  const realWrite = store.write.bind(store);
  const wrappers = around as Record<
    PropertyKey,
    ((real: unknown, write: object, ...args: unknown[]) => unknown) | undefined
  >;
  store.write = ((fn, options) => {
    const write = {};
    return realWrite(
      (s) =>
        fn(
          new Proxy(s, {
            get(target, prop, receiver) {
              const value = Reflect.get(target, prop, receiver);
              if (typeof value !== 'function') return value;
              const real = value.bind(target);
              const wrap = wrappers[prop];
              return wrap ? (...args: unknown[]) => wrap(real, write, ...args) : real;
            },
          }),
        ),
      options,
    );
  }) as typeof store.write;
}

/**
 * Counts the statements `store` sends to its engine from now on: each `all`, `get` and `run` of its driver, in a
 * transaction or not (BEGIN, COMMIT and savepoints are the driver's own, not counted). On PostgreSQL each is a round
 * trip.
 */
export function countStatements(store: Store): { readonly n: number } {
  const counter = { n: 0 };
  const counted = <T extends SqlExecutor>(executor: T): T =>
    new Proxy(executor, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        if (prop === 'all' || prop === 'get' || prop === 'run') {
          return (...args: unknown[]) => {
            counter.n++;
            return value.apply(target, args);
          };
        }
        if (prop === 'savepoint') {
          return (fn: (tx: SqlTransaction) => Promise<unknown>) =>
            value.call(target, (tx: SqlTransaction) => fn(counted(tx)));
        }
        return value.bind(target);
      },
    });
  const driver = store.driver;
  const transaction = driver.transaction.bind(driver);
  driver.transaction = (fn, options) => transaction((tx) => fn(counted(tx)), options);
  const direct = counted(driver);
  driver.all = direct.all;
  driver.get = direct.get;
  driver.run = direct.run;
  return counter;
}
