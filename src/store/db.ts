/**
 * Opening remessa's SQLite database and bringing its schema up to date.
 *
 * What must hold:
 * - WAL journal, `synchronous = FULL` for the connection: every commit, and in particular every commit that records
 *   an intent to call the bank, is on disk before the call leaves. (WAL + FULL syncs the log at each commit.) The cost
 *   is one fsync per transaction, which is why writers group many rows per transaction, and why a group made only of
 *   steps' answers is committed with NORMAL (src/store/store.ts says why that is safe).
 * - Migrations are the numbered files `migrations/NNN-name.sql` next to this module (copied to `dist/` by the build),
 *   applied in number order, each in its own transaction together with its row in `schema_migrations`: a migration is
 *   either wholly applied and recorded, or not at all (src/sqlite/migrations.ts, shared with the sandbox, applies them).
 * - A database whose recorded migrations are unknown to this program (written by a newer version) is refused.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { RemessaError } from '../errors.js';
import { applyMigrations, type Migration, type MigrationLedger, recordedMigrations } from '../sqlite/migrations.js';
import { naturalKeyDigest } from './keys.js';

export type SqliteDatabase = Database.Database;

/** The store cannot be opened or its schema cannot be brought up to date. */
export class StoreError extends RemessaError {
  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(code, message, options);
  }
}

export interface OpenDatabaseOptions {
  /** Folder of `NNN-name.sql` files. @defaultValue `migrations/` next to this module */
  migrationsDir?: string;
  /** How long a statement waits for another process's lock, in milliseconds. @defaultValue 5000 */
  busyTimeoutMs?: number;
  /** Open read-only (for `remessa status`): no migrations are applied. @defaultValue false */
  readonly?: boolean;
}

export type { Migration };

/** The store's ledger of applied migrations. */
const LEDGER: MigrationLedger = { table: 'schema_migrations', numberColumn: 'version' };

const MIGRATION_FILE = /^(\d{3})-([a-z0-9-]+)\.sql$/;

/** The migrations in `dir`, in version order. Throws on a malformed name or a repeated number. */
export function readMigrations(dir: string): Migration[] {
  const out: Migration[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.sql')) continue;
    const m = MIGRATION_FILE.exec(file);
    if (!m) {
      throw new StoreError('STORE_MIGRATION_NAME', `Expected a migration named NNN-name.sql in ${dir}, got "${file}"`);
    }
    const number = Number(m[1]);
    if (out.some((x) => x.number === number)) {
      throw new StoreError('STORE_MIGRATION_NAME', `Migration number ${m[1]} is used twice in ${dir}`);
    }
    out.push({ number, name: m[2]!, sql: readFileSync(path.join(dir, file), 'utf8') });
  }
  return out;
}

/** Applies the migrations not yet recorded, each in its own transaction. Returns the versions applied. */
export function migrate(db: SqliteDatabase, migrations: readonly Migration[]): number[] {
  const applied = recordedMigrations(db, LEDGER);
  const known = new Set(migrations.map((m) => m.number));
  const unknown = [...applied].filter((v) => !known.has(v));
  if (unknown.length > 0) {
    throw new StoreError(
      'STORE_SCHEMA_TOO_NEW',
      `The database has migrations ${unknown.join(', ')} that this version of remessa does not know: it was written by a newer version`,
    );
  }
  return applyMigrations(db, LEDGER, migrations, applied).map((m) => m.number);
}

export const DEFAULT_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** Most distinct SQL texts a connection keeps prepared (the store has a few dozen; a few vary by state lists). */
export const STATEMENT_CACHE_SIZE = 256;

/**
 * Keeps the connection's prepared statements: better-sqlite3 compiles the SQL again on every `prepare`, and the store
 * prepares where it runs (several per row driven: a measurable share of `remessa run`, see docs/performance.md).
 * Same SQL text, same statement. Safe because a statement is reusable once it has run, and the store uses none of
 * `iterate` (holds a statement busy), `pluck`, `raw` or `expand` (change a shared statement's mode). `db.pragma`
 * does not go through `prepare`.
 */
function cacheStatements(db: SqliteDatabase): void {
  const prepare = db.prepare.bind(db);
  const cache = new Map<string, Database.Statement>();
  db.prepare = ((source: string) => {
    let statement = cache.get(source);
    if (statement === undefined) {
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
      statement = prepare(source);
      cache.set(source, statement);
    }
    return statement;
  }) as SqliteDatabase['prepare'];
}

/**
 * Opens (creating if needed) the database file and sets WAL + FULL sync, busy timeout, foreign keys and the statement
 * cache; applies no migration (src/store/sqlite-driver.ts does, in its `migrate`).
 */
export function openConnection(file: string, options: OpenDatabaseOptions = {}): SqliteDatabase {
  if (file !== ':memory:') mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
  let db: SqliteDatabase;
  try {
    db = new Database(file, { readonly: options.readonly ?? false, fileMustExist: options.readonly ?? false });
  } catch (cause) {
    throw new StoreError('STORE_OPEN_FAILED', `Cannot open the store ${file}: ${(cause as Error).message}`, { cause });
  }
  cacheStatements(db);
  // Migration 016's SQL computes natural keys' digests as the store does (src/store/keys.ts `naturalKeyDigest`).
  db.function('remessa_key_digest', { deterministic: true }, (kind, naturalKey) =>
    naturalKeyDigest(String(kind), String(naturalKey)),
  );
  try {
    db.pragma(`busy_timeout = ${Math.trunc(options.busyTimeoutMs ?? 5000)}`);
    if (!options.readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
      db.pragma('foreign_keys = ON');
    }
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

/** Opens (creating if needed) the database file, sets WAL + FULL sync, and applies pending migrations. */
export function openDatabase(file: string, options: OpenDatabaseOptions = {}): SqliteDatabase {
  const db = openConnection(file, options);
  try {
    if (!options.readonly) migrate(db, readMigrations(options.migrationsDir ?? DEFAULT_MIGRATIONS_DIR));
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}
