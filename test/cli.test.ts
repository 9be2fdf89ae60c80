import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '..');
const children: ChildProcess[] = [];
// The tsx loader by absolute URL, so the child may run in any working directory.
const TSX_LOADER = pathToFileURL(path.join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;

function remessa(args: string[], cwd = ROOT, env: Record<string, string> = {}): ChildProcess {
  const child = spawn(process.execPath, ['--import', TSX_LOADER, path.join(ROOT, 'src/cli.ts'), ...args], {
    cwd,
    env: { ...process.env, REMESSA_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return child;
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const newline = out.indexOf('\n');
      if (newline >= 0) resolve(out.slice(0, newline));
    });
    child.once('exit', (code) => reject(new Error(`exited ${code} before printing a line`)));
  });
}

function exited(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.once('exit', (code) => resolve({ code, stderr })));
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

describe('remessa sandbox', () => {
  it('prints where it listens, answers with its keys, and stops cleanly on SIGTERM', async () => {
    const data = path.join(mkdtempSync(path.join(tmpdir(), 'remessa-cli-')), 'sandbox.sqlite');
    const child = remessa(['sandbox', '--port', '0', '--data', data, '--api-key', 'my-own-key-123']);
    const done = exited(child);
    const line = await firstLine(child);
    const match = /^sandbox listening on (http:\/\/127\.0\.0\.1:(\d+))$/.exec(line);
    expect(match, line).not.toBeNull();
    const url = match![1]!;
    expect(Number(match![2])).toBeGreaterThan(0);

    const own = await fetch(`${url}/v1/charges/unknown-charge`, { headers: { 'x-service-api-key': 'my-own-key-123' } });
    expect(own.status).toBe(404);
    const publicKey = await fetch(`${url}/v1/charges/unknown-charge`, {
      headers: { 'x-service-api-key': 'sandbox-public-test-key' },
    });
    expect(publicKey.status).toBe(404);
    const none = await fetch(`${url}/v1/charges/unknown-charge`);
    expect(none.status).toBe(401);
    const wrong = await fetch(`${url}/v1/charges/unknown-charge`, { headers: { 'x-service-api-key': 'not-a-key-x' } });
    expect(wrong.status).toBe(401);

    child.kill('SIGTERM');
    expect((await done).code).toBe(0);
  });

  it('refuses a bad port with exit code 2', async () => {
    const result = await exited(remessa(['sandbox', '--port', '70000']));
    expect(result.code).toBe(2);
    // In the config's language (this checkout's config/remessa.jsonc: pt-BR).
    expect(result.stderr).toContain('Esperava uma porta de 0 a 65535, veio "70000"');
  });
});

describe('the command line speaks its user`s language', () => {
  /** Runs remessa to its end: exit code, stdout and stderr. */
  async function cli(args: string[], cwd: string) {
    const child = remessa(args, cwd);
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const { code, stderr } = await exited(child);
    return { code, stdout, stderr };
  }
  const noConfig = () => mkdtempSync(path.join(tmpdir(), 'remessa-cli-'));

  it('help and refusals are in pt-BR by default, in English with --locale en or the config`s locale', async () => {
    const dir = noConfig();
    const help = await cli(['approve', '--help'], dir);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Uso: remessa approve');
    expect(help.stdout).toContain('libera para pagamento um arquivo que espera aprovação');
    expect(help.stdout).toContain('Opções:');
    expect(help.stdout).toContain('--by <name>  o nome de quem aprova, registrado com a hora ao lado do usuário');
    expect(help.stdout).toContain('-h, --help   mostra a ajuda do comando');
    expect(help.stdout).not.toMatch(/Usage|Options|display help/);

    const english = await cli(['approve', '--help', '--locale', 'en'], dir);
    expect(english.stdout).toContain('Usage: remessa approve');
    expect(english.stdout).toContain("--by <name>  the approver's name, recorded with the time beside the OS");
    const file = path.join(dir, 'remessa.jsonc');
    writeFileSync(file, '{ "locale": "en" } // the operator reads English');
    const configured = await cli(['--config', file, 'status', '--sinse', '2026-11-01'], dir);
    expect(configured.code).toBe(2);
    expect(configured.stderr).toMatch(/^error: unknown option '--sinse'\n\(Did you mean --since\?\)\n/);
    // --locale over the config's.
    const over = await cli([`--config=${file}`, '--locale=pt-BR', 'statsu'], dir);
    expect(over.stderr).toMatch(/^erro: comando desconhecido 'statsu'\n\(Você quis dizer status\?\)\n/);
  });

  it('each refusal of what was typed names what, in the user`s words, and exits 2', async () => {
    const dir = noConfig();
    const cases: Array<[string[], string]> = [
      [['approve', 'lote.csv'], "erro: falta a opção obrigatória '--by <name>'"],
      [['approve', 'lote.csv', '--by'], "erro: a opção '--by <name>' precisa de um valor"],
      [['approve', '--by', 'Ana'], "erro: falta o argumento obrigatório 'batch'"],
      [['approve', 'a.csv', 'b.csv', '--by', 'Ana'], 'erro: argumentos demais: esperava no máximo 1, veio 2'],
      [
        ['resolve', 'lote.csv', '3', '--as', 'pago', '--note', 'n'],
        "erro: opção '--as <outcome>': Esperava um de succeeded, failed, veio 'pago'",
      ],
      [
        ['resolve', 'lote.csv', '0', '--as', 'failed', '--note', 'n'],
        'erro: argumento \'line\': Esperava um número de linha (1 ou mais), veio "0"',
      ],
      [
        ['status', '--since', '31/02/2026'],
        "erro: opção '--since <date>': Esperava uma data AAAA-MM-DD ou DD/MM/AAAA, ou uma hora ISO 8601 com o fuso",
      ],
    ];
    for (const [args, said] of cases) {
      const result = await cli(args, dir);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr.split('\n')[0], args.join(' ')).toContain(said);
      expect(result.stderr, args.join(' ')).toContain('Uso: remessa');
    }
    const help = await cli(['resolve', '--help'], dir);
    expect(help.stdout).toMatch(/o que o banco diz que aconteceu \(valores: "succeeded",\s+"failed"\)/);
    // A repeatable option shows no `(default: [])`.
    expect((await cli(['webhooks', 'update', '--help'], dir)).stdout).not.toContain('default');
  });
});

describe('configuration errors', () => {
  it('a config file with an unknown key stops the command with one line naming it, exit 2', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-cli-'));
    const file = path.join(dir, 'remessa.jsonc');
    writeFileSync(file, '{\n  // comment\n  "queue": { "concurency": 2 }\n}\n');
    const result = await exited(remessa(['--config', file, 'status'], dir));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown setting "queue.concurency"');
  });

  it('a receiver without its credential stops the daemon (exit 2), not validate or the nightly run', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-cli-'));
    const file = path.join(dir, 'remessa.jsonc');
    const bank = { url: 'http://127.0.0.1:9', accountId: '123456' };
    writeFileSync(file, JSON.stringify({ bank, webhooks: { receiver: { port: 0, enabled: true } } }));
    const env = { REMESSA_API_KEY: 'k-1234567890' };
    const daemon = await exited(remessa(['--config', file, 'daemon'], dir, env));
    expect(daemon.code).toBe(2);
    expect(daemon.stderr).toContain('webhooks.receiver: the receiver is on but has no authorization value');
    // Another command reads the same configuration and does its work: here it reads the file and answers it.
    writeFileSync(path.join(dir, 'c.csv'), 'Nome;CPF/CNPJ;Vencimento;Valor\n');
    const validate = await exited(remessa(['--config', file, 'validate', '--kind', 'charges', 'c.csv'], dir, env));
    expect(validate.stderr).not.toContain('authorization value');
    expect(validate.code).toBe(1);
    expect(validate.stderr).toContain('validate charges c.csv');
  });

  it("status, validate, approve and reject run without the bank's secrets; run still refuses (they exited 2)", async () => {
    // As an operator runs them: the API key and account id are readable only by the service's unit.
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-cli-'));
    const file = path.join(dir, 'remessa.jsonc');
    writeFileSync(file, JSON.stringify({ bank: { url: 'https://bank.example' } }));
    const env = { REMESSA_API_KEY: '', REMESSA_ACCOUNT_ID: '', CREDENTIALS_DIRECTORY: '' };
    const status = await exited(remessa(['--config', file, 'status', '--locale', 'en'], dir, env));
    expect(status.stderr).not.toContain('a real bank needs');
    expect(status.stderr).toContain('No store at'); // past the configuration: to the store, which has not run here
    writeFileSync(path.join(dir, 'c.csv'), 'Nome;CPF/CNPJ;Vencimento;Valor\n');
    const validate = await exited(remessa(['--config', file, 'validate', '--kind', 'charges', 'c.csv'], dir, env));
    expect(validate.stderr).not.toContain('a real bank needs');
    expect(validate.stderr).toContain('validate charges c.csv');
    for (const decision of [
      ['approve', 'x', '--by', 'Ana'],
      ['reject', 'x', '--by', 'Ana', '--note', 'n'],
    ]) {
      const decided = await exited(remessa(['--config', file, ...decision], dir, env));
      expect(decided.stderr).not.toContain('a real bank needs');
      expect(decided.stderr.length).toBeGreaterThan(0); // its own refusal (no such batch), past the configuration
    }
    const run = await exited(remessa(['--config', file, 'run'], dir, env));
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('bank.accountId: a real bank needs the account id');
  });
});
