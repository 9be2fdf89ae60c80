/**
 * N daemons sharing one PostgreSQL store and one inbox (issue 13 §1, docs/postgres.md): the workspaces and the
 * processes. Each daemon has its own data folder and config (its `store.daemonName`), all the same inbox, outbox and
 * archive, the same database and the same bank. `writeDaemonConfigs` is the one place that writes those configs: the
 * e2e test of the shared store (test/e2e-shared-store.test.ts, `makeSharedWorkspaces`) and the crash suite's fleet
 * (./multi.ts `startFleet`) both build on it.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { makeWorkspace, type Proc, startDaemon, type Workspace } from '../e2e-harness.js';

export interface SharedStoreOptions {
  /** The PostgreSQL database (a URL without the password) and the password. */
  url: string;
  password: string;
  /** `store.leaseMs` of every daemon. @defaultValue 3000 (the least allowed: a dead daemon is noticed soon) */
  leaseMs?: number;
  /** Passed to makeWorkspace (intake, queue, bank, ...). */
  extra?: Parameters<typeof makeWorkspace>[1];
}

/** One daemon's workspace: the shared folders, its own data folder and config. */
export interface SharedDaemonWorkspace extends Workspace {
  /** Its `store.daemonName` (undefined: none written, the daemon registers under the host's name). */
  name: string | undefined;
}

export interface DaemonConfigsOptions {
  /** The store of every daemon: its URL and password (written to a file beside the configs, mode 0600). */
  url: string;
  password: string;
  /** One entry per daemon: its `store.daemonName`, or undefined for none (one daemon alone, as on a single machine). */
  names: ReadonlyArray<string | undefined>;
  /** `store.leaseMs` of the named daemons. @defaultValue 3000 */
  leaseMs?: number;
  /** Other `store` keys of every daemon (`maxConnections`, ...). */
  store?: Record<string, unknown>;
  /** `bank.url` of every daemon, when it differs from the base workspace's. */
  bankUrl?: string;
}

/**
 * A workspace per daemon on the base workspace's inbox, outbox and archive: its own data folder
 * (`data-<name or index>`) and config (`remessa-<name or index>.jsonc`), the base config with the store (and bank)
 * of `options`.
 */
export async function writeDaemonConfigs(
  base: Workspace,
  options: DaemonConfigsOptions,
): Promise<SharedDaemonWorkspace[]> {
  const passwordFile = path.join(base.dir, 'store-password');
  await fs.writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 });
  const config = JSON.parse(await fs.readFile(base.config, 'utf8')) as {
    folders: Record<string, string>;
    bank: Record<string, unknown>;
  } & Record<string, unknown>;
  return Promise.all(
    options.names.map(async (name, i) => {
      const tag = name ?? String(i);
      const data = path.join(base.dir, `data-${tag}`);
      const file = path.join(base.dir, `remessa-${tag}.jsonc`);
      const own = {
        ...config,
        folders: { ...config.folders, data },
        bank: options.bankUrl ? { ...config.bank, url: options.bankUrl } : config.bank,
        store: {
          url: options.url,
          passwordFile,
          ...options.store,
          ...(name !== undefined ? { daemonName: name, leaseMs: options.leaseMs ?? 3000 } : {}),
        },
      };
      await fs.writeFile(file, JSON.stringify(own, null, 2));
      return { ...base, data, config: file, name };
    }),
  );
}

/** N workspaces on one inbox/outbox/archive and one store: daemons `d1`..`dN`. */
export async function makeSharedWorkspaces(
  n: number,
  bankUrl: string,
  options: SharedStoreOptions,
): Promise<SharedDaemonWorkspace[]> {
  const base = await makeWorkspace(bankUrl, options.extra);
  const names = Array.from({ length: n }, (_, i) => `d${i + 1}`);
  return writeDaemonConfigs(base, {
    url: options.url,
    password: options.password,
    names,
    ...(options.leaseMs !== undefined ? { leaseMs: options.leaseMs } : {}),
  });
}

/** Starts a daemon process per workspace. */
export function startSharedDaemons(spaces: readonly SharedDaemonWorkspace[], env: NodeJS.ProcessEnv = {}): Proc[] {
  return spaces.map((ws) => startDaemon(ws, env));
}
