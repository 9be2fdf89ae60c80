/**
 * Issue 8 §3, the case seen four times in three crash runs, made deterministic for every kind with an effect:
 * the bank commits the effect, dies before answering (REMESSA_SANDBOX_CRASH_AFTER_COMMIT), and is restarted on the
 * same port and data file a moment later. The daemon hears a dropped connection (outcome unknown), then a refused
 * connection while the bank is down (the outcome stays unknown, the row waits), then resends with the same key once
 * the bank is back: the bank replays the first outcome (keyed kinds), or the lookup finds the effect (charges, voids).
 * Every row `succeeded`, every effect once, never `failed`.
 * Before: the row said `failed / BILL_NOT_PAYABLE: got PAID` while the ledger showed it paid under its own key.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import {
  answersOf,
  drop,
  makeWorkspace,
  type Proc,
  parseResultCsv,
  type SandboxProcess,
  startDaemon,
  startSandboxProcess,
  stopDaemon,
  type Workspace,
  waitFor,
  waitForAnswer,
} from './e2e-harness.js';
import { closedPort } from './helpers/net.js';

const procs: Proc[] = [];
const sandboxes: SandboxProcess[] = [];
afterAll(async () => {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  for (const s of sandboxes) await s.stop();
});

interface KindCase {
  kind: string;
  /**
   * The route whose answer the bank never sends: a fault rule's route, which names the sandbox's route in the
   * interface dialect whatever profile it serves (src/sandbox/profiles.ts), so the same in every profile.
   */
  crashRoute: string;
  effect: string;
  csv: (bank: SandboxProcess) => Promise<string>;
}

const CASES: KindCase[] = [
  {
    kind: 'bill-payments',
    crashRoute: 'POST /baas/api/v1/bill-payments',
    effect: 'bill_paid',
    csv: async () => {
      const barCode = buildBankSlipBarCode({
        bankCode: '341',
        dueDate: '2030-06-30',
        amountCents: 5555,
        freeField: '1090000123456789000055555',
      });
      return `barCode,amount\n${barCode},55.55\n`;
    },
  },
  {
    kind: 'pix-payments',
    crashRoute: 'POST /baas/api/v2/pix/qrcode/payment',
    effect: 'pix_paid',
    csv: async (bank) => {
      const qr = await bank.call('POST', 'dynamicQr', {
        body: { correlationId: randomUUID(), amount: 12.34, description: 'crash' },
      });
      expect(qr.status, qr.text).toBe(200);
      // The BR Code under the profile's name for it (the spec's qrCodePayload, the provider's payloadPix).
      const payload = String(qr.json.qrCodePayload ?? qr.json.payloadPix);
      return `payload,amount\n${payload},12.34\n`;
    },
  },
  {
    kind: 'qr-codes',
    crashRoute: 'POST /baas/api/v2/pix/qrcode/static',
    effect: 'qr_created',
    csv: async () => 'type,correlationId,amount,description\nPIX_STATIC,CRASH-STATIC-1,9.99,Cafe\n',
  },
  {
    kind: 'claims',
    crashRoute: 'POST /indirect-pix/api/v1/dict/claims',
    effect: 'claim_created',
    csv: async () =>
      'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type\n' +
      'EMAIL,bank-crash@example.com,123456-7,0001,CURRENT,123.456.789-09,Maria da Silva,NATURAL\n',
  },
  // Kinds without an IdempotencyKey: the step is looked up (recover) once the bank is back, never sent blind.
  {
    kind: 'charges',
    crashRoute: 'POST /v1/charges',
    effect: 'charge_created',
    csv: async () => 'type,correlationId,amount\nPIX_STATIC,CRASH-CHARGE-1,3.21\n',
  },
  {
    kind: 'charge-voids',
    crashRoute: 'POST /v1/charges/:correlation_id/void',
    effect: 'charge_voided',
    csv: async (bank) => {
      const res = await bank.call('POST', 'charges', {
        body: { type: 'PIX_STATIC', correlationId: 'CRASH-VOID-1', amount: 4.56 },
      });
      expect(res.status, res.text).toBe(200);
      return 'correlationId\nCRASH-VOID-1\n';
    },
  },
  {
    kind: 'claim-cancellations',
    crashRoute: 'POST /indirect-pix/api/v1/dict/claims/:claimId/cancel',
    effect: 'claim_cancelled',
    csv: async (bank) => {
      const started = await bank.call('POST', 'claims', {
        body: {
          type: 'EMAIL',
          key: 'bank-crash-cancel@example.com',
          account: {
            number: '123456-7',
            branch: '0001',
            type: 'CURRENT',
            holder: { document: '12345678909', name: 'Maria da Silva', type: 'NATURAL' },
          },
        },
        idempotencyKey: randomUUID(),
      });
      expect(started.status, started.text).toBe(200);
      const id = String(started.json.id);
      await bank.admin('PATCH', `/claims/${id}`, { status: 'AWAITING_RESOLUTION' });
      return `claimId,participationFlowType,reason\n${id},CLAIMANT,USER_REQUESTED\n`;
    },
  },
];

/**
 * Waits for the sandbox to die on its crash route. A file answered before that never reached it (a row refused before
 * sending, say a payload from a call the sandbox refused): fails at once with the answer, where waiting for the exit
 * would hang until the test's timeout (seen once in the delbank profile, when the Pix case made its QR code in the
 * interface dialect and got 401: the row was invalid, the bank never called, the run timed out at 240 s).
 */
async function bankCrashed(sandbox: SandboxProcess, ws: Workspace, kind: string): Promise<number | string> {
  return waitFor(
    `the bank to die on its crash route (${kind})`,
    async () => {
      const { child } = sandbox.proc;
      if (child.exitCode !== null || child.signalCode !== null) return sandbox.proc.exited;
      const early = (await answersOf(ws, kind, 'crash')).at(-1);
      const file = early?.rejected ?? early?.results.at(-1);
      if (file) {
        throw new Error(`${kind}: answered before the bank crashed: ${await fs.readFile(file, 'utf8')}`);
      }
      return undefined;
    },
    60_000,
  );
}

describe('the bank dies between its commit and its answer, and comes back', () => {
  it('every kind with an effect: the row succeeds (replayed, or looked up), never failed, effect once', async () => {
    const port = await closedPort();
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-e2e-bank-crash-'));
    const dataFile = path.join(dir, 'sandbox.sqlite');
    const ws = await makeWorkspace(`http://127.0.0.1:${port}`, {
      bank: { unreachable: { retryDelaysMs: [200], runMaxWaitMs: 0 } },
    });
    const daemon = startDaemon(ws);
    procs.push(daemon);
    for (const c of CASES) {
      const sandbox = await startSandboxProcess(dataFile, {
        port,
        env: { REMESSA_SANDBOX_CRASH_AFTER_COMMIT: c.crashRoute },
      });
      sandboxes.push(sandbox);
      const csv = await c.csv(sandbox);
      const before = new Set((await sandbox.effects(c.effect)).map((e) => e.key));
      await drop(ws, Buffer.from(csv), `${c.kind}/crash.csv`);
      // The bank commits the effect and dies before answering.
      expect(await bankCrashed(sandbox, ws, c.kind)).toBe('SIGKILL');
      // Down for a while: the daemon's resend is refused and waits (the outcome stays unknown).
      await new Promise((r) => setTimeout(r, 700));
      const back = await startSandboxProcess(dataFile, { port });
      sandboxes.push(back);
      const answer = await waitForAnswer(ws, c.kind, 'crash', 30_000);
      const rows = parseResultCsv(answer.text);
      expect(
        rows.map((r) => [r.status, r.errorCode]),
        `${c.kind}: ${answer.text}`,
      ).toEqual([['succeeded', '']]);
      const effects = (await back.effects(c.effect)).filter((e) => !before.has(e.key));
      expect(effects, c.kind).toHaveLength(1);
      expect(effects[0]!.count).toBe(1);
      await back.stop();
    }
    expect(await stopDaemon(daemon)).toBe(0);
  }, 240_000);
});
