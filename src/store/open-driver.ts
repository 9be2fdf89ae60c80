/**
 * Which engine holds the store, from the configuration (issue 13): SQLite in the data folder (`remessa.sqlite`, the
 * embedded default) unless `store.url` names a PostgreSQL database. The daemon and every command find and open the
 * store through ./place.ts (`storePlace`), which loads this module only when it opens a PostgreSQL store.
 *
 * Several daemons may share one PostgreSQL store (claims and leases: ./leases.ts, docs/postgres.md). Each daemon keeps
 * its own data folder and its lock (src/runner/lock.ts), and on one machine a name of its own.
 */
import path from 'node:path';
import type { Config } from '../config.js';
import { describePgUrl, openPgDriver } from './pg-driver.js';
import { pgStoreTarget, SQLITE_STORE_FILE } from './place.js';
import type { SqlDriver } from './sql.js';
import { openSqliteDriver } from './sqlite-driver.js';
import { openStoreWith, type Store, type StoreOptions } from './store.js';

export type StoreTarget = { engine: 'sqlite'; file: string } | ReturnType<typeof pgStoreTarget>;

/** The part of the configuration that says where the store is. */
export type StoreConfig = Pick<Config, 'store' | 'storePassword' | 'folders'>;

/** Where the configuration puts the store. */
export function storeTarget(config: StoreConfig): StoreTarget {
  if (config.store.url !== undefined) return pgStoreTarget(config, config.store.url);
  return { engine: 'sqlite', file: path.join(config.folders.data, SQLITE_STORE_FILE) };
}

export interface OpenSqlDriverOptions {
  /** Opens the SQLite driver on a file. @defaultValue ./sqlite-driver.ts's */
  openSqlite?: (file: string) => SqlDriver | Promise<SqlDriver>;
}

/**
 * Opens the store's driver where the configuration says, and brings its schema up to date (`migrate`). A database
 * written by a newer remessa is refused (STORE_SCHEMA_TOO_NEW) and the driver closed.
 */
export async function openSqlDriver(config: StoreConfig, options: OpenSqlDriverOptions = {}): Promise<SqlDriver> {
  const target = storeTarget(config);
  let driver: SqlDriver;
  if (target.engine === 'postgres') {
    driver = openPgDriver(target);
  } else {
    const openSqlite = options.openSqlite ?? ((file: string) => openSqliteDriver(file));
    driver = await openSqlite(target.file);
  }
  try {
    await driver.migrate();
  } catch (error) {
    await driver.close();
    throw error;
  }
  return driver;
}

/** Opens the store on PostgreSQL (./place.ts calls it; the SQLite-only options do not apply). */
export async function openPgStore(
  target: Extract<StoreTarget, { engine: 'postgres' }>,
  options: Pick<StoreOptions, 'now' | 'readonly' | 'commitWindowMs' | 'vacuumEveryRows' | 'logger'> = {},
): Promise<Store> {
  const driver = openPgDriver(target);
  try {
    return await openStoreWith(driver, describePgUrl(target.url), options);
  } catch (error) {
    await driver.close();
    throw error;
  }
}
