/**
 * The sandbox, like a real bank, commits an effect and the stored answer of its IdempotencyKey in ONE transaction
 * (src/sandbox/idempotency.ts): killed after the effect committed and before the answer left, it replays that first
 * answer to the keyed resend once restarted, on every keyed route with an effect. Before, the answer was stored only
 * when sent: the restarted bank forgot the key, ran the resend afresh, and answered a bill it had just paid with
 * 409 BILL_NOT_PAYABLE (got PAID).
 *
 * The sandbox runs in its own process (tsx src/cli.ts sandbox) with REMESSA_SANDBOX_CRASH_AFTER_COMMIT set to the
 * route under test: it SIGKILLs itself once that route's handler has committed, before answering. Each restart arms
 * the crash of the next route, so one chain of processes covers them all.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/options.js';
import { type SandboxProcess, startSandboxProcess } from './e2e-harness.js';

const started: SandboxProcess[] = [];

afterAll(async () => {
  for (const s of started) if (s.proc.child.exitCode === null && s.proc.child.signalCode === null) await s.stop();
});

interface Answer {
  status: number;
  replayed: boolean;
  text: string;
  json: Record<string, unknown>;
}

async function post(url: string, route: string, body: unknown, key?: string): Promise<Answer> {
  const res = await fetch(`${url}${route}`, {
    method: 'POST',
    headers: {
      'x-service-api-key': SANDBOX_PUBLIC_API_KEY,
      'content-type': 'application/json',
      ...(key ? { IdempotencyKey: key } : {}),
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    replayed: res.headers.get('idempotent-replayed') === 'true',
    text,
    json: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

/** One keyed request with an effect: what it needs first (never on the crashing route), and its request. */
interface KeyedCase {
  name: string;
  /** `METHOD /pattern` armed as the crash point. */
  crashRoute: string;
  /** The request (built from what `prepare` returned, on the sandbox now running). */
  prepare(url: string, earlier: Map<string, Answer>): Promise<{ route: string; body: unknown }>;
  /** The ledger entry the effect leaves, keyed by the IdempotencyKey. */
  effect?: string;
}

const bill = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-06-30',
  amountCents: 12_345,
  freeField: '1090000123456789000077777',
});

const claimBody = {
  type: 'EMAIL',
  key: 'crash-test@example.com',
  account: {
    number: '123456-7',
    branch: '0001',
    type: 'CURRENT',
    holder: { document: '12345678909', name: 'Maria da Silva', type: 'NATURAL' },
  },
};

const CASES: KeyedCase[] = [
  {
    name: 'bill payment',
    crashRoute: 'POST /baas/api/v1/bill-payments',
    effect: 'bill_paid',
    prepare: async () => ({ route: '/baas/api/v1/bill-payments', body: { barCode: bill, amount: 123.45 } }),
  },
  {
    name: 'Pix QR payment initialization',
    crashRoute: 'POST /baas/api/v2/pix/qrcode/payment-initialization',
    prepare: async (url) => {
      const qr = await post(url, '/baas/api/v1/pix/qrcode/dynamic', {
        correlationId: randomUUID(),
        amount: 10.5,
        description: 'crash test',
      });
      expect(qr.status, qr.text).toBe(200);
      return { route: '/baas/api/v2/pix/qrcode/payment-initialization', body: { payload: qr.json.qrCodePayload } };
    },
  },
  {
    name: 'Pix QR payment',
    crashRoute: 'POST /baas/api/v2/pix/qrcode/payment',
    effect: 'pix_paid',
    prepare: async (_url, earlier) => {
      const init = earlier.get('Pix QR payment initialization')!.json;
      return {
        route: '/baas/api/v2/pix/qrcode/payment',
        body: {
          amount: 10.5,
          description: 'crash test',
          endToEndId: init.endToEndId,
          transactionId: init.transactionId,
          initiationType: init.initiationType,
        },
      };
    },
  },
  {
    name: 'static QR code',
    crashRoute: 'POST /baas/api/v2/pix/qrcode/static',
    effect: 'qr_created',
    prepare: async () => ({
      route: '/baas/api/v2/pix/qrcode/static',
      body: { correlationId: 'crash-static-1', amount: 7.25, formatResponse: 'PAYLOAD_AND_QRCODE' },
    }),
  },
  {
    name: 'claim start',
    crashRoute: 'POST /indirect-pix/api/v1/dict/claims',
    effect: 'claim_created',
    prepare: async () => ({ route: '/indirect-pix/api/v1/dict/claims', body: claimBody }),
  },
  {
    name: 'claim cancel',
    crashRoute: 'POST /indirect-pix/api/v1/dict/claims/:claimId/cancel',
    effect: 'claim_cancelled',
    prepare: async (url, earlier) => {
      const id = String(earlier.get('claim start')!.json.id);
      const res = await fetch(`${url}/__sandbox/claims/${id}`, {
        method: 'PATCH',
        headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'AWAITING_RESOLUTION' }),
      });
      expect(res.status, await res.text()).toBe(200);
      return {
        route: `/indirect-pix/api/v1/dict/claims/${id}/cancel`,
        body: { participationFlowType: 'CLAIMANT', reason: 'USER_REQUESTED' },
      };
    },
  },
];

describe('the bank killed between its commit and its answer', () => {
  it('replays the first outcome to the keyed resend after a restart, on every keyed route with an effect', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'remessa-sandbox-crash-'));
    const dataFile = path.join(dir, 'sandbox.sqlite');
    const start = async (crashRoute?: string) => {
      const s = await startSandboxProcess(dataFile, {
        // The interface's dialect whatever REMESSA_TEST_PROFILE says: the cases are its routes, sent with its header.
        profile: 'interface',
        env: crashRoute ? { REMESSA_SANDBOX_CRASH_AFTER_COMMIT: crashRoute } : {},
      });
      started.push(s);
      return s;
    };
    const answers = new Map<string, Answer>();
    let pending: { c: KeyedCase; route: string; body: unknown; key: string } | undefined;
    let sandbox = await start(CASES[0]!.crashRoute);
    for (let i = 0; i <= CASES.length; i++) {
      if (pending) {
        // The resend with the same key, to the restarted bank: the first outcome, replayed; the effect once.
        const again = await post(sandbox.url, pending.route, pending.body, pending.key);
        expect(again.status, `${pending.c.name}: ${again.text}`).toBe(200);
        expect(again.replayed, `${pending.c.name} replayed`).toBe(true);
        answers.set(pending.c.name, again);
        if (pending.c.effect) {
          const effects = (await sandbox.effects(pending.c.effect)).filter((e) => e.key === pending!.key);
          expect(effects, pending.c.name).toEqual([{ kind: pending.c.effect, key: pending.key, count: 1 }]);
        }
        // A third send: still the same bytes.
        const third = await post(sandbox.url, pending.route, pending.body, pending.key);
        expect(third.text).toBe(again.text);
        pending = undefined;
      }
      const c = CASES[i];
      if (!c) break;
      const { route, body } = await c.prepare(sandbox.url, answers);
      const key = randomUUID();
      // The bank dies after committing: the client hears nothing.
      await expect(post(sandbox.url, route, body, key), c.name).rejects.toThrow();
      expect(await sandbox.proc.exited, c.name).toBe('SIGKILL');
      pending = { c, route, body, key };
      sandbox = await start(CASES[i + 1]?.crashRoute);
    }
    await sandbox.stop();
  }, 120_000);
});
