/**
 * `remessa doctor` against the local sandbox in both profiles: read-only (GETs, nothing in the effects ledger or the
 * event log afterwards), reports which API key header and which charges path answered, and names the profile the
 * answers fit. A client configured with the other profile is told it does not work, and which profile would.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { BANK_PROFILE_DEFINITIONS, BANK_PROFILES, type BankProfileName } from '../src/formats/profiles.js';
import { diagnose, renderDoctorReport } from '../src/runner/doctor.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';
import { runCli } from './e2e-harness.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()?.();
});

async function sandboxOf(profile: BankProfileName): Promise<RunningSandbox> {
  const sandbox = await startSandbox({ profile });
  cleanups.push(() => sandbox.close());
  return sandbox;
}

function clientOf(url: string, profile: BankProfileName): BankClient {
  const client = new BankClient({
    baseUrl: url,
    apiKey: SANDBOX_PUBLIC_API_KEY,
    accountId: '1234567',
    profile,
    maxAttempts: 1,
  });
  cleanups.push(() => client.close());
  return client;
}

describe.each(BANK_PROFILES)('doctor against the sandbox serving %s', (profile) => {
  const other: BankProfileName = profile === 'interface' ? 'delbank' : 'interface';

  it('the right profile: every read answers as expected, GETs only, nothing acted on', async () => {
    const sandbox = await sandboxOf(profile);
    const report = await diagnose(clientOf(sandbox.url, profile), sandbox.url, SANDBOX_PUBLIC_API_KEY, '1234567');
    const all = [...report.reads, ...report.headers, ...report.chargesPaths];
    expect(all.every((p) => p.method === 'GET')).toBe(true);
    expect(report.ok).toBe(true);
    expect(report.fits).toEqual([profile]);
    expect(report.reads.map((p) => [p.what, p.status])).toEqual([
      ['charges', 200],
      ['webhooks', 200],
      ['charge', 404],
      ['dynamicQrGet', 404],
      ['staticQrGet', 404],
      ['pixPaymentGet', 404],
      ['webhook', 404],
    ]);
    const accepted = report.headers.filter((p) => p.status !== 401).map((p) => p.header);
    expect(accepted).toEqual([BANK_PROFILE_DEFINITIONS[profile].headers.apiKey]);
    const answered = report.chargesPaths.filter((p) => p.status === 200).map((p) => p.path.split('?')[0]);
    expect(answered).toEqual([BANK_PROFILE_DEFINITIONS[profile].paths.charges]);
    // Read-only: the sandbox recorded no effect and no event.
    expect(sandbox.ctx.ledger.counts({})).toEqual([]);
    expect(sandbox.ctx.events.list({ afterSeq: 0 })).toEqual([]);
    const text = renderDoctorReport(report);
    expect(text).toContain(`the answers fit the profile "${profile}"`);
    expect(text).toContain(`The configured profile "${profile}" works here.`);
    expect(text).not.toContain(SANDBOX_PUBLIC_API_KEY);
  });

  it('the other profile: refused (401), and the report names the profile that fits', async () => {
    const sandbox = await sandboxOf(profile);
    const report = await diagnose(clientOf(sandbox.url, other), sandbox.url, SANDBOX_PUBLIC_API_KEY, '1234567');
    expect(report.ok).toBe(false);
    expect(report.reads.every((p) => p.status === 401)).toBe(true);
    expect(report.fits).toEqual([profile]);
    const text = renderDoctorReport(report);
    expect(text).toContain(`The configured profile "${other}" does not work here as configured.`);
    expect(text).toContain(`the answers fit the profile "${profile}"`);
  });
});

describe('doctor with an API key the bank does not know', () => {
  it('says the key was refused under every header name, not that no profile fits', async () => {
    // Every header answered 401: the answers say nothing about the profile. "No known profile fits these answers"
    // sent the operator to docs/providers.md to change a profile that was right; the key was what was wrong.
    const sandbox = await sandboxOf('interface');
    const client = new BankClient({
      baseUrl: sandbox.url,
      apiKey: 'not-the-key-0000',
      accountId: '1234567',
      profile: 'interface',
      maxAttempts: 1,
    });
    cleanups.push(() => client.close());
    const report = await diagnose(client, sandbox.url, 'not-the-key-0000', '1234567');
    expect(report.ok).toBe(false);
    expect(report.headers.every((p) => p.status === 401)).toBe(true);
    const text = renderDoctorReport(report);
    expect(text).not.toContain('no known profile fits');
    expect(text).toContain('Verdict: the bank refused the API key under every header name');
    expect(text).not.toContain('not-the-key-0000');
  });
});

describe('remessa doctor (the command)', () => {
  it('runs against the embedded sandbox in the configured profile and exits 0; unreachable bank exits 2', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-doctor-'));
    cleanups.push(() => fs.rm(dir, { recursive: true, force: true }));
    const config = path.join(dir, 'remessa.jsonc');
    await fs.writeFile(
      config,
      JSON.stringify({ folders: { data: path.join(dir, 'data') }, bank: { profile: 'delbank' } }),
    );
    const ok = await runCli(['doctor', '--config', config], { env: { REMESSA_LOG_LEVEL: 'warn' } });
    expect(ok.code, ok.stderr).toBe(0);
    expect(ok.stdout).toContain('profile "delbank" (read-only: GET requests only)');
    expect(ok.stdout).toContain('GET /baas/v1/charges?');
    expect(ok.stdout).toContain('the answers fit the profile "delbank"');

    const down = path.join(dir, 'down.jsonc');
    await fs.writeFile(
      down,
      JSON.stringify({
        folders: { data: path.join(dir, 'data') },
        bank: { url: 'http://127.0.0.1:9', apiKey: 'a-real-looking-key', accountId: '1', timeouts: { connectMs: 500 } },
      }),
    );
    const unreachable = await runCli(['doctor', '--config', down], { env: { REMESSA_LOG_LEVEL: 'warn' } });
    expect(unreachable.code, unreachable.stdout + unreachable.stderr).toBe(2);
    expect(unreachable.stdout).toContain('the bank did not answer at all');
    expect(unreachable.stdout).not.toContain('a-real-looking-key');
  }, 60_000);
});
