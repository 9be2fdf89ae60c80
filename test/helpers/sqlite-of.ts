import type Database from 'better-sqlite3';
import { SqliteDriver } from '../../src/store/sqlite-driver.js';
import type { Store } from '../../src/store/store.js';

/** The SQLite connection under a store, for what only SQLite has (a pragma, raw SQL a test sets up, `serialize`). */
export function sqliteOf(store: Store): Database.Database {
  if (!(store.driver instanceof SqliteDriver)) throw new Error('Expected a store on SQLite');
  return store.driver.database;
}

/**
 * The store's file as committed now (what a crash at this instant leaves on disk): read in a transaction of its own,
 * so that a group commit under way is either wholly in it or not at all.
 */
export function committedSnapshot(store: Store): Promise<Buffer> {
  return store.driver.transaction(async () => sqliteOf(store).serialize());
}
