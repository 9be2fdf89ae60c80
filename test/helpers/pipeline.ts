/**
 * A pipeline in process as a command opens it (src/runner/commands.ts `openPipeline`): its config written in a temp
 * folder, the folders under it, the engine's store (test/helpers/stores.ts `configured`), the embedded sandbox; and a
 * file dropped in its inbox and taken into its work area as the intake takes it. For the tests of what the pipeline
 * does with a taken file (test/runner-file-changed.test.ts, test/parked-until-finished.test.ts).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { fingerprintOf, takeIntoWorkArea, type WorkItem } from '../../src/intake/work-area.js';
import { silentLogger } from '../../src/log.js';
import { openPipeline, type Pipeline, runnerOptionsFromConfig } from '../../src/runner/commands.js';
import type { LockingCommand } from '../../src/runner/lock.js';
import type { KindName } from '../../src/types.js';
import type { StoreEngine } from './stores.js';

export interface TestPipeline {
  pipeline: Pipeline;
  folders: { inbox: string; outbox: string; archive: string; data: string };
  /** The store as configured (its `place` opens it again). */
  store: Awaited<ReturnType<StoreEngine['configured']>>;
  /** Drops `content` as inbox/<kind>/<name> and takes it into the work area: the work item the handler is given. */
  take(kind: KindName, name: string, content: string): Promise<WorkItem>;
}

export async function openTestPipeline(
  engine: StoreEngine,
  dir: string,
  command: LockingCommand,
): Promise<TestPipeline> {
  const configFile = path.join(dir, 'remessa.jsonc');
  const folders = {
    inbox: path.join(dir, 'inbox'),
    outbox: path.join(dir, 'outbox'),
    archive: path.join(dir, 'archive'),
    data: path.join(dir, 'data'),
  };
  const store = await engine.configured(folders.data, dir);
  await fs.writeFile(configFile, JSON.stringify({ folders, ...(store.section && { store: store.section }) }));
  const options = runnerOptionsFromConfig(loadConfig({ file: configFile, env: {} }), silentLogger());
  const pipeline = await openPipeline(options, {}, { command });
  return {
    pipeline,
    folders,
    store,
    async take(kind, name, content) {
      const inboxFile = path.join(folders.inbox, kind, name);
      await fs.mkdir(path.dirname(inboxFile), { recursive: true });
      await fs.writeFile(inboxFile, content);
      const meta = { kind, name, folder: kind, relativePath: `${kind}/${name}` };
      return (await takeIntoWorkArea(pipeline.workDir, inboxFile, {
        ...meta,
        taken: fingerprintOf(await fs.lstat(inboxFile)),
      }))!;
    },
  };
}
