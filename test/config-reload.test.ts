/**
 * Reloading the configuration (issue 9 §1): what applies live, what needs a restart, and a bad configuration refused
 * whole with the running one kept. The daemon's SIGHUP path is covered end to end in test/e2e-headers.test.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { runnerOptionsFromConfig } from '../src/runner/options.js';
import { type ConfigReloader, reloadConfig, restartOnlyChanges } from '../src/runner/reload.js';

let dir: string;
let file: string;
let lines: string[];
const savedLevel = process.env.REMESSA_LOG_LEVEL;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'remessa-reload-'));
  file = join(dir, 'remessa.jsonc');
  lines = [];
  delete process.env.REMESSA_LOG_LEVEL;
});
afterEach(async () => {
  if (savedLevel === undefined) delete process.env.REMESSA_LOG_LEVEL;
  else process.env.REMESSA_LOG_LEVEL = savedLevel;
  await rm(dir, { recursive: true, force: true });
});

function logger() {
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return createLogger({ level: 'info', destination });
}

async function setup(text: string) {
  await writeFile(file, text);
  const log = logger();
  const load = () => loadConfig({ file, env: {}, cwd: dir });
  const current = load();
  const options = runnerOptionsFromConfig(current, log);
  const reloader: ConfigReloader = {
    current,
    file,
    load,
    toOptions: (c) => runnerOptionsFromConfig(c, log),
  };
  return { log, options, reloader };
}

describe('reloadConfig', () => {
  it('applies mappings, defaults, policy, csv and the log level; says what needs a restart', async () => {
    const { log, options, reloader } = await setup('{ "mappings": { "charges": { "COD": "correlationId" } } }');
    await writeFile(
      file,
      `{
        // a comment, as the shipped file has
        "mappings": { "charges": { "CLIENTE_X": "payer.name" } },
        "defaults": { "charges": { "type": "BANKSLIP_PIX" } },
        "policy": { "charges": "all-or-nothing" },
        "csv": { "delimiter": ";" },
        "log": { "level": "warn" },
        "folders": { "inbox": "elsewhere" },
        "queue": { "concurrency": 2 }
      }`,
    );
    expect(reloadConfig(reloader, options, log, 'test')).toBe(true);
    expect(options.mappings).toEqual({ charges: { CLIENTE_X: 'payer.name' } });
    expect(options.defaults).toEqual({ charges: { type: 'BANKSLIP_PIX' } });
    expect(options.policy).toEqual({ charges: 'all-or-nothing' });
    expect(options.csv.delimiter).toBe(';');
    expect(log.level).toBe('warn');
    // Restart-only settings are not applied, and the warning names them.
    expect(options.folders.inbox).toBe(join(dir, 'inbox'));
    expect(options.queue.concurrency).toBe(8);
    const warning = lines.find((l) => l.includes('take effect only after a restart'));
    expect(warning).toContain('folders.inbox');
    expect(warning).toContain('queue.concurrency');
    // Still said on the next reload: they are still not applied.
    expect(restartOnlyChanges(reloader.current, loadConfig({ file, env: {}, cwd: dir }))).toEqual([
      'folders.inbox',
      'queue.concurrency',
    ]);
  });

  it('says metrics, reconcile, log.format, log.progressIntervalMs and approval.pollMs need a restart', async () => {
    // These are read once at start (the metrics socket, the reconcile timers, the log's stream, the progress and
    // approval timers): a reload that changed them said "configuration reloaded" with nothing about them.
    const { log, options, reloader } = await setup('{}');
    await writeFile(
      file,
      `{
        "metrics": { "port": 47399 },
        "reconcile": { "everyMinutes": 5 },
        "log": { "format": "text", "progressIntervalMs": 5000 },
        "approval": { "pollMs": 9000 }
      }`,
    );
    expect(reloadConfig(reloader, options, log, 'test')).toBe(true);
    const reloaded = lines.find((l) => l.includes('configuration reloaded'));
    expect(reloaded).toContain('"applied":[]');
    const warning = lines.find((l) => l.includes('take effect only after a restart'));
    for (const setting of [
      'metrics.port',
      'reconcile.everyMinutes',
      'log.format',
      'log.progressIntervalMs',
      'approval.pollMs',
    ])
      expect(warning, setting).toContain(setting);
    // Still said on the next reload: they are still not applied.
    expect(restartOnlyChanges(reloader.current, loadConfig({ file, env: {}, cwd: dir }))).toEqual([
      'reconcile.everyMinutes',
      'metrics.port',
      'approval.pollMs',
      'log.format',
      'log.progressIntervalMs',
    ]);
  });

  it('refuses a configuration that does not load, whole, and keeps the running one', async () => {
    const { log, options, reloader } = await setup('{ "mappings": { "charges": { "COD": "correlationId" } } }');
    const before = JSON.stringify({ m: options.mappings, d: options.defaults, p: options.policy, c: options.csv });
    for (const bad of [
      '{ "mappings": { "charges": { "COD": "correlationId" } }, ', // syntax
      '{ "mapings": {} }', // unknown key
      '{ "mappings": { "charges": { "COD": "codigo" } }, "policy": { "charges": "all-or-nothing" } }', // no such column
      '{ "defaults": { "charges": { "tipo": "BANKSLIP" } } }', // no such column
    ]) {
      await writeFile(file, bad);
      const refusals = lines.filter((l) => l.includes('configuration reload refused')).length;
      expect(reloadConfig(reloader, options, log, 'test'), bad).toBe(false);
      expect(lines.filter((l) => l.includes('configuration reload refused')).length, bad).toBe(refusals + 1);
      expect(JSON.stringify({ m: options.mappings, d: options.defaults, p: options.policy, c: options.csv })).toBe(
        before,
      );
    }
    const log_ = lines.join('');
    for (const said of ['line 1', 'unknown setting \\"mapings\\"', '\\"codigo\\"', '\\"tipo\\"'])
      expect(log_).toContain(said);
  });
});
