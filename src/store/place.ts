/**
 * Where the store is, and the ONE way the daemon and every command (run, status, settle, resolve, approve/reject,
 * the webhook receiver) open it (issue 13): SQLite in the data folder (`remessa.sqlite`, the embedded default) unless
 * `store.url` names a PostgreSQL database (./open-driver.ts, `storeTarget`).
 *
 * Light on purpose: it loads the store's modules only when a store is opened, so that `remessa validate`, which maps
 * the configuration too (src/runner/options.ts), loads neither the store nor a database driver.
 *
 * Several daemons may share one PostgreSQL store (claims and leases: ./leases.ts, docs/postgres.md). Each daemon keeps
 * its own data folder and its lock in it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Store, StoreOptions } from './store.js';

/** The SQLite store's file name in `folders.data`. */
export const SQLITE_STORE_FILE = 'remessa.sqlite';

/** How a command opens the store (`busyTimeoutMs` applies to SQLite only). */
export type OpenPlaceOptions = Pick<StoreOptions, 'now' | 'readonly' | 'busyTimeoutMs' | 'logger'>;

/** What the configuration sets for every store it opens. */
type PlaceStoreOptions = Pick<StoreOptions, 'commitWindowMs' | 'vacuumEveryRows'>;

/**
 * Where the store is, and how to open it. The PostgreSQL password stays inside `open` (it is in no property, so no
 * log or JSON of the options ever shows it).
 */
export interface StorePlace {
  readonly engine: 'sqlite' | 'postgres';
  /** The SQLite file, or the PostgreSQL URL as configured (which never holds a password: src/config.ts refuses it). */
  readonly where: string;
  /** Whether there is a store to read: the SQLite file exists (PostgreSQL: true; the server answers for it). */
  exists(): boolean;
  /** Opens the store (migrations applied unless `readonly`). */
  open(options?: OpenPlaceOptions): Promise<Store>;
}

/** "SQLite /data/remessa.sqlite" or "PostgreSQL postgres://remessa@db:5432/remessa": for people, never a password. */
export function describeStorePlace(place: Pick<StorePlace, 'engine' | 'where'>): string {
  return `${place.engine === 'postgres' ? 'PostgreSQL' : 'SQLite'} ${place.where}`;
}

/** The PostgreSQL store the configuration names by `url` (./open-driver.ts opens it). */
export function pgStoreTarget(config: Pick<Config, 'store' | 'storePassword'>, url: string) {
  return {
    engine: 'postgres' as const,
    url,
    password: config.storePassword,
    maxConnections: config.store.maxConnections,
    preparedStatements: config.store.preparedStatements,
  };
}

/** The store the configuration names. */
export function storePlace(config: Pick<Config, 'store' | 'storePassword' | 'folders'>): StorePlace {
  const url = config.store.url;
  const { commitWindowMs, vacuumEveryRows } = config.store;
  const fixed: PlaceStoreOptions = {
    ...(commitWindowMs === undefined ? {} : { commitWindowMs }),
    ...(vacuumEveryRows === undefined ? {} : { vacuumEveryRows }),
  };
  if (url === undefined) return sqliteStorePlace(path.join(config.folders.data, SQLITE_STORE_FILE), fixed);
  const target = pgStoreTarget(config, url);
  return {
    engine: 'postgres',
    where: url,
    exists: () => true,
    async open(options = {}) {
      const { openPgStore } = await import('./open-driver.js');
      return openPgStore(target, { ...fixed, now: options.now, readonly: options.readonly, logger: options.logger });
    },
  };
}

/** The SQLite store in a file (what a configuration without `store.url` names, in its data folder). */
export function sqliteStorePlace(file: string, fixed: PlaceStoreOptions = {}): StorePlace {
  return {
    engine: 'sqlite',
    where: file,
    exists: () => existsSync(file),
    async open(options = {}) {
      const { openStore } = await import('./store.js');
      return openStore(file, { ...fixed, ...options });
    },
  };
}

/** The runner's store: the place its configuration named, else SQLite in its data folder (as before `store.url`). */
export function runnerStorePlace(options: { folders: { data: string }; store?: StorePlace | undefined }): StorePlace {
  return options.store ?? sqliteStorePlace(path.join(options.folders.data, SQLITE_STORE_FILE));
}
