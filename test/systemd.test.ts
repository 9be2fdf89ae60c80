/**
 * The shipped units, checked by systemd's own tools as an operator would (CI installs Debian's systemd package):
 * `systemd-analyze verify` finds nothing wrong, `systemd-analyze security --offline=true` rates both at 2.0 or lower,
 * and what the units promise matches the code (exit codes, reload by SIGHUP, notify readiness, credentials).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { shebangFlags } from '../bench/node-flags.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK, EXIT_UNSETTLED } from '../src/exit-codes.js';
import { ROOT } from './e2e-harness.js';

const run = promisify(execFile);
const UNITS = ['remessa.service', 'remessa-nightly.service'];
const unitPath = (name: string) => path.join(ROOT, 'systemd', name);

/** `Key=value` lines of a unit (all values of a repeated key). */
function directives(name: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of readFileSync(unitPath(name), 'utf8').split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) out.set(m[1]!, [...(out.get(m[1]!) ?? []), m[2]!]);
  }
  return out;
}

describe('systemd units', () => {
  it('pass systemd-analyze verify', async () => {
    const files = [...UNITS, 'remessa-nightly.timer'].map(unitPath);
    const { stderr } = await run('systemd-analyze', ['verify', ...files]);
    expect(stderr.trim()).toBe('');
  });

  it.each(UNITS)('%s has an exposure of 2.0 or lower', async (unit) => {
    const { stdout } = await run('systemd-analyze', ['security', '--offline=true', '--no-pager', unitPath(unit)], {
      env: { ...process.env, SYSTEMD_COLORS: '0' },
    });
    const m = /Overall exposure level for .*?: (\d+\.\d)/.exec(stdout);
    expect(m, stdout.slice(-500)).not.toBeNull();
    expect(Number(m![1])).toBeLessThanOrEqual(2.0);
  });

  it('the daemon unit notifies readiness, reloads by SIGHUP, restarts on failure and takes credentials', () => {
    const d = directives('remessa.service');
    expect(d.get('Type')).toEqual(['notify']);
    expect(d.get('ExecReload')).toEqual(['/bin/kill -HUP $MAINPID']);
    expect(d.get('Restart')).toEqual(['on-failure']);
    expect(d.get('LoadCredential')).toEqual(
      expect.arrayContaining([
        'remessa-api-key:/etc/remessa/credentials/api-key',
        'remessa-account-id:/etc/remessa/credentials/account-id',
      ]),
    );
    // V8 writes machine code at run time: the one protection a Node service cannot take.
    expect(d.has('MemoryDenyWriteExecute')).toBe(false);
  });

  it('the nightly unit reconciles after the run', () => {
    const d = directives('remessa-nightly.service');
    expect(d.get('ExecStart')).toEqual([
      '/usr/bin/node --single-threaded --max-semi-space-size=8 /opt/remessa/dist/cli.js run',
    ]);
    expect(d.get('ExecStartPost')).toEqual(['/usr/bin/node --single-threaded /opt/remessa/dist/cli.js reconcile']);
  });

  it("starts node with the flags of the command's first line (src/cli.ts), as the bin and npm start do", () => {
    const flags = shebangFlags(path.join(ROOT, 'src/cli.ts'));
    expect(flags).toEqual(['--single-threaded']);
    for (const unit of ['remessa.service', 'remessa-nightly.service']) {
      const d = directives(unit);
      const commands = [...(d.get('ExecStart') ?? []), ...(d.get('ExecStartPost') ?? [])];
      expect(commands.length).toBeGreaterThan(0);
      for (const command of commands) {
        const words = command.split(/\s+/);
        expect(words[0], `${unit}: ${command}`).toBe('/usr/bin/node');
        const nodeFlags = words.slice(1, words.indexOf('/opt/remessa/dist/cli.js'));
        for (const flag of flags) expect(nodeFlags, `${unit}: ${command}`).toContain(flag);
      }
    }
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } };
    expect(pkg.scripts.start).toBe(`node ${flags.join(' ')} --import tsx src/cli.ts daemon`);
  });

  it('the nightly unit counts as success exactly the codes that need no operator', () => {
    const d = directives('remessa-nightly.service');
    const success = [EXIT_OK, ...(d.get('SuccessExitStatus') ?? []).flatMap((v) => v.split(/\s+/).map(Number))];
    expect(success.sort()).toEqual([EXIT_OK, EXIT_NOT_ALL_SUCCEEDED]);
    expect(success).not.toContain(EXIT_CANNOT_RUN);
    expect(success).not.toContain(EXIT_UNSETTLED);
  });
});
