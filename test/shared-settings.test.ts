/**
 * The settings of a daemon among several on one PostgreSQL store (issue 13 §1; src/store/daemon-name.ts,
 * src/runner/lock.ts `acquireDaemonNameLock`): `store.daemonName` (default: the host's name, checked) and
 * `store.leaseMs` (3000..600000), and one process per daemon name and store on a machine.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../src/config.js';
import { acquireDaemonNameLock, DataFolderLockedError } from '../src/runner/lock.js';
import { defaultDaemonName } from '../src/store/daemon-name.js';

describe('store.daemonName and store.leaseMs', () => {
  it('default to the host name and 30 s', () => {
    const config = buildConfig({}, { cwd: os.tmpdir(), env: {} });
    expect(config.store.daemonName).toBe(defaultDaemonName(os.hostname()));
    expect(config.store.leaseMs).toBe(30_000);
  });

  it('make a host name a valid daemon name', () => {
    expect(defaultDaemonName('db-01.example.internal')).toBe('db-01.example.internal');
    expect(defaultDaemonName('_weird host!')).toBe('weird-host-');
    expect(defaultDaemonName('---')).toBe('remessa');
    expect(defaultDaemonName('x'.repeat(80))).toHaveLength(63);
  });

  it('refuse a name that is not one, and a lease out of 3000..600000', () => {
    const build = (store: Record<string, unknown>) => () => buildConfig({ store }, { cwd: os.tmpdir(), env: {} });
    expect(build({ daemonName: 'remessa-02' })).not.toThrow();
    expect(build({ daemonName: 'two words' })).toThrow(/daemonName/);
    expect(build({ daemonName: '.hidden' })).toThrow(/daemonName/);
    expect(build({ leaseMs: 2999 })).toThrow(/leaseMs/);
    expect(build({ leaseMs: 600_001 })).toThrow(/leaseMs/);
    expect(build({ leaseMs: 3000 })).not.toThrow();
  });
});

describe('one process per daemon name and store on a machine', () => {
  it('refuses the same name on the same store, lets other names and other stores be', async () => {
    const store = `postgres://remessa@db:5432/test-${process.pid}-${Date.now()}`;
    const first = await acquireDaemonNameLock(store, 'alpha');
    try {
      await expect(acquireDaemonNameLock(store, 'alpha')).rejects.toBeInstanceOf(DataFolderLockedError);
      const other = await acquireDaemonNameLock(store, 'beta');
      const elsewhere = await acquireDaemonNameLock(`${store}-2`, 'alpha');
      await other.release();
      await elsewhere.release();
    } finally {
      await first.release();
    }
    // Released: taken again.
    const again = await acquireDaemonNameLock(store, 'alpha');
    await again.release();
  });
});
