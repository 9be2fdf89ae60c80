/**
 * The settings of a daemon among several on one PostgreSQL store (issue 13 §1; src/store/daemon-name.ts,
 * src/runner/lock.ts `acquireDaemonNameLock`): `store.daemonName` (default: the host's name, checked) and
 * `store.leaseMs` (3000..600000), and one process per daemon name and store on a machine.
 */

import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../src/config.js';
import { instantIn } from '../src/i18n/index.js';
import { Metrics } from '../src/metrics.js';
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
  const daemon = { command: 'daemon', locale: 'pt-BR' } as const;
  it('refuses the same name on the same store, lets other names and other stores be', async () => {
    const store = `postgres://remessa@db:5432/test-${process.pid}-${Date.now()}`;
    const first = await acquireDaemonNameLock(store, 'alpha', daemon);
    try {
      const refused = await acquireDaemonNameLock(store, 'alpha', daemon).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(DataFolderLockedError);
      // Named by the daemon's name, not the lock's temp folder; no --wait-lock, which waits for a data folder only.
      expect((refused as Error).message).toBe(
        'Esperava ser o único processo com o nome de daemon "alpha" nesta máquina, mas outro o está usando: ' +
          `pid ${process.pid} na máquina ${JSON.stringify(os.hostname())}, comando ${JSON.stringify(first.holder.command)}, ` +
          `desde ${instantIn('pt-BR', first.holder.since)}. Pare-o antes, ou dê a este daemon outro store.daemonName no seu arquivo de configuração.`,
      );
      const other = await acquireDaemonNameLock(store, 'beta', daemon);
      const elsewhere = await acquireDaemonNameLock(`${store}-2`, 'alpha', daemon);
      await other.release();
      await elsewhere.release();
    } finally {
      await first.release();
    }
    // Released: taken again.
    const again = await acquireDaemonNameLock(store, 'alpha', daemon);
    await again.release();
  });
});

describe('metrics of the daemons sharing a store', () => {
  it('show the daemons alive and what each holds; nothing on a store without them', async () => {
    const none = await new Metrics().render();
    expect(none).toMatch(/^remessa_daemons_alive 0$/m);
    expect(none).not.toMatch(/^remessa_daemon_holds\{/m);
    const metrics = new Metrics();
    metrics.attach({
      daemonsSnapshot: async () => [
        { name: 'remessa-01', alive: true, rows: 12, files: 1, answers: 0 },
        { name: 'remessa-02', alive: false, rows: 3, files: 1, answers: 1 },
      ],
    });
    const text = await metrics.render();
    expect(text).toMatch(/^remessa_daemons_alive 1$/m);
    expect(text).toMatch(/^remessa_daemon_holds\{daemon="remessa-01",what="rows"\} 12$/m);
    expect(text).toMatch(/^remessa_daemon_holds\{daemon="remessa-02",what="answers"\} 1$/m);
  });
});
