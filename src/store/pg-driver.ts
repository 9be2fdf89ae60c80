/**
 * The store's SQL driver for PostgreSQL (./sql.ts draws the contract), over a `pg.Pool`: several remessa daemons on
 * several machines sharing one store (issue 13).
 *
 * What must hold (the contract, as PostgreSQL keeps it):
 * - Placeholders: the store writes `?`; each is numbered `$1..$n` here, outside quoted strings ('...'), quoted
 *   identifiers ("...") and comments (`--`, `/* *\/`). The translation is cached per SQL text. A statement whose
 *   number of `?` differs from the number of values given is refused before it is sent (no NULL fills a gap).
 *   Not understood (and not in the store's subset): E'...' strings with backslash escapes, $$-quoted bodies.
 * - Integers come back as JS numbers: BIGINT (int8: COUNT, BIGINT columns) and NUMERIC (SUM of BIGINTs) are parsed
 *   here, per pool (never pg's process-wide parsers), and a value past Number.MAX_SAFE_INTEGER is an error
 *   (STORE_INTEGER_TOO_LARGE) instead of a rounded amount. A NUMERIC with a fraction comes back as a JS number, as
 *   SQLite's REAL does.
 * - Durability: every session runs with synchronous_commit = on (a startup option, whatever the server's default),
 *   so a commit is on the primary's disk before `transaction` resolves; `{ durable: false }` sets
 *   `SET LOCAL synchronous_commit = off` for that one transaction (it may then be lost in a crash of the server, never
 *   half-applied).
 * - Transactions: each takes a pooled connection of its own from BEGIN to COMMIT, so no other statement of this
 *   driver lands inside it. Its isolation is PostgreSQL's READ COMMITTED, unlike SQLite's one writer at a time:
 *   transactions run side by side, one sees another's commits between its statements, and a row written by one
 *   waits for the other's end. So the store's read-then-write of a value another transaction (or daemon) may change
 *   must lock what it reads (`FOR UPDATE`, which SQLite needs not) or write in one statement
 *   (`UPDATE ... SET n = n + 1`, `INSERT ... ON CONFLICT`).
 *   fn must not call the driver's own `all/get/run/transaction` while it runs (it would need a second connection
 *   and, on SQLite, wait forever): it uses the `tx` it is given.
 * - A transaction in which a statement failed is aborted by PostgreSQL, and its COMMIT silently rolls back: when fn
 *   caught such an error itself and returned, `transaction` rejects (STORE_TRANSACTION_ABORTED) rather than report a
 *   commit that did not happen. A savepoint undoes only its own writes and leaves the transaction usable.
 * - Errors are StoreError: STORE_SQL (with the SQLSTATE), STORE_CONNECT_FAILED, STORE_CONNECTION_LOST, ...; the
 *   password is never in a message (it is not in the URL, and every message is scrubbed of it besides).
 * - A COMMIT whose answer is lost (STORE_CONNECTION_LOST) may or may not have committed: `transaction` rejects, and
 *   its caller must not read the rejection as "nothing was written". For an intent that is harmless: the request is
 *   not sent by this call, and an intent that did get recorded is an unknown outcome, which the rules of
 *   ./rows.ts already settle after a restart.
 * - Prepared statements (`preparedStatements`, on by default): a statement with values, sent a second time, gets a
 *   name (`remessa_N`), and each connection has PostgreSQL parse and plan it once instead of at every execution (the
 *   store's statements are a few dozen texts run thousands of times a night: docs/performance.md (d) eighth pass).
 *   At most PREPARED_MAX texts get a name (the store builds some IN lists by their length); the others go unnamed, as
 *   every statement does with the setting off (a pooler in transaction mode that does not keep a session's prepared
 *   statements needs it off). A prepared statement whose result columns changed under it (a newer remessa migrated
 *   the database while this one ran: PostgreSQL refuses the cached plan) turns the naming off for good: a query
 *   outside a transaction is sent again unnamed, a transaction fails with STORE_PLAN_CHANGED, which the store runs
 *   again as it does a deadlock's victim (./sql.ts `isRetryableConflict`).
 * - `runAlone` (the store's own vacuums, ./vacuum.ts): a statement that may not run in a transaction, on a connection
 *   opened for it and closed after, never one of the pool's (a row's write never waits behind it); a cancel goes to
 *   the server (pg_cancel_backend through the pool), so a closing store never waits for the statement to end.
 * - Migrations (./migrations-pg/NNN-name.sql, the same numbers and names as SQLite's ./migrations/): applied in number
 *   order, each with its row in schema_migrations in one transaction that first takes a transaction-scoped advisory
 *   lock, so several daemons starting at once apply each migration exactly once (the others wait, then find it
 *   recorded). A database that records a migration this program does not know (a newer version wrote it) is refused
 *   (STORE_SCHEMA_TOO_NEW), as SQLite's is (./db.ts).
 */
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { readMigrations, StoreError } from './db.js';
import { describePgUrl, type PgTarget, parsePgUrl } from './pg-url.js';

export { describePgUrl, type PgTarget, parsePgUrl };

import {
  isRetryableConflict,
  type ServerWarning,
  type SqlDriver,
  type SqlParam,
  type SqlRunResult,
  type SqlTransaction,
  type TransactionOptions,
} from './sql.js';

export interface PgDriverOptions {
  /** `postgres://user@host:port/database` (no password: it is given apart). */
  url: string;
  /** The role's password (store.passwordFile or the systemd credential remessa-store-password). */
  password?: string | undefined;
  /** Most connections the pool opens. @defaultValue 10 */
  maxConnections?: number;
  /**
   * How long getting a connection may take, in milliseconds: opening one, or (pg-pool counts both) waiting for one of
   * the `maxConnections` to be free. Past it: STORE_CONNECT_FAILED. @defaultValue 10000
   */
  connectTimeoutMs?: number;
  /** Named prepared statements for the statements sent again (see the top). @defaultValue true */
  preparedStatements?: boolean;
  /** Folder of `NNN-name.sql` files. @defaultValue `migrations-pg/` next to this module */
  migrationsDir?: string;
  /**
   * Told of an error on an idle pooled connection (the server restarted, a network cut); the pool drops that
   * connection and the next statement opens another. @defaultValue ignore (the next statement's error tells)
   */
  onIdleError?: (error: StoreError) => void;
}

export const DEFAULT_PG_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations-pg/', import.meta.url));

/**
 * The advisory lock migrations take (one 64-bit key for every remessa store; another application sharing the
 * database would have to pick the same number to collide). "remessa" in ASCII.
 */
export const MIGRATION_LOCK_KEY = '32199614439289697';

/** Most SQL texts one driver gives a name (see the top): on each connection, at most that many prepared statements. */
export const PREPARED_MAX = 100;

/** PostgreSQL refuses a prepared statement's cached plan once its result columns changed (SQLSTATE 0A000). */
function isPlanChanged(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown } | null;
  return e?.code === '0A000' && typeof e.message === 'string' && e.message.includes('cached plan must not change');
}

/** Most distinct SQL texts whose translation is kept (the store has a few dozen; a few vary by state lists). */
const TRANSLATION_CACHE_SIZE = 256;

interface Translation {
  text: string;
  count: number;
}

const translations = new Map<string, Translation>();

/**
 * `?` -> `$1..$n` outside quoted strings, quoted identifiers and comments; the number of placeholders. Cached.
 * Exported for tests.
 */
export function translatePlaceholders(sql: string): Translation {
  const cached = translations.get(sql);
  if (cached) return cached;
  let out = '';
  let count = 0;
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      // A quoted string or identifier; a doubled quote inside is the quote itself.
      let j = i + 1;
      while (j < n) {
        if (sql[j] === c) {
          if (sql[j + 1] === c) j += 2;
          else break;
        } else j += 1;
      }
      out += sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' && sql[i + 1] === '-') {
      const end = sql.indexOf('\n', i);
      const j = end === -1 ? n : end;
      out += sql.slice(i, j);
      i = j;
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      const j = end === -1 ? n : end + 2;
      out += sql.slice(i, j);
      i = j;
    } else if (c === '?') {
      count += 1;
      out += `$${count}`;
      i += 1;
    } else {
      out += c;
      i += 1;
    }
  }
  const translation = { text: out, count };
  if (translations.size >= TRANSLATION_CACHE_SIZE) translations.clear();
  translations.set(sql, translation);
  return translation;
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** An integer's text as a JS number; past MAX_SAFE_INTEGER an error, never a rounded value. */
export function parseSafeInteger(text: string): number {
  const value = Number(text);
  if (!Number.isSafeInteger(value)) {
    throw new StoreError(
      'STORE_INTEGER_TOO_LARGE',
      `PostgreSQL returned the integer ${text}, past the largest a JS number holds exactly (${Number.MAX_SAFE_INTEGER}): refused rather than rounded`,
    );
  }
  return value;
}

function parseNumeric(text: string): number {
  return /^-?\d+$/.test(text) ? parseSafeInteger(text) : Number(text);
}

/** The pool's own parsers (pg's `types` option): pg's process-wide ones are left as they are. */
const TYPES: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') => {
    if (oid === INT8_OID) return parseSafeInteger;
    if (oid === NUMERIC_OID) return parseNumeric;
    return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
  }) as pg.CustomTypesConfig['getTypeParser'],
};

/** The PostgreSQL driver; connections are opened when first needed. */
export function openPgDriver(options: PgDriverOptions): PgDriver {
  return new PgDriver(options);
}

export class PgDriver implements SqlDriver {
  readonly dialect = 'postgres' as const;
  readonly #pool: pg.Pool;
  /** How the pool connects (its password included): for the connections `runAlone` opens of their own. */
  readonly #connection: pg.ClientConfig;
  readonly #password: string | undefined;
  readonly #where: string;
  readonly #migrationsDir: string;
  #closed = false;
  /** Whether statements sent again get a name (see the top); off for good once a cached plan was refused. */
  #prepare: boolean;
  /** SQL text (translated) -> its statement's name. */
  readonly #names = new Map<string, string>();
  /** Texts sent once, not named yet. */
  readonly #sentOnce = new Set<string>();

  constructor(options: PgDriverOptions) {
    const target = parsePgUrl(options.url);
    this.#password = options.password;
    this.#where = describePgUrl(options.url);
    this.#migrationsDir = options.migrationsDir ?? DEFAULT_PG_MIGRATIONS_DIR;
    this.#prepare = options.preparedStatements ?? true;
    this.#connection = {
      ...target,
      ...(options.password === undefined ? {} : { password: options.password }),
      connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
      application_name: 'remessa',
      // Whatever the server's or the role's default: a commit is flushed before it is acknowledged.
      options: '-c synchronous_commit=on',
      types: TYPES,
    };
    this.#pool = new pg.Pool({ ...this.#connection, max: options.maxConnections ?? 10 });
    this.#pool.on('error', (error) => options.onIdleError?.(this.#wrap(error)));
  }

  async all<T>(sql: string, params: readonly SqlParam[] = []): Promise<T[]> {
    return (await this.#query(this.#pool, sql, params)).rows as T[];
  }

  async get<T>(sql: string, params: readonly SqlParam[] = []): Promise<T | undefined> {
    return (await this.#query(this.#pool, sql, params)).rows[0] as T | undefined;
  }

  async run(sql: string, params: readonly SqlParam[] = []): Promise<SqlRunResult> {
    return { changes: (await this.#query(this.#pool, sql, params)).rowCount ?? 0 };
  }

  /**
   * Runs fn in one transaction (see the top). A transaction PostgreSQL chose as a deadlock's victim (40P01) or could
   * not serialise (40001) was rolled back whole: it is run again, fn included, up to TRANSACTION_RETRIES times with a
   * short random pause (several daemons writing one batch's counters lock in different orders; the store's
   * transactions are written to be run again: fn awaits nothing but its own statements).
   */
  async transaction<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions = {}): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#transactionOnce(fn, options);
      } catch (error) {
        if (!isRetryableConflict(error) || attempt >= TRANSACTION_RETRIES) throw error;
        this.conflictsRetried += 1;
        await new Promise((r) => setTimeout(r, Math.random() * 20 * attempt));
      }
    }
  }

  /** Transactions run again after a deadlock or a serialisation failure (tests, metrics). */
  conflictsRetried = 0;

  async #transactionOnce<T>(fn: (tx: SqlTransaction) => Promise<T>, options: TransactionOptions): Promise<T> {
    const client = await this.#connect();
    // A connection that dies while checked out emits 'error' on its client besides failing the statement in
    // progress; with no listener that event would end the process. The statement's own error is what tells.
    let lostWhileOpen: Error | undefined;
    const onClientError = (error: Error) => {
      lostWhileOpen = error;
    };
    client.on('error', onClientError);
    let open = true;
    let savepoints = 0;
    // A savepoint that succeeded is released by the next statement that begins a savepoint (one round trip for both,
    // in the simple protocol), by the RELEASE of the savepoint around it, or by COMMIT, which releases every
    // savepoint left: never one round trip of its own. Savepoints nest (LIFO), so the one waiting for its release is
    // always inside the savepoint that ends next: a rollback to that one destroys it, a release of it releases it.
    let toRelease: string | undefined;
    const use = (): pg.PoolClient => {
      if (!open)
        throw new StoreError('STORE_TRANSACTION_ENDED', 'A statement was given to a transaction that has ended');
      return client;
    };
    const tx: SqlTransaction = {
      all: async <R>(sql: string, params: readonly SqlParam[] = []) =>
        (await this.#query(use(), sql, params)).rows as R[],
      get: async <R>(sql: string, params: readonly SqlParam[] = []) =>
        (await this.#query(use(), sql, params)).rows[0] as R | undefined,
      run: async (sql: string, params: readonly SqlParam[] = []) => ({
        changes: (await this.#query(use(), sql, params)).rowCount ?? 0,
      }),
      savepoint: async <R>(inner: (t: SqlTransaction) => Promise<R>) => {
        savepoints += 1;
        const name = `remessa_sp${savepoints}`;
        const begin =
          toRelease === undefined ? `SAVEPOINT ${name}` : `RELEASE SAVEPOINT ${toRelease}; SAVEPOINT ${name}`;
        toRelease = undefined;
        await this.#query(use(), begin, [], { raw: true, label: begin });
        let result: R;
        try {
          result = await inner(tx);
        } catch (error) {
          toRelease = undefined; // inside this one: destroyed by the rollback to it
          const undo = `ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`;
          await this.#query(use(), undo, [], { raw: true, label: undo });
          throw error;
        }
        toRelease = name; // with any inside it
        return result;
      },
    };
    clientOf.set(tx, client);
    let broken: Error | undefined;
    try {
      // One round trip (the simple protocol takes both statements in one message).
      if (options.durable === false) {
        await this.#query(client, 'BEGIN; SET LOCAL synchronous_commit = off', [], { raw: true, label: 'BEGIN' });
      } else await this.#query(client, 'BEGIN', []);
      let result: T;
      try {
        result = await fn(tx);
      } catch (error) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackError) {
          broken = rollbackError as Error;
        }
        throw error;
      }
      const commit = await this.#query(client, 'COMMIT', []);
      // PostgreSQL answers COMMIT of an aborted transaction with ROLLBACK, not with an error.
      if (commit.command !== 'COMMIT') {
        throw new StoreError(
          'STORE_TRANSACTION_ABORTED',
          'The transaction was rolled back: a statement in it failed (and its error was caught), so PostgreSQL aborted it',
        );
      }
      return result;
    } catch (error) {
      // A BEGIN or COMMIT that failed on the wire leaves the connection in an unknown state: not reused.
      if (error instanceof StoreError && error.code === 'STORE_CONNECTION_LOST') broken = error;
      throw error;
    } finally {
      open = false;
      client.removeListener('error', onClientError);
      client.release(broken ?? lostWhileOpen);
    }
  }

  /**
   * Runs one statement that may not run in a transaction (the store's VACUUM: ./vacuum.ts) on a connection of its
   * own, opened for it (application_name `remessa maintenance`) and closed after: never one of the pool's, so a long
   * statement takes no connection from the rows' writes (one connection more than `maxConnections` while it runs).
   * Aborting `signal` cancels it on the server (pg_cancel_backend through the pool: the same role may) and closes the
   * connection; it then rejects. Resolves with the server's warnings; rejects with a StoreError without the password.
   */
  async runAlone(sql: string, signal: AbortSignal): Promise<ServerWarning[]> {
    if (this.#closed) throw new StoreError('STORE_CLOSED', `The store ${this.#where} is closed`);
    const client = new pg.Client({ ...this.#connection, application_name: 'remessa maintenance' });
    const warnings: ServerWarning[] = [];
    client.on('notice', (notice) => {
      if (notice.severity === 'WARNING') {
        warnings.push({ code: notice.code, message: this.#scrub(notice.message ?? 'a warning without text') });
      }
    });
    // An error on the connection also fails the statement under way, which is what tells; unheard, it would end the
    // process.
    client.on('error', () => undefined);
    let connected = false;
    const cancel = () => {
      // The backend's id, which pg keeps from the server's BackendKeyData (not in its types).
      const pid = (client as unknown as { processID: number | null }).processID;
      if (!connected || pid === null || this.#closed) return;
      this.#pool.query('SELECT pg_cancel_backend($1)', [pid]).catch(() => undefined);
    };
    signal.addEventListener('abort', cancel, { once: true });
    try {
      try {
        await client.connect();
      } catch (error) {
        throw this.#wrap(error, 'STORE_CONNECT_FAILED');
      }
      connected = true;
      if (signal.aborted) throw new StoreError('STORE_CLOSED', `The store ${this.#where} is closing`);
      try {
        await client.query(sql);
      } catch (error) {
        throw this.#wrap(error, undefined, excerptSql(sql));
      }
      return warnings;
    } finally {
      signal.removeEventListener('abort', cancel);
      await client.end().catch(() => undefined);
    }
  }

  async migrate(): Promise<number[]> {
    const migrations = readMigrations(this.#migrationsDir);
    const known = new Set(migrations.map((m) => m.number));
    const applied: number[] = [];
    // One transaction to create the ledger and check it, then one per migration; each under the lock, each reading
    // the ledger again (another daemon may have applied it while this one waited).
    const recorded = async (tx: SqlTransaction): Promise<Set<number>> => {
      await tx.get('SELECT pg_advisory_xact_lock(?::bigint) AS locked', [MIGRATION_LOCK_KEY]);
      await tx.run(`CREATE TABLE IF NOT EXISTS schema_migrations (
        version INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        applied_at TEXT NOT NULL
      )`);
      const rows = await tx.all<{ version: number }>('SELECT version FROM schema_migrations');
      const versions = new Set(rows.map((r) => r.version));
      const unknown = [...versions].filter((v) => !known.has(v)).sort((a, b) => a - b);
      if (unknown.length > 0) {
        throw new StoreError(
          'STORE_SCHEMA_TOO_NEW',
          `The database has migrations ${unknown.join(', ')} that this version of remessa does not know: it was written by a newer version`,
        );
      }
      return versions;
    };
    const before = await this.transaction(recorded);
    for (const m of migrations) {
      if (before.has(m.number)) continue;
      const done = await this.transaction(async (tx) => {
        if ((await recorded(tx)).has(m.number)) return false;
        // Several statements in one text: the simple protocol, no parameters.
        await this.#query(txClient(tx), m.sql, [], { raw: true, label: `migration ${m.number}-${m.name}` });
        await tx.run('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)', [
          m.number,
          m.name,
          new Date().toISOString(),
        ]);
        return true;
      });
      if (done) applied.push(m.number);
    }
    return applied;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }

  async #connect(): Promise<pg.PoolClient> {
    if (this.#closed) throw new StoreError('STORE_CLOSED', `The store ${this.#where} is closed`);
    try {
      return await this.#pool.connect();
    } catch (error) {
      throw this.#wrap(error, 'STORE_CONNECT_FAILED');
    }
  }

  async #query(
    on: pg.Pool | pg.PoolClient,
    sql: string,
    params: readonly SqlParam[],
    how: { raw?: boolean; label?: string } = {},
  ): Promise<pg.QueryResult> {
    if (this.#closed) throw new StoreError('STORE_CLOSED', `The store ${this.#where} is closed`);
    let text = sql;
    if (!how.raw) {
      const translation = translatePlaceholders(sql);
      if (translation.count !== params.length) {
        throw new StoreError(
          'STORE_SQL_PARAMS',
          `Expected ${translation.count} values for the placeholders of ${excerptSql(sql)}, got ${params.length}`,
        );
      }
      text = translation.text;
    }
    const name = how.raw || params.length === 0 ? undefined : this.#nameOf(text);
    try {
      if (how.raw) return await on.query(text);
      if (name === undefined) return await on.query(text, params as unknown[]);
      return await on.query({ name, text, values: params as unknown[] });
    } catch (error) {
      if (error instanceof StoreError) throw error;
      if (name !== undefined && isPlanChanged(error)) {
        this.#prepare = false;
        this.plansChanged += 1;
        if (on === this.#pool) return this.#query(on, sql, params, how);
        throw new StoreError(
          'STORE_PLAN_CHANGED',
          `PostgreSQL (${this.#where}): the columns of a prepared statement changed under it (the database was migrated by a newer remessa); run again without prepared statements`,
          { cause: error },
        );
      }
      throw this.#wrap(error, undefined, how.label ?? excerptSql(sql));
    }
  }

  /** Cached plans PostgreSQL refused (tests): the naming is then off. */
  plansChanged = 0;

  /** The name `text` is prepared under, once sent before; undefined: sent unnamed (see the top). */
  #nameOf(text: string): string | undefined {
    if (!this.#prepare) return undefined;
    const known = this.#names.get(text);
    if (known !== undefined || this.#names.size >= PREPARED_MAX) return known;
    if (!this.#sentOnce.has(text)) {
      if (this.#sentOnce.size >= TRANSLATION_CACHE_SIZE) this.#sentOnce.clear();
      this.#sentOnce.add(text);
      return undefined;
    }
    this.#sentOnce.delete(text);
    const name = `remessa_${this.#names.size + 1}`;
    this.#names.set(text, name);
    return name;
  }

  /** A StoreError for `error`, its message scrubbed of the password. */
  #wrap(error: unknown, code?: string, statement?: string): StoreError {
    const e = error as Error & { code?: string; detail?: string };
    const sqlstate = typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code) ? e.code : undefined;
    const finalCode = code ?? classify(sqlstate, e);
    const parts = [
      finalCode === 'STORE_CONNECT_FAILED'
        ? `Cannot connect to the store ${this.#where}`
        : `PostgreSQL (${this.#where})`,
      String(e.message ?? e),
    ];
    let message = parts.join(': ');
    if (sqlstate) message += ` (SQLSTATE ${sqlstate})`;
    if (statement) message += ` in ${statement}`;
    const scrubbed = this.#scrub(message);
    // The cause keeps pg's error minus anything that could carry the password (pg's errors never do, but a
    // connection string parser's might): a fresh Error with the scrubbed text and the SQLSTATE.
    const cause = Object.assign(new Error(this.#scrub(String(e.message ?? e))), sqlstate ? { code: sqlstate } : {});
    const wrapped = new StoreError(finalCode, scrubbed, { cause });
    return Object.assign(wrapped, { sqlstate });
  }

  #scrub(text: string): string {
    const password = this.#password;
    if (!password) return text;
    let out = text.split(password).join('***');
    const encoded = encodeURIComponent(password);
    if (encoded !== password) out = out.split(encoded).join('***');
    return out;
  }
}

/** How many times a transaction is tried when PostgreSQL rolls it back for a deadlock or a serialisation failure. */
export const TRANSACTION_RETRIES = 8;

/**
 * STORE_CONNECT_FAILED: the server could not be reached or refused us (SQLSTATE classes 08 connection, 28
 * authorization, 3D no such database, or a network error before any answer); STORE_CONNECTION_LOST: an open
 * connection died (the server shut down, the network cut it): a statement then has an unknown outcome; STORE_SQL:
 * the server refused the statement.
 */
function classify(sqlstate: string | undefined, error: Error & { code?: string }): string {
  if (sqlstate) {
    if (/^(08|28|3D)/.test(sqlstate)) return 'STORE_CONNECT_FAILED';
    if (/^57P0[123]$/.test(sqlstate)) return 'STORE_CONNECTION_LOST';
    return 'STORE_SQL';
  }
  if (/Connection terminated|ECONNRESET|EPIPE|not queryable|connection.*(closed|ended)/i.test(error.message ?? '')) {
    return 'STORE_CONNECTION_LOST';
  }
  return error.code ? 'STORE_CONNECT_FAILED' : 'STORE_SQL';
}

/** The pooled connection behind a transaction object made by PgDriver (for the simple-protocol migration text). */
const clientOf = new WeakMap<SqlTransaction, pg.PoolClient>();
function txClient(tx: SqlTransaction): pg.PoolClient {
  const client = clientOf.get(tx);
  if (!client) throw new StoreError('STORE_INTERNAL', 'Not a transaction of this PostgreSQL driver');
  return client;
}

/** The statement as an error may quote it: one line, at most 120 characters (never the values). */
function excerptSql(sql: string): string {
  const line = sql.replace(/\s+/g, ' ').trim();
  return `"${line.length > 120 ? `${line.slice(0, 117)}...` : line}"`;
}
