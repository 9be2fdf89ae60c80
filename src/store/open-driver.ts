/**
 * Which engine holds the store, from the configuration (issue 13): SQLite in the data folder (`remessa.sqlite`, the
 * embedded default, one daemon) unless `store.url` names a PostgreSQL database (several daemons sharing one store).
 *
 * NOT WIRED INTO THE DAEMON YET: the store is being converted onto ./sql.ts; until then the daemon opens SQLite
 * through ./db.ts whatever `store.url` says, and this factory is used by tests only.
 */
import path from 'node:path';
import type { Config } from '../config.js';
import { openPgDriver } from './pg-driver.js';
import type { SqlDriver } from './sql.js';
import { openSqliteDriver } from './sqlite-driver.js';

/** The SQLite store's file name in `folders.data` (the same name src/runner/status.ts reads). */
export const SQLITE_STORE_FILE_NAME = 'remessa.sqlite';

export type StoreTarget =
  | { engine: 'sqlite'; file: string }
  | { engine: 'postgres'; url: string; password: string | undefined; maxConnections: number };

/** The part of the configuration that says where the store is. */
export type StoreConfig = Pick<Config, 'store' | 'storePassword' | 'folders'>;

/** Where the configuration puts the store. */
export function storeTarget(config: StoreConfig): StoreTarget {
  if (config.store.url !== undefined) {
    return {
      engine: 'postgres',
      url: config.store.url,
      password: config.storePassword,
      maxConnections: config.store.maxConnections,
    };
  }
  return { engine: 'sqlite', file: path.join(config.folders.data, SQLITE_STORE_FILE_NAME) };
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
    driver = openPgDriver({ url: target.url, password: target.password, maxConnections: target.maxConnections });
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
