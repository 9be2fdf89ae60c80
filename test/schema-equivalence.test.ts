/**
 * The two engines' migrations make the same schema (issue 13): after src/store/migrations (SQLite) and
 * src/store/migrations-pg (PostgreSQL), the same tables; in each the same columns in the same order with the same
 * nullability and a matching type family; the same primary keys, unique constraints, foreign keys and indexes
 * (name, columns, uniqueness, and what a partial index's condition names); the same generated columns, computed from
 * what the same expression names. Read from sqlite_master / pragmas and from pg_catalog, never from the SQL files, so a
 * translation that drifts fails here.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/db.js';
import { openPgDriver } from '../src/store/pg-driver.js';
import type { SqlDriver } from '../src/store/sql.js';
import { skipPostgres, useTestCluster } from './helpers/postgres.js';

interface Column {
  name: string;
  notNull: boolean;
  /** integer | text | real | blob */
  family: string;
  /** What a generated column's expression names (read as a partial index's condition); null if not generated. */
  generated: string[] | null;
}

interface Index {
  name: string;
  columns: string[];
  unique: boolean;
  /** Column names, string literals and numbers the partial index's WHERE names; null for a full index. */
  where: string[] | null;
}

interface Table {
  columns: Column[];
  primaryKey: string[];
  /** Each unique constraint's columns (declared UNIQUE, not indexes made by CREATE UNIQUE INDEX). */
  unique: string[][];
  /** "col,col -> table(col,col)" */
  foreignKeys: string[];
  indexes: Index[];
}

type Schema = Record<string, Table>;

/**
 * What a partial index's condition names: the table's columns, string literals and integers, sorted. PostgreSQL
 * rewrites `state IN ('a', 'b')` as `state = ANY (ARRAY['a'::text, 'b'::text])`; both name state, 'a' and 'b'.
 */
function conditionTerms(where: string, columns: readonly string[]): string[] {
  const terms = new Set<string>();
  for (const m of where.matchAll(/'((?:[^']|'')*)'|\b([A-Za-z_][A-Za-z0-9_]*)\b|\b(\d+)\b/g)) {
    if (m[1] !== undefined) terms.add(`'${m[1]}'`);
    else if (m[2] !== undefined && columns.includes(m[2])) terms.add(m[2]);
    else if (m[3] !== undefined) terms.add(m[3]);
  }
  return [...terms].sort();
}

function family(declared: string): string {
  const t = declared.toUpperCase();
  if (/INT/.test(t)) return 'integer';
  if (/CHAR|TEXT|CLOB/.test(t)) return 'text';
  if (/REAL|FLOA|DOUB|NUMERIC|DECIMAL/.test(t)) return 'real';
  if (/BLOB|BYTEA/.test(t)) return 'blob';
  return `other:${t}`;
}

const sortIndexes = (indexes: Index[]) => indexes.sort((a, b) => a.name.localeCompare(b.name));
const sortLists = (lists: string[][]) => lists.sort((a, b) => a.join(',').localeCompare(b.join(',')));

function sqliteSchema(file: string): Schema {
  const db = openDatabase(file);
  try {
    const schema: Schema = {};
    const tables = db
      .prepare("SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
      .all() as Array<{ name: string; sql: string }>;
    for (const { name, sql } of tables) {
      // table_xinfo: table_info with the generated columns (hidden 2: virtual, 3: stored).
      const info = db.prepare(`PRAGMA table_xinfo(${JSON.stringify(name)})`).all() as Array<{
        name: string;
        type: string;
        notnull: number;
        pk: number;
        hidden: number;
      }>;
      const primaryKey = info
        .filter((c) => c.pk > 0)
        .sort((a, b) => a.pk - b.pk)
        .map((c) => c.name);
      // A primary key column never holds NULL in the store (PostgreSQL enforces it; SQLite does for INTEGER PRIMARY
      // KEY and WITHOUT ROWID tables, and the store never writes a NULL key into the others): counted NOT NULL.
      const names = info.map((c) => c.name);
      const columns = info.map((c) => {
        let generated: string[] | null = null;
        if (c.hidden === 2 || c.hidden === 3) {
          const expression = new RegExp(
            `\\b${c.name}\\s+\\w+\\s+GENERATED ALWAYS AS\\s*\\(([\\s\\S]*?)\\)\\s*(?:VIRTUAL|STORED)`,
            'i',
          ).exec(sql)?.[1];
          if (expression === undefined) throw new Error(`${name}.${c.name}: no expression found in ${sql}`);
          generated = conditionTerms(expression, names);
        }
        return { name: c.name, notNull: c.notnull === 1 || c.pk > 0, family: family(c.type), generated };
      });
      const indexList = db.prepare(`PRAGMA index_list(${JSON.stringify(name)})`).all() as Array<{
        name: string;
        unique: number;
        origin: 'c' | 'u' | 'pk';
        partial: number;
      }>;
      const indexColumns = (index: string) =>
        (db.prepare(`PRAGMA index_info(${JSON.stringify(index)})`).all() as Array<{ seqno: number; name: string }>)
          .sort((a, b) => a.seqno - b.seqno)
          .map((c) => c.name);
      const unique = sortLists(indexList.filter((i) => i.origin === 'u').map((i) => indexColumns(i.name)));
      const indexes = sortIndexes(
        indexList
          .filter((i) => i.origin === 'c')
          .map((i) => {
            const sql = (
              db.prepare("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?").get(i.name) as {
                sql: string;
              }
            ).sql;
            const where = /\bWHERE\b([\s\S]*)$/i.exec(sql)?.[1];
            return {
              name: i.name,
              columns: indexColumns(i.name),
              unique: i.unique === 1,
              where:
                where === undefined
                  ? null
                  : conditionTerms(
                      where,
                      columns.map((c) => c.name),
                    ),
            };
          }),
      );
      const fkRows = db.prepare(`PRAGMA foreign_key_list(${JSON.stringify(name)})`).all() as Array<{
        id: number;
        seq: number;
        table: string;
        from: string;
        to: string | null;
      }>;
      const fks = new Map<number, { from: string[]; table: string; to: string[] }>();
      for (const r of fkRows.sort((a, b) => a.id - b.id || a.seq - b.seq)) {
        const fk = fks.get(r.id) ?? { from: [], table: r.table, to: [] };
        fk.from.push(r.from);
        // `REFERENCES t` without columns means t's primary key.
        fk.to.push(r.to ?? '(pk)');
        fks.set(r.id, fk);
      }
      const foreignKeys = [...fks.values()]
        .map((fk) => `${fk.from.join(',')} -> ${fk.table}(${fk.to.join(',')})`)
        .sort();
      schema[name] = { columns, primaryKey, unique, foreignKeys, indexes };
    }
    return schema;
  } finally {
    db.close();
  }
}

async function postgresSchema(driver: SqlDriver): Promise<Schema> {
  const schema: Schema = {};
  const tables = await driver.all<{ name: string }>(
    "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1",
  );
  for (const { name } of tables) {
    const info = await driver.all<{ name: string; nullable: string; type: string; generated: string | null }>(
      `SELECT column_name AS name, is_nullable AS nullable, data_type AS type, generation_expression AS generated
       FROM information_schema.columns
       WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position`,
      [name],
    );
    const names = info.map((c) => c.name);
    const columns = info.map((c) => ({
      name: c.name,
      notNull: c.nullable === 'NO',
      family: family(c.type),
      generated: c.generated === null ? null : conditionTerms(c.generated, names),
    }));
    const constraints = await driver.all<{
      type: string;
      columns: string;
      ref_table: string | null;
      ref_columns: string | null;
    }>(
      `SELECT c.contype::text AS type,
              (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(c.conkey) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum) AS columns,
              c.confrelid::regclass::text AS ref_table,
              (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(c.confkey) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.attnum) AS ref_columns
       FROM pg_constraint c WHERE c.conrelid = ?::regclass AND c.contype IN ('p', 'u', 'f')`,
      [name],
    );
    const primaryKey = constraints.find((c) => c.type === 'p')?.columns.split(',') ?? [];
    const unique = sortLists(constraints.filter((c) => c.type === 'u').map((c) => c.columns.split(',')));
    const foreignKeys = constraints
      .filter((c) => c.type === 'f')
      .map((c) => {
        // SQLite's `REFERENCES t` (no columns) is t's primary key; compare as SQLite lists it when the SQL named none.
        return `${c.columns} -> ${c.ref_table}(${c.ref_columns})`;
      })
      .sort();
    const indexRows = await driver.all<{ name: string; unique: number; columns: string; where: string | null }>(
      `SELECT i.relname AS name, x.indisunique::int AS unique,
              (SELECT string_agg(a.attname, ',' ORDER BY k.ord) FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
                 JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum) AS columns,
              pg_get_expr(x.indpred, x.indrelid) AS where
       FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid
       WHERE x.indrelid = ?::regclass
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid)`,
      [name],
    );
    const indexes = sortIndexes(
      indexRows.map((r) => ({
        name: r.name,
        columns: r.columns.split(','),
        unique: r.unique === 1,
        where:
          r.where === null
            ? null
            : conditionTerms(
                r.where,
                columns.map((c) => c.name),
              ),
      })),
    );
    schema[name] = { columns, primaryKey, unique, foreignKeys, indexes };
  }
  return schema;
}

/** SQLite's `REFERENCES t` names no column: read it as t's primary key, as both engines do. */
function resolveReferences(schema: Schema): Schema {
  for (const table of Object.values(schema)) {
    table.foreignKeys = table.foreignKeys
      .map((fk) => {
        const m = /^(.*) -> (.*)\((.*)\)$/.exec(fk)!;
        const to = m[3]!.split(',').some((c) => c === '(pk)') ? schema[m[2]!]!.primaryKey.join(',') : m[3];
        return `${m[1]} -> ${m[2]}(${to})`;
      })
      .sort();
  }
  return schema;
}

describe.skipIf(skipPostgres)('schema equivalence: SQLite and PostgreSQL migrations', () => {
  const cluster = useTestCluster();
  let sqlite: Schema;
  let postgresOnce: Promise<Schema> | undefined;
  /** PostgreSQL's schema after its migrations, read once (a test fails here when the cluster did not start). */
  const postgresSchemaOnce = () => {
    postgresOnce ??= (async () => {
      const { url } = await cluster().createDatabase();
      const driver = openPgDriver({ url, password: cluster().password });
      try {
        await driver.migrate();
        return await postgresSchema(driver);
      } finally {
        await driver.close();
      }
    })();
    return postgresOnce;
  };

  beforeAll(() => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-schema-'));
    try {
      sqlite = resolveReferences(sqliteSchema(path.join(dir, 'store.sqlite')));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('has the same migration files, by number and name', () => {
    const names = (dir: string) =>
      readdirSync(path.resolve(import.meta.dirname, '../src/store', dir))
        .filter((f) => f.endsWith('.sql'))
        .sort();
    expect(names('migrations-pg')).toEqual(names('migrations'));
  });

  it('has the same tables', async () => {
    const postgres = await postgresSchemaOnce();
    expect(Object.keys(postgres).sort()).toEqual(Object.keys(sqlite).sort());
    // The comparison below is not vacuous.
    expect(Object.keys(sqlite)).toContain('rows');
    expect(Object.keys(sqlite).length).toBeGreaterThanOrEqual(14);
  });

  it('has, in every table, the same columns, keys, constraints and indexes', async () => {
    const postgres = await postgresSchemaOnce();
    for (const name of Object.keys(sqlite)) {
      expect({ table: name, ...postgres[name] }).toEqual({ table: name, ...sqlite[name] });
    }
  });
});
