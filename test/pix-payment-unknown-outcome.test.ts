/**
 * A Pix QR payment whose answer was lost (timed out, connection reset): before sending it again or answering the
 * row, remessa looks the payment up by the one identifier it holds before the answer, the endToEndId of its own
 * initialization (single use: a payment made with it is this row's). Found: the row succeeds on it, nothing resent.
 * Certainly absent: resent with the same IdempotencyKey. The bank cannot tell (its read path does not find payments
 * by endToEndId): resent only where the bank is known to answer a repeated key with the first payment
 * (`bank.pixPaymentKeyReplayed`: the interface's reading; not known of the provider's transfers, so not in `delbank`);
 * else the row stays `uncertain` for a person, never `failed`, never paid twice.
 *
 * Real HTTP against the sandbox in process, in the `delbank` dialect (POST /baas/api/v2/transfers, GET
 * /baas/api/v2/transfers/{id}); the sandbox's fault injection loses the answers; its effects ledger says who paid.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AttemptObservation } from '../src/bank/options.js';
import type { BatchKind } from '../src/batches/kind.js';
import { pixPaymentsKind } from '../src/batches/pix-payments.js';
import type { BankProfileName } from '../src/formats/profiles.js';
import type { Locale } from '../src/i18n/index.js';
import { faultsFor } from '../src/sandbox/faults.js';
import { openStore } from '../src/store/store.js';
import { type EngineFileBank, engineFilePerTest } from './helpers/engine-file.js';

/** Fault rules name the route the sandbox's edge rewrites to: the same in both dialects. */
const PAY_ROUTE = 'POST /baas/api/v2/pix/qrcode/payment';

/** Every attempt the client made, in order (the client's observer). */
const attempts: AttemptObservation[] = [];
const dirs: string[] = [];
beforeEach(() => {
  attempts.length = 0;
});
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function bankOf(profile: BankProfileName, client: EngineFileBank['client'] = {}): EngineFileBank {
  return { sandbox: { profile }, client: { profile, onAttempt: (a) => attempts.push(a), ...client } };
}

/** The world of one describe: a sandbox, a client and a fresh SQLite store per test. */
function world(prefix: string, bank: EngineFileBank) {
  const ef = engineFilePerTest(prefix, bank);
  beforeEach(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), `remessa-${prefix}-store-`));
    dirs.push(dir);
    ef.useStore(await openStore(path.join(dir, 'remessa.sqlite')));
  });
  /** Pays one dynamic QR code of R$ 25,00 made by the sandbox, with `rules` as the bank's faults meanwhile. */
  async function payOne(rules: Parameters<ReturnType<typeof faultsFor>['set']>[0], locale: Locale = 'en') {
    const qr = await ef.client.qrCodes.createDynamic({
      correlationId: '5b9d2f4e-8a1c-4e3b-9f6d-2c7a1e0b3d4f',
      amountCents: 2500,
      description: 'unknown outcome',
    });
    attempts.length = 0;
    faultsFor(ef.sandbox.ctx).set(rules);
    const { row } = await ef.runFile(
      pixPaymentsKind as BatchKind<never>,
      `payload,amount\n${qr.qrCodePayload},25.00\n`,
      {
        locale,
      },
    );
    return row;
  }
  const posts = () => attempts.filter((a) => a.method === 'POST' && !a.path.includes('initialization'));
  const gets = () => attempts.filter((a) => a.method === 'GET');
  const paid = () => ef.sandbox.ctx.ledger.counts({ kind: 'pix_paid' });
  return { ef, payOne, posts, gets, paid };
}

describe('delbank: the transfer is looked up by its endToEndId before anything is resent', () => {
  const w = world('pix-unknown-delbank', bankOf('delbank'));

  it('answer lost after the transfer went through: found by the lookup, the row succeeds, nothing is resent', async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, dropAfterCommitRate: 1, times: 1 }]);
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    expect(w.paid()).toEqual([{ kind: 'pix_paid', key: expect.any(String), count: 1 }]);
    // One transfer sent, then read back at the provider's path by the row's own endToEndId. Before: the transfer
    // was sent again on the strength of a key the provider is not known to replay.
    expect(w.posts().map((a) => a.path)).toEqual(['/baas/api/v2/transfers']);
    expect(w.gets().map((a) => a.path)).toEqual([`/baas/api/v2/transfers/${row.outputs.endToEndId}`]);
    expect(row.outputs.paymentId).toBeTruthy();
    expect(row.outputs.paidAmount).toBe(2500);
  });

  it('connection reset before the bank processed it: the lookup proves it absent, resent with the same key, paid once', async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, resetRate: 1, times: 1 }]);
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    expect(w.paid()).toEqual([{ kind: 'pix_paid', key: expect.any(String), count: 1 }]);
    expect(w.posts()).toHaveLength(2);
    expect(w.gets()).toHaveLength(1);
  });
});

describe('delbank: a bank whose read path does not find the transfer by endToEndId', () => {
  // The provider's clients read a transfer by a "transfer identifier" (the Python sample passes a UUID): a bank that
  // finds it only by its own id answers a bare 404 to the endToEndId, which proves nothing. Simulated by a read path
  // the sandbox does not serve.
  const w = world(
    'pix-unknown-nolookup',
    bankOf('delbank', { paths: { pixPaymentGet: '/baas/api/v2/elsewhere/{id}' } }),
  );

  it('answer lost after the transfer went through: uncertain, never resent, paid once', async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, dropAfterCommitRate: 1, times: 1 }]);
    expect(row.state).toBe('uncertain');
    expect(row.errorCode).toBe('PIX_PAYMENT_NOT_LOOKED_UP');
    expect(row.errorMessage).toContain(String(row.outputs.endToEndId));
    expect(row.errorMessage).toContain('bank.pixPaymentKeyReplayed');
    expect(w.posts()).toHaveLength(1);
    expect(w.paid()).toHaveLength(1);
  });

  it('connection reset before the bank processed it: still uncertain (remessa cannot tell), never failed, not resent', async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, resetRate: 1, times: 1 }]);
    expect(row.state).toBe('uncertain');
    expect(row.errorCode).toBe('PIX_PAYMENT_NOT_LOOKED_UP');
    expect(w.posts()).toHaveLength(1);
    expect(w.paid()).toHaveLength(0);
  });

  it("pt-BR: the row says, in the finance user's words, what to check at the bank", async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, dropAfterCommitRate: 1, times: 1 }], 'pt-BR');
    expect(row.state).toBe('uncertain');
    expect(row.errorMessage).toContain('extrato');
    expect(row.errorMessage).toContain(String(row.outputs.endToEndId));
  });
});

describe('delbank, the key known to be replayed (bank.pixPaymentKeyReplayed: true)', () => {
  const w = world(
    'pix-unknown-replayed',
    bankOf('delbank', { paths: { pixPaymentGet: '/baas/api/v2/elsewhere/{id}' }, pixPaymentKeyReplayed: true }),
  );

  it('the lookup cannot tell: resent with the same key, the bank answers the first payment, paid once', async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, dropAfterCommitRate: 1, times: 1 }]);
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    expect(w.posts()).toHaveLength(2);
    expect(w.paid()).toEqual([{ kind: 'pix_paid', key: expect.any(String), count: 1 }]);
  });
});

describe('interface: the same lookup first, at the sandbox path', () => {
  const w = world('pix-unknown-interface', bankOf('interface'));

  it('answer lost after the payment went through: found, nothing resent', async () => {
    const row = await w.payOne([{ route: PAY_ROUTE, dropAfterCommitRate: 1, times: 1 }]);
    expect(row.state, String(row.errorMessage)).toBe('succeeded');
    expect(w.posts().map((a) => a.path)).toEqual(['/baas/api/v2/pix/qrcode/payment']);
    expect(w.gets().map((a) => a.path)).toEqual([`/baas/api/v2/pix/qrcode/payment/${row.outputs.endToEndId}`]);
    expect(w.paid()).toHaveLength(1);
  });
});
