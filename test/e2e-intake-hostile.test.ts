/**
 * End to end, issue 8 §4 (intake side): hostile entries in the inbox each get exactly one answer, and nothing loops.
 *
 * A link (to a file holding an API key, to /etc/passwd, dangling), a FIFO, a folder named `*.csv`, an unreadable file
 * and a cut-off upload sit in the inbox when the daemon starts; another link is dropped while it watches. Each gets one
 * `<name>.rejected.txt` that quotes nothing but its own name, nothing reaches the bank, the inbox ends empty, and the
 * daemon logs no retry loop.
 *
 * The tests run as root, which reads any file whatever its mode bits. So that "unreadable" is real, the daemon runs
 * (when root) through `setpriv` without the two capabilities that let root bypass them (CAP_DAC_OVERRIDE,
 * CAP_DAC_READ_SEARCH): it is then refused the mode-000 file with EACCES exactly as an unprivileged user is.
 */
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  answersOf,
  CLI,
  makeWorkspace,
  type Proc,
  ROOT,
  runCli,
  type SandboxProcess,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';

const SECRET = 'sk_live_0123456789abcdefSECRET';
const isRoot = process.getuid?.() === 0;

let sandbox: SandboxProcess;
let ws: Workspace;
let daemon: Proc;
let dir: string;

/** The daemon as a child process; as root, without the capabilities that bypass file modes. */
function startUnprivilegedDaemon(config: string): Proc {
  const node = [process.execPath, '--import', 'tsx', CLI, 'daemon', '--config', config];
  const [cmd, ...args] = isRoot ? ['setpriv', '--bounding-set', '-dac_override,-dac_read_search', ...node] : node;
  const child = spawn(cmd!, args, {
    cwd: ROOT,
    env: { ...process.env, REMESSA_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    out += d;
  });
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    err += d;
  });
  const exited = new Promise<number | string>((resolve) => {
    child.on('exit', (code, signal) => resolve(code ?? signal ?? -1));
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

const ROWS = 'type,correlationId,description,amount\nPIX_STATIC,HOSTILE-1,Pedido 1,10.00\n';

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-hostile-'));
  sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'));
  ws = await makeWorkspace(sandbox.url, { intake: { stableMs: 100, cutOffMs: 1500 } });
  const charges = path.join(ws.inbox, 'charges');
  await fs.mkdir(charges, { recursive: true });
  const keyFile = path.join(dir, 'api-key');
  await fs.writeFile(keyFile, `${SECRET}\n`);
  await fs.symlink(keyFile, path.join(charges, 'key-link.csv'));
  await fs.symlink('/etc/passwd', path.join(ws.inbox, 'charges-passwd.csv'));
  await fs.symlink('/nonexistent/target.csv', path.join(charges, 'dangling.csv'));
  execFileSync('mkfifo', [path.join(charges, 'pipe.csv')]);
  await fs.mkdir(path.join(charges, 'folder.csv'));
  await fs.writeFile(path.join(charges, 'folder.csv', 'inner.csv'), ROWS);
  await fs.writeFile(path.join(charges, 'unreadable.csv'), ROWS, { mode: 0o000 });
  await fs.chmod(path.join(charges, 'unreadable.csv'), 0o000);
  await fs.writeFile(path.join(charges, 'cut.csv'), 'type,correlationId,description,amount\nPIX_STATIC,HOSTILE-2,Ped');
  daemon = startUnprivilegedDaemon(ws.config);
  await waitFor('the daemon to be ready', () => /remessa daemon ready/.test(daemon.stderr() + daemon.stdout()), 60_000);
}, 90_000);

afterAll(async () => {
  if (daemon) await stopDaemon(daemon);
  if (sandbox) await sandbox.stop();
});

describe('hostile inbox entries, one answer each', () => {
  it('links, a FIFO, a folder, an unreadable and a cut-off file: one rejection each, nothing read, no loop', async () => {
    // One more link, dropped while the daemon watches (an event, not the start-up scan).
    await fs.symlink('/etc/passwd', path.join(ws.inbox, 'charges', 'late-link.csv'));
    const expected: Record<string, RegExp> = {
      'key-link': /FILE_IS_LINK: "charges\/key-link\.csv" é um link simbólico\. O remessa nunca segue links/,
      'charges-passwd': /FILE_IS_LINK: "charges-passwd\.csv" é um link simbólico/,
      dangling: /FILE_IS_LINK/,
      'late-link': /FILE_IS_LINK/,
      pipe: /FILE_NOT_REGULAR: "charges\/pipe\.csv" é um pipe nomeado \(FIFO\)/,
      folder: /FILE_IS_FOLDER: "charges\/folder\.csv" é uma pasta, não um arquivo/,
      unreadable: /FILE_UNREADABLE: Não foi possível ler "charges\/unreadable\.csv": permissão negada \(EACCES\)/,
      cut: /FILE_CUT_OFF: "charges\/cut\.csv" parece cortado: a linha 2 tem 3 das 4 colunas do cabeçalho e não termina/,
    };
    for (const [stem, pattern] of Object.entries(expected)) {
      const answer = await waitForAnswer(ws, 'charges', stem, 30_000).catch((err: Error) => {
        throw new Error(`${err.message}\ndaemon stderr:\n${daemon.stderr().slice(-4000)}`);
      });
      expect(answer.type, stem).toBe('rejected');
      expect(answer.text, stem).toMatch(pattern);
      // Nothing but the dropped entry's own name is quoted: not a link's target, not its content.
      expect(answer.text, stem).not.toMatch(/SECRET|root:|\/etc\/passwd|nonexistent|api-key/);
      expect(answer.text.length, stem).toBeLessThan(1000);
    }
    // Long enough for a 60 s-style retry loop to show itself at the intake's pace, and for a second answer.
    await new Promise((r) => setTimeout(r, 2000));
    // One answer each, a rejection note, and nothing else in the outbox.
    for (const stem of Object.keys(expected)) {
      const answers = await answersOf(ws, 'charges', stem);
      expect(answers, stem).toHaveLength(1);
      expect(answers[0]!.rejected, stem).toBeDefined();
      expect(answers[0]!.results, stem).toEqual([]);
    }
    const outbox = await fs.readdir(path.join(ws.outbox, 'charges'));
    expect(outbox.filter((f) => !f.endsWith('.rejected.txt'))).toEqual([]);
    expect(outbox).toHaveLength(Object.keys(expected).length);
    expect(await fs.readdir(path.join(ws.inbox, 'charges'))).toEqual([]);
    expect((await fs.readdir(ws.inbox)).filter((f) => f.endsWith('.csv'))).toEqual([]);
    expect(await sandbox.effects()).toEqual([]);
    const log = daemon.stderr() + daemon.stdout();
    expect(log).not.toMatch(/could not be handled|could not take file/);
    expect(log).not.toContain(SECRET);
    // The links were archived as links: the key file and /etc/passwd were never moved or copied.
    expect(await fs.readFile(path.join(dir, 'api-key'), 'utf8')).toBe(`${SECRET}\n`);
    const archived = await fs.readdir(path.join(ws.archive, 'charges'));
    const keyLink = archived.find((f) => /^key-link\.\d{8}T\d{6}Z-[0-9a-f]{8}\.csv$/.test(f))!;
    expect((await fs.lstat(path.join(ws.archive, 'charges', keyLink))).isSymbolicLink()).toBe(true);
  }, 60_000);
});

describe('`remessa run FILE` on a link in the inbox', () => {
  it('does not follow it: says it is not a regular file, exit 2 (a bad argument), the target never read', async () => {
    const ws2 = await makeWorkspace(sandbox.url);
    await fs.mkdir(path.join(ws2.inbox, 'charges'), { recursive: true });
    const link = path.join(ws2.inbox, 'charges', 'link.csv');
    await fs.symlink('/etc/passwd', link);
    const run = await runCli(['run', '--config', ws2.config, link]);
    expect(run.code).toBe(2);
    expect(run.stdout).toContain(`${link}: não é um arquivo comum (links na caixa de entrada nunca são seguidos)`);
    expect(run.stdout + run.stderr).not.toMatch(/root:/);
    expect((await fs.lstat(link)).isSymbolicLink()).toBe(true);
  }, 60_000);
});
