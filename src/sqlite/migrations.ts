/**
 * Applying numbered SQL migrations to a better-sqlite3 database: shared by remessa's store (src/store/db.ts) and the
 * sandbox (src/sandbox/db.ts), which keep their own files, their own rules for file names and their own ledger table.
 *
 * What must hold: each migration runs in its own transaction together with its row in the ledger table, so that it
 * is either wholly applied and recorded or not at all; a recorded migration is never run again.
 * This module imports neither side (the sandbox must not depend on the pipeline, nor the pipeline on the sandbox).
 */
import type Database from 'better-sqlite3';

export interface Migration {
  /** The file's NNN. */
  number: number;
  /** What the ledger records as its name. */
  name: string;
  sql: string;
}

/** Where a database records its applied migrations: `table (numberColumn INTEGER PRIMARY KEY, name, applied_at)`. */
export interface MigrationLedger {
  /** A fixed identifier (never user input: it is written into the SQL). */
  table: string;
  /** A fixed identifier: the column of the migration's number. */
  numberColumn: string;
}

/** Creates the ledger table when missing; returns the numbers it records as applied. */
export function recordedMigrations(db: Database.Database, ledger: MigrationLedger): Set<number> {
  db.exec(`CREATE TABLE IF NOT EXISTS ${ledger.table} (
    ${ledger.numberColumn} INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`);
  const rows = db.prepare(`SELECT ${ledger.numberColumn} AS n FROM ${ledger.table}`).all() as Array<{ n: number }>;
  return new Set(rows.map((r) => r.n));
}

/**
 * Applies, in the order given, every migration whose number is not in `recorded`, each with its ledger row in one
 * transaction. Returns the migrations applied. A failing one throws, leaving it (and those after it) unapplied.
 */
export function applyMigrations(
  db: Database.Database,
  ledger: MigrationLedger,
  migrations: readonly Migration[],
  recorded: ReadonlySet<number>,
): Migration[] {
  const record = db.prepare(`INSERT INTO ${ledger.table} (${ledger.numberColumn}, name, applied_at) VALUES (?, ?, ?)`);
  const done: Migration[] = [];
  for (const m of migrations) {
    if (recorded.has(m.number)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      record.run(m.number, m.name, new Date().toISOString());
    })();
    done.push(m);
  }
  return done;
}
