/**
 * The sandbox core under the charges routes: migrations, body parsing, problem bodies, events and the ledger.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClock } from '../src/sandbox/clock.js';
import { loadMigrations, migrate, openSandboxDb } from '../src/sandbox/db.js';
import { createEventLog, type SandboxEvent } from '../src/sandbox/events.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'remessa-sandbox-core-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('migrations', () => {
  it('applies each numbered file once, in a transaction, and records it', () => {
    const mk = (name: string, sql: string) => {
      writeFileSync(join(dir, name), sql);
    };
    mk('001-a.sql', 'CREATE TABLE a (x INTEGER);');
    mk('002-b.sql', 'CREATE TABLE b (x INTEGER);');
    mk('notes.txt', 'not a migration');
    const url = pathToFileURL(`${dir}/`);
    const db = new Database(':memory:');
    expect(migrate(db, loadMigrations(url))).toEqual(['001-a.sql', '002-b.sql']);
    expect(migrate(db, loadMigrations(url))).toEqual([]);
    // A failing migration leaves nothing behind and is not recorded.
    mk('003-bad.sql', 'CREATE TABLE c (x INTEGER); THIS IS NOT SQL;');
    expect(() => migrate(db, loadMigrations(url))).toThrow();
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 'c'").get()).toBeUndefined();
    expect((db.prepare('SELECT COUNT(*) AS n FROM migrations').get() as { n: number }).n).toBe(2);
    mk('003-bad.sql', 'CREATE TABLE c (x INTEGER);');
    mk('003-twin.sql', 'CREATE TABLE d (x INTEGER);');
    expect(() => loadMigrations(url)).toThrow(/share number 3/);
    db.close();
  });

  it('opens a file database in WAL mode with synchronous FULL, with every sandbox migration', () => {
    const db = openSandboxDb(join(dir, 's.db'));
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.pragma('synchronous', { simple: true })).toBe(2);
    const names = (db.prepare('SELECT name FROM migrations ORDER BY number').all() as Array<{ name: string }>).map(
      (r) => r.name,
    );
    expect(names.slice(0, 2)).toEqual(['001-core.sql', '002-charges.sql']);
    db.close();
  });
});

describe('events', () => {
  it('announces an event after its transaction commits, never one that rolled back; ids are stable', async () => {
    const db = openSandboxDb();
    const log = createEventLog(
      db,
      createClock(() => new Date('2026-11-22T00:00:00.000Z')),
    );
    const seen: SandboxEvent[] = [];
    log.onRecorded((e) => seen.push(e));
    const kept = db.transaction(() => log.record('CHARGE_PAID', { correlationId: 'a' }))();
    expect(() =>
      db.transaction(() => {
        log.record('CHARGE_PAID', { correlationId: 'b' });
        throw new Error('roll back');
      })(),
    ).toThrow('roll back');
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen.map((e) => e.payload.correlationId)).toEqual(['a']);
    expect(log.get(kept.id)).toEqual(kept);
    expect(log.list()).toEqual([kept]);
    expect(kept.occurredAt).toBe('2026-11-22T00:00:00.000Z');
    db.close();
  });
});

describe('HTTP core', () => {
  let sandbox: RunningSandbox;
  beforeEach(async () => {
    sandbox = await startSandbox();
  });
  afterEach(async () => {
    await sandbox.close();
  });

  const send = async (method: string, path: string, body?: string, contentType?: string) => {
    const res = await fetch(sandbox.url + path, {
      method,
      headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
    });
    return { status: res.status, json: (await res.json()) as Record<string, unknown> };
  };

  it('an unknown route is the 404 problem', async () => {
    const r = await send('GET', '/v9/nothing');
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({ title: 'Not Found', status: 404 });
  });

  it('reads JSON sent as application/json, +json and JSON-looking text/plain; refuses other media types with 415', async () => {
    const body = JSON.stringify({ type: 'PIX_STATIC', correlationId: 'ct-1', amount: 1 });
    expect((await send('POST', '/v1/charges', body, 'application/json; charset=utf-8')).status).toBe(200);
    expect(
      (await send('POST', '/v1/charges', body.replace('ct-1', 'ct-2'), 'application/merge-patch+json')).status,
    ).toBe(200);
    expect((await send('POST', '/v1/charges', body.replace('ct-1', 'ct-3'), 'text/plain')).status).toBe(200);
    const xml = await send('POST', '/v1/charges', '<charge/>', 'application/xml');
    expect(xml.status).toBe(415);
    expect(xml.json).toMatchObject({ status: 415 });
  });

  it('the effects ledger counts per kind and key', async () => {
    const json = 'application/json';
    await send('POST', '/v1/charges', JSON.stringify({ type: 'PIX_STATIC', correlationId: 'l-1', amount: 1 }), json);
    await send('POST', '/v1/charges/l-1/pay');
    await send('POST', '/v1/charges/l-1/pay');
    const r = await fetch(`${sandbox.url}/__sandbox/effects?key=l-1`, {
      headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY },
    });
    expect(await r.json()).toEqual([
      { kind: 'charge_created', key: 'l-1', count: 1 },
      { kind: 'charge_paid', key: 'l-1', count: 1 },
    ]);
  });
});
