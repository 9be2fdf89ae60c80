/**
 * The sandbox's SQLite database: opening it and applying the numbered migrations.
 *
 * Migrations are files `migrations/NNN-name.sql` next to this module, read at runtime (so the build must copy the
 * folder to `dist/sandbox/migrations/`). Numbers are owned by area: 001-009 core and charges, 010-019 idempotency,
 * faults, bill and Pix payments, QR codes, 020-029 claims and webhooks. Each migration runs in its own transaction
 * and is recorded in `migrations` (src/sqlite/migrations.ts applies them); a recorded migration is never run again, so
 * a file must never change once shipped.
 *
 * WAL with `synchronous = FULL`: the sandbox records money moving (payments, charges paid), and a restart must not
 * lose an effect the client was told about.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { applyMigrations, type Migration, type MigrationLedger, recordedMigrations } from '../sqlite/migrations.js';

export type SandboxDb = Database.Database;

const MIGRATIONS_DIR = new URL('./migrations/', import.meta.url);
const MIGRATION_FILE = /^(\d{3})-[\w-]+\.sql$/;

export type { Migration };

/** The sandbox's ledger of applied migrations. */
const LEDGER: MigrationLedger = { table: 'migrations', numberColumn: 'number' };

/** The migration files, in number order. Two files with the same number is a programming error. */
export function loadMigrations(dir: URL = MIGRATIONS_DIR): Migration[] {
  const path = fileURLToPath(dir);
  const out: Migration[] = [];
  for (const file of readdirSync(path).sort()) {
    const m = MIGRATION_FILE.exec(file);
    if (!m) continue;
    out.push({ number: Number(m[1]), name: file, sql: readFileSync(new URL(file, dir), 'utf8') });
  }
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.number === out[i - 1]!.number) {
      throw new Error(`Two sandbox migrations share number ${out[i]!.number}: ${out[i - 1]!.name} and ${out[i]!.name}`);
    }
  }
  return out;
}

/** Applies every migration not yet recorded; returns the names applied. */
export function migrate(db: SandboxDb, migrations: Migration[] = loadMigrations()): string[] {
  return applyMigrations(db, LEDGER, migrations, recordedMigrations(db, LEDGER)).map((m) => m.name);
}

/** Opens (creating if needed) the sandbox database: a file, or in memory when `file` is absent. */
export function openSandboxDb(file?: string): SandboxDb {
  const db = new Database(file ?? ':memory:');
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  migrate(db);
  return db;
}
