/**
 * The SQLite driver of the store (./sql.ts): one better-sqlite3 connection, opened as ./db.ts does (WAL,
 * synchronous=FULL, busy timeout, foreign keys, the prepared-statement cache), migrations from ./migrations/.
 *
 * better-sqlite3 is synchronous: a statement runs to its end before the call returns, and the promise the driver hands
 * back is already settled. What the asynchronous contract adds, and what must hold:
 * - One transaction at a time, holding the connection. While `transaction(fn)` is open, every other call of the
 *   driver (a direct query, another transaction, `migrate`, `close`) waits in a FIFO queue until it ends: fn may await
 *   its own calls, and a statement issued from elsewhere in that moment would otherwise land inside fn's transaction
 *   (committed or rolled back with it). Only fn's own `tx` runs statements inside; a `tx` used after its transaction
 *   ended throws rather than run outside it.
 * - A transaction's fn awaits nothing but its own tx's calls (./store.ts states the rule for the store): the write
 *   lock of the file is held from BEGIN to COMMIT, and so is this queue.
 * - Every transaction of a writable connection begins IMMEDIATE: the file's write lock is taken at BEGIN, so a
 *   transaction that reads then writes never fails half-way on another process's lock (SQLite cannot upgrade a read
 *   transaction in WAL mode once another writer committed); `busy_timeout` applies at BEGIN instead.
 * - `{ durable: false }`: that one commit runs with synchronous=NORMAL (no fsync; WAL keeps it atomic and in order),
 *   set before BEGIN (SQLite refuses to change the level inside a transaction) and set back to FULL after it, so every
 *   other commit of the connection is FULL.
 * - `savepoint(fn)` nests (SAVEPOINT / RELEASE, ROLLBACK TO on a throw): fn's writes alone are undone, and the error
 *   is rethrown. The calls of one transaction are sequential (each awaited before the next): two savepoints of one
 *   transaction open side by side would release each other's writes.
 */
import type Database from 'better-sqlite3';
import {
  DEFAULT_MIGRATIONS_DIR,
  migrate,
  type OpenDatabaseOptions,
  openConnection,
  readMigrations,
  type SqliteDatabase,
  StoreError,
} from './db.js';
import type { SqlDriver, SqlParam, SqlRunResult, SqlTransaction, TransactionOptions } from './sql.js';

export type SqliteDriverOptions = OpenDatabaseOptions;

/** Opens the SQLite store file (no migration applied yet: call `migrate`). */
export function openSqliteDriver(file: string, options: SqliteDriverOptions = {}): SqliteDriver {
  return new SqliteDriver(openConnection(file, options), options);
}

export class SqliteDriver implements SqlDriver {
  readonly dialect = 'sqlite' as const;
  /** The connection, for what only SQLite has (a test reading a pragma, `serialize`). Never for the store's writes. */
  readonly database: SqliteDatabase;
  readonly #migrationsDir: string;
  readonly #readonly: boolean;
  /** A transaction (or migrate/close) holds the connection; others wait in `#waiters`. */
  #held = false;
  readonly #waiters: Array<() => void> = [];
  #closed = false;

  constructor(database: SqliteDatabase, options: SqliteDriverOptions = {}) {
    this.database = database;
    this.#migrationsDir = options.migrationsDir ?? DEFAULT_MIGRATIONS_DIR;
    this.#readonly = options.readonly ?? false;
  }

  // ---------------------------------------------------------------- the queue

  #acquire(): Promise<void> | undefined {
    if (!this.#held) {
      this.#held = true;
      return undefined;
    }
    return new Promise<void>((resolve) => this.#waiters.push(resolve));
  }

  /** Hands the connection to the next waiter (it stays held), or frees it. */
  #release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#held = false;
  }

  /** Runs a statement now when the connection is free, else once every transaction queued before it has ended. */
  #direct<T>(exec: () => T): Promise<T> {
    if (!this.#held) {
      try {
        return Promise.resolve(exec());
      } catch (error) {
        return Promise.reject(error);
      }
    }
    return this.#withConnection(async () => exec());
  }

  async #withConnection<T>(fn: () => Promise<T>): Promise<T> {
    const wait = this.#acquire();
    if (wait) await wait;
    try {
      return await fn();
    } finally {
      this.#release();
    }
  }

  // ---------------------------------------------------------------- statements

  #statement(sql: string): Database.Statement {
    if (this.#closed) throw new StoreError('STORE_CLOSED', 'The store is closed');
    return this.database.prepare(sql); // cached by ./db.ts
  }

  _all<T>(sql: string, params: readonly SqlParam[] = []): T[] {
    return this.#statement(sql).all(...params) as T[];
  }

  _get<T>(sql: string, params: readonly SqlParam[] = []): T | undefined {
    return this.#statement(sql).get(...params) as T | undefined;
  }

  _run(sql: string, params: readonly SqlParam[] = []): SqlRunResult {
    return { changes: this.#statement(sql).run(...params).changes };
  }

  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    return this.#direct(() => this._all<T>(sql, params));
  }

  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    return this.#direct(() => this._get<T>(sql, params));
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<SqlRunResult> {
    return this.#direct(() => this._run(sql, params));
  }

  // ---------------------------------------------------------------- transactions

  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    return this.#withConnection(async () => {
      const durable = options.durable !== false;
      const db = this.database;
      // Prepared once and cached (./db.ts), unlike `db.pragma`, which compiles its statement on every call: this runs
      // twice per commit of answers, the most frequent commit of a run.
      if (!durable) this.#statement('PRAGMA synchronous = NORMAL').run();
      try {
        this.#statement(this.#readonly ? 'BEGIN' : 'BEGIN IMMEDIATE').run();
        const tx = new SqliteTransaction(this, 0);
        try {
          const result = await fn(tx);
          tx.open = false;
          this.#statement('COMMIT').run();
          return result;
        } catch (error) {
          tx.open = false;
          if (db.inTransaction) this.#statement('ROLLBACK').run();
          throw error;
        }
      } finally {
        // Every other commit of the connection is FULL again.
        if (!durable && db.open) this.#statement('PRAGMA synchronous = FULL').run();
      }
    });
  }

  // ---------------------------------------------------------------- schema and life

  migrate(): Promise<number[]> {
    return this.#withConnection(async () => {
      if (this.#readonly) return [];
      return migrate(this.database, readMigrations(this.#migrationsDir));
    });
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    return this.#withConnection(async () => {
      if (this.#closed) return;
      this.#closed = true;
      this.database.close();
    });
  }

  get isOpen(): boolean {
    return !this.#closed;
  }
}

/** A transaction of the SQLite driver: runs its statements directly on the held connection. */
class SqliteTransaction implements SqlTransaction {
  open = true;
  readonly #driver: SqliteDriver;
  /** Savepoints around it: names by depth (sequential calls), so their SQL texts stay few and cached. */
  readonly #depth: number;

  constructor(driver: SqliteDriver, depth: number) {
    this.#driver = driver;
    this.#depth = depth;
  }

  #check(): void {
    if (!this.open) {
      throw new StoreError('STORE_TX_ENDED', 'A statement was issued on a transaction that has already ended');
    }
    // SQLite rolls a whole transaction back on some errors (disk full, I/O): a statement now would run on its own.
    if (!this.#driver.database.inTransaction) {
      throw new StoreError('STORE_TX_ENDED', 'The transaction was rolled back by SQLite after an error');
    }
  }

  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]> {
    try {
      this.#check();
      return Promise.resolve(this.#driver._all<T>(sql, params));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined> {
    try {
      this.#check();
      return Promise.resolve(this.#driver._get<T>(sql, params));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  run(sql: string, params?: readonly SqlParam[]): Promise<SqlRunResult> {
    try {
      this.#check();
      return Promise.resolve(this.#driver._run(sql, params));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  async savepoint<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T> {
    this.#check();
    const name = `sp${this.#depth + 1}`;
    this.#driver._run(`SAVEPOINT ${name}`);
    const inner = new SqliteTransaction(this.#driver, this.#depth + 1);
    try {
      const result = await fn(inner);
      inner.open = false;
      this.#driver._run(`RELEASE ${name}`);
      return result;
    } catch (error) {
      inner.open = false;
      if (this.#driver.database.inTransaction) {
        this.#driver._run(`ROLLBACK TO ${name}`);
        this.#driver._run(`RELEASE ${name}`);
      }
      throw error;
    }
  }
}
