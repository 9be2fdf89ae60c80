import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteDriver, type SqliteDriver } from '../src/store/sqlite-driver.js';

let dir: string;
let driver: SqliteDriver;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-driver-'));
  driver = openSqliteDriver(path.join(dir, 'state.sqlite'));
  await driver.migrate();
  await driver.run('CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)');
});
afterEach(async () => {
  await driver.close();
  rmSync(dir, { recursive: true, force: true });
});

const count = async () => (await driver.get<{ n: number }>('SELECT COUNT(*) AS n FROM t'))!.n;

describe('the SQLite driver', () => {
  it('opens as the store needs: WAL, synchronous FULL, foreign keys, migrations recorded once', async () => {
    expect(driver.database.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(driver.database.pragma('synchronous', { simple: true })).toBe(2);
    expect(driver.database.pragma('foreign_keys', { simple: true })).toBe(1);
    const versions = await driver.all<{ version: number }>('SELECT version FROM schema_migrations');
    expect(versions.length).toBeGreaterThan(0);
    expect(await driver.migrate()).toEqual([]);
  });

  it('runs statements with ? placeholders, ON CONFLICT and RETURNING', async () => {
    expect(await driver.run('INSERT INTO t (k, v) VALUES (?, ?)', ['a', 1])).toEqual({ changes: 1 });
    expect(await driver.run('INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO NOTHING', ['a', 2])).toEqual({
      changes: 0,
    });
    const back = await driver.all<{ k: string; v: number }>(
      'INSERT INTO t (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = t.v + excluded.v RETURNING k, v',
      ['a', 5],
    );
    expect(back).toEqual([{ k: 'a', v: 6 }]);
    expect(await driver.get('SELECT v FROM t WHERE k = ?', ['none'])).toBeUndefined();
  });

  it('commits a transaction, and rolls it back whole when fn throws', async () => {
    expect(
      await driver.transaction(async (tx) => (await tx.run('INSERT INTO t VALUES (?, ?)', ['a', 1])).changes),
    ).toBe(1);
    await expect(
      driver.transaction(async (tx) => {
        await tx.run('INSERT INTO t VALUES (?, ?)', ['b', 1]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect(await count()).toBe(1);
    expect(driver.database.inTransaction).toBe(false);
  });

  it('queues every other call behind an open transaction: nothing lands inside it', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const order: string[] = [];
    const tx = driver.transaction(async (t) => {
      await t.run('INSERT INTO t VALUES (?, ?)', ['in-tx', 1]);
      order.push('tx wrote');
      await gate; // (a test only: a real fn awaits nothing but its own calls)
      throw new Error('rolled back');
    });
    // Issued while the transaction is open: must wait, then run on its own (not be rolled back with it).
    const outside = driver.run('INSERT INTO t VALUES (?, ?)', ['outside', 2]).then(() => order.push('outside ran'));
    const read = driver.get<{ n: number }>('SELECT COUNT(*) AS n FROM t').then((r) => {
      order.push(`read ${r!.n}`);
    });
    const second = driver.transaction(async (t) => {
      order.push('second began');
      await t.run('INSERT INTO t VALUES (?, ?)', ['second', 3]);
    });
    await new Promise((r) => setTimeout(r, 20));
    expect(order).toEqual(['tx wrote']);
    release();
    await expect(tx).rejects.toThrow('rolled back');
    await Promise.all([outside, read, second]);
    // The read ran after the write issued before it and before the second transaction: it saw one row.
    expect(order.slice(0, 2)).toEqual(['tx wrote', 'outside ran']);
    expect(order.slice(2).sort()).toEqual(['read 1', 'second began']);
    const keys = (await driver.all<{ k: string }>('SELECT k FROM t ORDER BY k')).map((r) => r.k);
    expect(keys).toEqual(['outside', 'second']);
  });

  it('a savepoint undoes only its own writes, nests, and rethrows', async () => {
    const result = await driver.transaction(async (tx) => {
      await tx.run('INSERT INTO t VALUES (?, ?)', ['kept', 1]);
      await expect(
        tx.savepoint(async (sp) => {
          await sp.run('INSERT INTO t VALUES (?, ?)', ['undone', 2]);
          throw new Error('inner');
        }),
      ).rejects.toThrow('inner');
      return tx.savepoint(async (sp) => {
        await sp.run('INSERT INTO t VALUES (?, ?)', ['outer-sp', 3]);
        await expect(
          sp.savepoint(async (inner) => {
            await inner.run('INSERT INTO t VALUES (?, ?)', ['inner-sp', 4]);
            throw new Error('nested');
          }),
        ).rejects.toThrow('nested');
        await sp.savepoint(async (inner) => inner.run('INSERT INTO t VALUES (?, ?)', ['inner-kept', 5]));
        return 'ok';
      });
    });
    expect(result).toBe('ok');
    const keys = (await driver.all<{ k: string }>('SELECT k FROM t ORDER BY k')).map((r) => r.k);
    expect(keys).toEqual(['inner-kept', 'kept', 'outer-sp']);
  });

  it('refuses a statement on a transaction that has ended (it would run outside it)', async () => {
    let leaked: import('../src/store/sql.js').SqlTransaction | undefined;
    await driver.transaction(async (tx) => {
      leaked = tx;
    });
    await expect(leaked!.run('INSERT INTO t VALUES (?, ?)', ['late', 1])).rejects.toMatchObject({
      code: 'STORE_TX_ENDED',
    });
    expect(await count()).toBe(0);
  });

  it('durable:false commits that one transaction with synchronous NORMAL, then FULL again', async () => {
    const level = () => driver.database.pragma('synchronous', { simple: true }) as number;
    const seen: number[] = [];
    await driver.transaction(
      async (tx) => {
        seen.push(level());
        await tx.run('INSERT INTO t VALUES (?, ?)', ['a', 1]);
      },
      { durable: false },
    );
    await driver.transaction(async (tx) => {
      seen.push(level());
      await tx.run('INSERT INTO t VALUES (?, ?)', ['b', 1]);
    });
    expect(seen).toEqual([1, 2]);
    expect(level()).toBe(2);
  });

  it('takes the write lock at BEGIN: a second connection cannot write while a transaction is open', async () => {
    const other = openSqliteDriver(path.join(dir, 'state.sqlite'), { busyTimeoutMs: 0 });
    try {
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      const tx = driver.transaction(async () => {
        await gate; // holds the write lock with nothing written yet
      });
      await new Promise((r) => setTimeout(r, 5));
      await expect(other.run('INSERT INTO t VALUES (?, ?)', ['x', 1])).rejects.toThrow(/locked|busy/i);
      release();
      await tx;
      await other.run('INSERT INTO t VALUES (?, ?)', ['x', 1]);
      expect(await count()).toBe(1);
    } finally {
      await other.close();
    }
  });

  it('close waits for the transaction under way', async () => {
    const tx = driver.transaction(async (t) => {
      await Promise.resolve();
      await t.run('INSERT INTO t VALUES (?, ?)', ['a', 1]);
    });
    const closed = driver.close();
    await tx;
    await closed;
    expect(driver.isOpen).toBe(false);
    await expect(driver.get('SELECT 1')).rejects.toMatchObject({ code: 'STORE_CLOSED' });
    // reopen so that afterEach can close it again
    driver = openSqliteDriver(path.join(dir, 'state.sqlite'));
  });
});
