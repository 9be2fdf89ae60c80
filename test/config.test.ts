import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { buildConfig, loadConfig, parseConfigText } from '../src/config.js';
import { ConfigError } from '../src/errors.js';
import { silentLogger } from '../src/log.js';
import { runnerOptionsFromConfig } from '../src/runner/options.js';

function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), 'remessa-config-'));
}

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('config', () => {
  it('the shipped config file parses to the defaults and selects the embedded sandbox', () => {
    const cwd = path.resolve(import.meta.dirname, '..');
    const config = loadConfig({ cwd, env: {} });
    expect(config.embedded).toBe(true);
    expect(config.sourceFile).toBe(path.join(cwd, 'config/remessa.jsonc'));
    expect(config.bank.profile).toBe('interface');
    // Header names and paths default to the profile's: the shipped file sets none of them.
    expect(config.bank.headers.apiKey).toBeUndefined();
    expect(config.bank.paths).toEqual({});
    expect(config.folders.inbox).toBe(path.join(cwd, 'inbox'));
    expect(config.sandbox.dataFile).toBe(path.join(cwd, 'data', 'sandbox.sqlite'));
    expect(Object.isFrozen(config.bank.headers)).toBe(true);
    // Shipped: the operator endpoint on for `npm start` (the default is off).
    expect(config.metrics).toMatchObject({ host: '127.0.0.1', port: 9464 });
    expect(buildConfig({}, { env: {} }).metrics.port).toBe(0);
  });

  it('bank.profile, bank.paths and sandbox.profile: known values only; the old pixPaymentPath names its new place', () => {
    const ok = buildConfig(
      { bank: { profile: 'delbank', paths: { pixPayment: '/x/pay' } }, sandbox: { profile: 'interface' } },
      { env: {} },
    );
    expect(ok.bank.profile).toBe('delbank');
    expect(ok.bank.paths.pixPayment).toBe('/x/pay');
    expect(ok.sandbox.profile).toBe('interface');
    expect(errorOf(() => buildConfig({ bank: { profile: 'itau' } }, { env: {} })).message).toContain('bank.profile');
    expect(errorOf(() => buildConfig({ bank: { paths: { pixPayment: 'x/pay' } } }, { env: {} })).message).toContain(
      'bank.paths.pixPayment',
    );
    expect(errorOf(() => buildConfig({ bank: { paths: { payBills: '/x' } } }, { env: {} })).message).toContain(
      'bank.paths',
    );
    const moved = errorOf(() => buildConfig({ bank: { pixPaymentPath: '/x' } }, { file: 'c.jsonc', env: {} }));
    expect(moved.message).toContain('unknown setting "bank.pixPaymentPath" (it is now "bank.paths.pixPayment")');
  });

  it("bank.pixPaymentKeyReplayed: absent, the profile's (interface replays, delbank not known to); set, the client's", async () => {
    const replayed = async (bank: Record<string, unknown>): Promise<boolean> => {
      const client = new BankClient({
        baseUrl: 'http://127.0.0.1:9',
        apiKey: 'k',
        ...runnerOptionsFromConfig(buildConfig({ bank }, { env: {} }), silentLogger()).bank.client,
      });
      await client.close();
      return client.pixPayments.keyReplayed;
    };
    expect(await replayed({})).toBe(true);
    expect(await replayed({ profile: 'delbank' })).toBe(false);
    expect(await replayed({ profile: 'delbank', pixPaymentKeyReplayed: true })).toBe(true);
    expect(await replayed({ pixPaymentKeyReplayed: false })).toBe(false);
    expect(errorOf(() => buildConfig({ bank: { pixPaymentKeyReplayed: 'yes' } }, { env: {} })).message).toContain(
      'bank.pixPaymentKeyReplayed',
    );
  });

  it('rejects an unknown key and names it, nested or not', () => {
    const error = errorOf(() => buildConfig({ queue: { concurency: 3 }, extra: true }, { file: 'x.jsonc', env: {} }));
    expect(error.code).toBe('CONFIG_UNKNOWN_KEY');
    expect(error.message).toContain('unknown setting "queue.concurency"');
    expect(error.message).toContain('unknown setting "extra"');
    expect(error.message).toContain('x.jsonc');
  });

  it('says what was expected and what was found', () => {
    const error = errorOf(() => buildConfig({ bank: { timeouts: { connectMs: 'ten' } } }, { env: {} }));
    expect(error.message).toContain('bank.timeouts.connectMs: Expected number, got string');
  });

  it('reports JSONC syntax errors with line and column, and accepts comments', () => {
    expect(parseConfigText('// c\n{ "log": { "level": "warn" }, }')).toEqual({ log: { level: 'warn' } });
    const error = errorOf(() => parseConfigText('{\n  "log": { "level" "warn" }\n}', 'bad.jsonc'));
    expect(error.message).toMatch(/^bad\.jsonc line 2, column \d+: /);
  });

  it('takes secrets from the environment before files, files before the config value', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'key'), 'file-key-123456\n');
    const fromFile = buildConfig({ bank: { apiKeyFile: 'key', apiKey: 'config-key-123' } }, { env: {}, cwd: dir });
    expect(fromFile.bank.apiKey).toBe('file-key-123456');
    const fromEnv = buildConfig(
      { bank: { apiKeyFile: 'key' } },
      { env: { REMESSA_API_KEY: 'env-key-123456', REMESSA_ACCOUNT_ID: '12345' }, cwd: dir },
    );
    expect(fromEnv.bank.apiKey).toBe('env-key-123456');
    expect(fromEnv.bank.accountId).toBe('12345');
  });

  it('reads systemd credentials', () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'remessa-api-key'), 'cred-key-123456');
    writeFileSync(path.join(dir, 'remessa-account-id'), '987654');
    const config = buildConfig({}, { env: { CREDENTIALS_DIRECTORY: dir } });
    expect(config.bank.apiKey).toBe('cred-key-123456');
    expect(config.bank.accountId).toBe('987654');
  });

  it('a missing secret file named in the config is an error', () => {
    const error = errorOf(() => buildConfig({ bank: { apiKeyFile: '/nonexistent/key' } }, { env: {} }));
    expect(error.message).toContain('bank.apiKeyFile');
  });

  it('credentials in the bank URL are refused without showing them (doctor printed the URL, password and all)', () => {
    const env = { REMESSA_API_KEY: 'k-123456789', REMESSA_ACCOUNT_ID: '123456' };
    for (const url of ['https://ana:s3cr3t-pw@bank.example', 'https://token-only@bank.example/v1']) {
      const error = errorOf(() => buildConfig({ bank: { url } }, { env }));
      expect(error.code).toBe('CONFIG_INVALID');
      expect(error.message).toContain('bank.url: credentials do not belong in the URL');
      expect(error.message).not.toMatch(/s3cr3t-pw|token-only/);
    }
    // Also for a command that needs no bank secrets (status, validate).
    expect(
      errorOf(() => buildConfig({ bank: { url: 'https://a:b@bank.example' } }, { env: {}, bankSecrets: false })).code,
    ).toBe('CONFIG_INVALID');
  });

  it('a real bank URL needs an API key, and must be http(s)', () => {
    expect(errorOf(() => buildConfig({ bank: { url: 'https://bank.example' } }, { env: {} })).code).toBe(
      'CONFIG_MISSING_SECRET',
    );
    const noAccount = errorOf(() =>
      buildConfig({ bank: { url: 'https://bank.example' } }, { env: { REMESSA_API_KEY: 'k-123456789' } }),
    );
    expect(noAccount.message).toContain('bank.accountId');
    expect(errorOf(() => buildConfig({ bank: { url: 'ftp://x' } }, { env: {} })).message).toContain('bank.url');
    const real = buildConfig(
      { bank: { url: 'https://bank.example' } },
      { env: { REMESSA_API_KEY: 'k-123456789', REMESSA_ACCOUNT_ID: '123456' } },
    );
    expect(real.embedded).toBe(false);
  });

  it('a missing explicit config file is an error', () => {
    expect(errorOf(() => loadConfig({ file: '/nonexistent/remessa.jsonc', env: {} })).code).toBe('CONFIG_NOT_FOUND');
  });

  it('relative paths follow the config file (or folders.base), whatever the working directory', () => {
    const dir = tempDir();
    const elsewhere = tempDir();
    writeFileSync(path.join(dir, 'key'), 'file-key-123456\n');
    writeFileSync(
      path.join(dir, 'remessa.jsonc'),
      '{ "folders": { "data": "state" }, "bank": { "apiKeyFile": "key" }, "sandbox": { "dataFile": "sb.sqlite" } }',
    );
    const own = loadConfig({ file: path.join(dir, 'remessa.jsonc'), cwd: elsewhere, env: {} });
    expect(own.folders.data).toBe(path.join(dir, 'state'));
    expect(own.folders.inbox).toBe(path.join(dir, 'inbox'));
    expect(own.sandbox.dataFile).toBe(path.join(dir, 'sb.sqlite'));
    expect(own.bank.apiKey).toBe('file-key-123456');
    // A config kept in a sub-folder points at its parent, as the shipped config/remessa.jsonc does.
    const sub = path.join(dir, 'config');
    mkdirSync(sub);
    writeFileSync(path.join(sub, 'remessa.jsonc'), '{ "folders": { "base": "..", "outbox": "answers" } }');
    const nested = loadConfig({ file: 'config/remessa.jsonc', cwd: dir, env: {} });
    expect(loadConfig({ file: path.join(sub, 'remessa.jsonc'), cwd: elsewhere, env: {} }).folders).toEqual(
      nested.folders,
    );
    expect(nested.folders.outbox).toBe(path.join(dir, 'answers'));
    expect(nested.folders.data).toBe(path.join(dir, 'data'));
    // Without a config file, the working directory.
    expect(buildConfig({}, { env: {}, cwd: elsewhere }).folders.data).toBe(path.join(elsewhere, 'data'));
  });
});

describe('intake.maxConcurrentFiles', () => {
  it('defaults to 4, reaches the daemon options, and refuses 0', async () => {
    const { runnerOptionsFromConfig } = await import('../src/runner/options.js');
    const { silentLogger } = await import('../src/log.js');
    expect(buildConfig({}, { env: {} }).intake.maxConcurrentFiles).toBe(4);
    const two = buildConfig({ intake: { maxConcurrentFiles: 2 } }, { env: {} });
    expect(runnerOptionsFromConfig(two, silentLogger()).intake.maxConcurrentFiles).toBe(2);
    expect(() => buildConfig({ intake: { maxConcurrentFiles: 0 } }, { env: {} })).toThrow(/maxConcurrentFiles/);
  });
});
