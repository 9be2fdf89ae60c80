/**
 * The store's one way to SQL: an interface, and a driver per engine (SQLite through better-sqlite3, the embedded
 * default; PostgreSQL through `pg`, for several daemons sharing one store). The store's logic, and with it every rule
 * of ./rows.ts, is written once against this interface, so the rules hold word for word on both engines.
 *
 * The SQL the store writes is the subset both engines speak, so that one text serves both:
 * - `?` placeholders (the PostgreSQL driver numbers them `$1..$n`, outside quoted strings);
 * - `INSERT ... ON CONFLICT (...) DO NOTHING | DO UPDATE`, `RETURNING`, `COALESCE`, `CASE`; no engine-specific
 *   function (no `datetime('now')`, no `now()`): times come from the program as ISO 8601 UTC text;
 * - JSON is kept as TEXT and parsed by the program; booleans are 0/1 integers;
 * - integers (cents included) come back as JS numbers on both (the PostgreSQL driver parses BIGINT and refuses a
 *   value past Number.MAX_SAFE_INTEGER rather than round it).
 * Where the two must differ (a lease's `FOR UPDATE SKIP LOCKED`, which SQLite neither has nor needs with one writer),
 * the store asks `dialect`.
 *
 * Transactions: `transaction(fn)` runs fn on one connection between BEGIN and COMMIT, and rolls back when fn throws.
 * The transactions of one driver never interleave with each other or with its direct queries: SQLite has one
 * connection, so the driver queues every call behind an open transaction (a query issued from elsewhere while fn
 * awaits must not land inside it); PostgreSQL gives each transaction a pooled connection of its own.
 * `savepoint(fn)` inside a transaction undoes only fn's writes when fn throws, and rethrows.
 *
 * Durability: a commit is on disk before `transaction` resolves (SQLite WAL + synchronous=FULL; PostgreSQL
 * synchronous_commit=on), except with `{ durable: false }`, which lets that one commit skip its flush (SQLite
 * synchronous=NORMAL for that commit; PostgreSQL `SET LOCAL synchronous_commit = off`). The store says which of its
 * writes may (./store.ts, "Durability per commit"): never an intent.
 */

/** A value bound to a `?`. Booleans are passed as 0/1. */
export type SqlParam = string | number | bigint | Buffer | null;

export interface SqlRunResult {
  /** Rows inserted, updated or deleted by the statement. */
  changes: number;
}

export interface SqlExecutor {
  /** Every row the statement returns. */
  all<T>(sql: string, params?: readonly SqlParam[]): Promise<T[]>;
  /** The first row, or undefined. */
  get<T>(sql: string, params?: readonly SqlParam[]): Promise<T | undefined>;
  /** A statement run for its effect. */
  run(sql: string, params?: readonly SqlParam[]): Promise<SqlRunResult>;
}

export interface SqlTransaction extends SqlExecutor {
  /** Runs fn in a savepoint: when fn throws, its writes alone are undone and the error is rethrown. */
  savepoint<T>(fn: (tx: SqlTransaction) => Promise<T>): Promise<T>;
}

export interface TransactionOptions {
  /** false: this commit may skip its flush to disk (see the top of this file). @defaultValue true */
  durable?: boolean;
}

/** A warning the server sent with a statement's answer (PostgreSQL's notices of severity WARNING). */
export interface ServerWarning {
  /** SQLSTATE, when the server gave one. */
  code: string | undefined;
  message: string;
}

export interface SqlDriver extends SqlExecutor {
  readonly dialect: 'sqlite' | 'postgres';
  /** Runs fn in one transaction; resolves with its result once committed, rejects (rolled back) when fn throws. */
  transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * PostgreSQL only (absent on SQLite): runs one statement that may not run in a transaction (VACUUM) on a connection
   * of its own, opened for it and closed after, never one of the pool's; aborting `signal` cancels it on the server.
   * Resolves with the server's warnings.
   */
  runAlone?(sql: string, signal: AbortSignal): Promise<ServerWarning[]>;
  /** Applies this engine's numbered migrations not yet recorded, each with its record in one transaction. */
  migrate(): Promise<number[]>;
  close(): Promise<void>;
}

/**
 * A deadlock (PostgreSQL 40P01), a serialisation failure (40001), or a prepared statement's plan refused after a
 * migration (STORE_PLAN_CHANGED, ./pg-driver.ts: its driver has stopped preparing): the whole transaction was rolled
 * back, and the driver runs it again (./pg-driver.ts `transaction`). The store's group commit lets such an error out
 * of a write's savepoint so that the whole group is run again (./store.ts `flush`).
 */
export function isRetryableConflict(error: unknown): boolean {
  const e = error as { sqlstate?: string; code?: string } | null;
  return e?.sqlstate === '40P01' || e?.sqlstate === '40001' || e?.code === 'STORE_PLAN_CHANGED';
}
