/**
 * End to end: `remessa run` against a sandbox (own process) that answers 429s, 500/503s, resets connections, hangs,
 * and drops connections after committing. The batch completes, every row succeeds, and the ledger shows every effect
 * once: a charge or QR code whose creation may have happened is looked up before being created again; a keyed
 * request is resent with the same key; a 429 pauses its group for the Retry-After.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bankSlipBarCodeToLine, buildBankSlipBarCode } from '../src/formats/index.js';
import {
  answersOf,
  E2E_PROFILES,
  makeWorkspace,
  parseResultCsv,
  runCli,
  type SandboxProcess,
  startSandboxProcess,
  type Workspace,
} from './e2e-harness.js';

const SEED = Number(process.env.REMESSA_E2E_SEED ?? 424242);

describe.each(E2E_PROFILES)('provider profile %s', (profile) => {
  let sandbox: SandboxProcess;
  let ws: Workspace;
  let inputs: string;

  function guid(i: number): string {
    return `5f0c2a9e-8d41-4c7b-9a3e-${String(i).padStart(12, '0')}`;
  }

  beforeAll(async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-faults-sb-'));
    sandbox = await startSandboxProcess(path.join(dir, 'sandbox.sqlite'), profile);
    ws = await makeWorkspace(sandbox.url, {
      // A generous budget: with a third of the requests faulted, 10 attempts in a row all faulted is ~1 in 50,000.
      bank: {
        profile,
        retry: { maxAttempts: 10, baseDelayMs: 10, maxDelayMs: 100, maxRetryAfterMs: 1000 },
        // A hang costs one timeout; 2 s leaves a slip PDF's rendering room on a loaded machine (800 ms did not: every
        // attempt of a PDF read timed out under a load average of 20 on 2 cores, rows ended uncertain).
        timeouts: { connectMs: 1000, headersMs: 2000, bodyMs: 2000 },
      },
    });
    inputs = path.join(ws.dir, 'files');
    await fs.mkdir(path.join(inputs, 'bill-payments'), { recursive: true });
    await fs.mkdir(path.join(inputs, 'charges'), { recursive: true });
    await fs.mkdir(path.join(inputs, 'qr-codes'), { recursive: true });
    await fs.mkdir(path.join(inputs, 'claims'), { recursive: true });
    const bills = ['digitableLine,amount'];
    for (let i = 0; i < 24; i++) {
      const barCode = buildBankSlipBarCode({
        bankCode: '341',
        dueDate: '2030-03-31',
        amountCents: 2000 + i,
        freeField: `10900001234567891111${String(i).padStart(5, '0')}`,
      });
      bills.push(`${bankSlipBarCodeToLine(barCode)},${((2000 + i) / 100).toFixed(2)}`);
    }
    await fs.writeFile(path.join(inputs, 'bill-payments', 'faulty-bills.csv'), `${bills.join('\n')}\n`);
    const charges = [
      'type,correlationId,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,payer.address.city,payer.address.state',
    ];
    for (let i = 0; i < 16; i++) {
      charges.push(
        `BANKSLIP,FAULT-${i},${(10 + i).toFixed(2)},2027-08-31,Cliente,390.533.447-05,01310-100,Rua A,Recife,PE`,
      );
    }
    await fs.writeFile(path.join(inputs, 'charges', 'faulty-charges.csv'), `${charges.join('\n')}\n`);
    const qr = ['type,correlationId,amount,description'];
    for (let i = 0; i < 10; i++) qr.push(`PIX_DYNAMIC,${guid(i)},${(5 + i).toFixed(2)},Pedido ${i}`);
    await fs.writeFile(path.join(inputs, 'qr-codes', 'faulty-qr.csv'), `${qr.join('\n')}\n`);
    const claims = [
      'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type',
    ];
    for (let i = 0; i < 10; i++) {
      claims.push(`EMAIL,fault${i}@example.com,123456-7,0001,CURRENT,123.456.789-09,Maria da Silva,NATURAL`);
    }
    await fs.writeFile(path.join(inputs, 'claims', 'faulty-claims.csv'), `${claims.join('\n')}\n`);
  }, 60_000);

  afterAll(async () => {
    await sandbox?.stop();
  });

  describe('a misbehaving bank', () => {
    it('429, 5xx, resets, hangs and drops after commit: the batches complete and nothing happens twice', async () => {
      await sandbox.setFaults(
        [
          {
            route: '*',
            rateLimitRate: 0.08,
            retryAfterSeconds: 0,
            errorRate: 0.1,
            resetRate: 0.06,
            dropAfterCommitRate: 0.08,
            hangRate: 0.02,
          },
        ],
        SEED,
      );
      const files = [
        'bill-payments/faulty-bills.csv',
        'charges/faulty-charges.csv',
        'qr-codes/faulty-qr.csv',
        'claims/faulty-claims.csv',
      ].map((f) => path.join(inputs, f));
      const first = await runCli(['run', '--config', ws.config, ...files], { env: { REMESSA_LOG_LEVEL: 'warn' } });
      const faults = (await sandbox.admin('GET', '/faults')) as unknown;
      expect(first.code, `${first.stdout}\n${first.stderr.slice(-3000)}\n${JSON.stringify(faults)}`).toBe(0);

      const read = async (kind: string, stem: string) =>
        parseResultCsv(await fs.readFile((await answersOf(ws, kind, stem)).at(-1)!.results.at(-1)!));
      const bills = await read('bill-payments', 'faulty-bills');
      const charges = await read('charges', 'faulty-charges');
      const qr = await read('qr-codes', 'faulty-qr');
      const claims = await read('claims', 'faulty-claims');
      expect([bills.length, charges.length, qr.length, claims.length]).toEqual([24, 16, 10, 10]);
      for (const r of [...bills, ...charges, ...qr, ...claims]) expect(r.status, JSON.stringify(r)).toBe('succeeded');

      const effects = await sandbox.effects();
      const of = (kind: string) => effects.filter((e) => e.kind === kind);
      expect(of('bill_paid')).toHaveLength(24);
      expect(of('charge_created')).toHaveLength(16);
      expect(of('qr_created')).toHaveLength(10);
      expect(of('claim_created')).toHaveLength(10);
      for (const e of effects) expect(e.count, `${e.kind} ${e.key}`).toBe(1);

      // Run again (the bank still faulty): every row is already done, nothing is sent.
      const again = await runCli(['run', '--config', ws.config, ...files], { env: { REMESSA_LOG_LEVEL: 'warn' } });
      expect(again.code, again.stdout).toBe(0);
      expect(await sandbox.effects()).toEqual(effects);
    }, 150_000);
  });
});
