/**
 * N daemons sharing one PostgreSQL store and one inbox (issue 13 §1, docs/postgres.md): the workspaces and the
 * processes. Each daemon has its own data folder and config (its `store.daemonName`), all the same inbox, outbox and
 * archive, the same database and the same bank. Used by test/e2e-shared-store.test.ts (and by the crash soaks built on
 * the same config keys).
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
  name: string;
}

/** N workspaces on one inbox/outbox/archive and one store: daemons `d1`..`dN`. */
export async function makeSharedWorkspaces(
  n: number,
  bankUrl: string,
  options: SharedStoreOptions,
): Promise<SharedDaemonWorkspace[]> {
  const base = await makeWorkspace(bankUrl, options.extra);
  const passwordFile = path.join(base.dir, 'store-password');
  await fs.writeFile(passwordFile, `${options.password}\n`, { mode: 0o600 });
  const config = JSON.parse(await fs.readFile(base.config, 'utf8')) as Record<string, unknown>;
  const out: SharedDaemonWorkspace[] = [];
  for (let i = 1; i <= n; i++) {
    const name = `d${i}`;
    const data = path.join(base.dir, `data-${name}`);
    const file = path.join(base.dir, `remessa-${name}.jsonc`);
    const folders = { ...(config.folders as Record<string, string>), data };
    const own = {
      ...config,
      folders,
      store: { url: options.url, passwordFile, daemonName: name, leaseMs: options.leaseMs ?? 3000 },
    };
    await fs.writeFile(file, JSON.stringify(own, null, 2));
    out.push({ ...base, data, config: file, name });
  }
  return out;
}

/** Starts a daemon process per workspace. */
export function startSharedDaemons(spaces: readonly SharedDaemonWorkspace[], env: NodeJS.ProcessEnv = {}): Proc[] {
  return spaces.map((ws) => startDaemon(ws, env));
}
