/**
 * The store's suites on both engines (issue 13 §2, "the store contract's test suite runs against both
 * implementations"): `storeEngines()` gives one entry per engine, each opening a fresh, empty store:
 * - sqlite: a file in a temp folder of its own (`openStore`, as the daemon opens it);
 * - postgres: a fresh database of this test file's throw-away cluster (test/helpers/postgres.ts), through
 *   `openStoreWith(openPgDriver(...))`.
 * Call it once at the top of a test file (it registers the cluster's beforeAll/afterAll), then
 * `describe.each(engines)('... ($name)', (engine) => ...)`, with `skipIfAsked(engine)` at the top of the body
 * (`REMESSA_TEST_NO_POSTGRES=1` skips the PostgreSQL half, visibly; nothing else does).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach } from 'vitest';
import { describePgUrl, openPgDriver } from '../../src/store/pg-driver.js';
import { openStore, openStoreWith, type Store, type StoreOptions } from '../../src/store/store.js';
import { skipPostgres, type TestCluster, useTestCluster } from './postgres.js';

export type EngineName = 'sqlite' | 'postgres';

/** Options both engines take (the SQLite-only ones, a lock file or a busy timeout, are left out). */
export type EngineStoreOptions = Omit<StoreOptions, 'exclusive' | 'migrationsDir' | 'busyTimeoutMs'>;

export interface StoreEngine {
  readonly name: EngineName;
  /** Skipped on request (REMESSA_TEST_NO_POSTGRES=1), never because the server is missing. */
  readonly skip: boolean;
  /** A fresh, empty store (migrations applied). */
  open(options?: EngineStoreOptions): Promise<Store>;
  /** The same file or database as `store` (closed or not), opened again. */
  reopen(store: Store, options?: EngineStoreOptions): Promise<Store>;
}

export function storeEngines(): StoreEngine[] {
  const dirs: string[] = [];
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
    reopen(store, options = {}) {
      return openStore(store.file, options);
    },
  };
  const cluster: (() => TestCluster) | undefined = skipPostgres ? undefined : useTestCluster();
  const openPg = async (url: string, options: EngineStoreOptions): Promise<Store> => {
    const c = cluster!();
    const driver = openPgDriver({ url, password: c.password, maxConnections: 4 });
    try {
      const store = await openStoreWith(driver, describePgUrl(url), options);
      return store;
    } catch (error) {
      await driver.close();
      throw error;
    }
  };
  const postgres: StoreEngine = {
    name: 'postgres',
    skip: skipPostgres,
    async open(options = {}) {
      const { url } = await cluster!().createDatabase();
      return openPg(url, options);
    },
    reopen(store, options = {}) {
      // store.file is the URL without credentials (describePgUrl): its last part is the database.
      const database = store.file.split('/').pop()!;
      return openPg(cluster!().url(database), options);
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
