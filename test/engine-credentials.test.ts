/**
 * A 401 never makes a row `failed`, not even after an attempt of unknown outcome (src/runner/engine.ts, "the bank
 * refuses remessa's credentials"): the resend with the row's key, or the look-up of a step without one, refused for
 * the key says nothing of what the first attempt did. The row stays `uncertain` (its step `unknown`) until the key
 * is accepted again; then the next run learns the outcome as it learns any: the bank replays the payment, or the
 * look-up finds the charge. Real HTTP to the sandbox in process, the client's key swapped between two attempts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import { chargesKind } from '../src/batches/charges.js';
import type { BatchKind } from '../src/batches/kind.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import { bankGateOf, ENGINE_CODES } from '../src/runner/engine.js';
import { faultsFor } from '../src/sandbox/faults.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const ef = engineFilePerTest('credentials');

const WRONG_KEY = 'rotated-meanwhile-0000';
/** As `remessa run` has it: no wait for a person to fix the key. */
const RUN = { credentialsRefused: { retryEveryMs: 60_000, waitForCredentials: false } };

const BAR_CODE = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-12-31',
  amountCents: 5432,
  freeField: '1090000123456789000430000',
});
const CHARGE_CSV =
  'type,correlationId,amount,dueDate,yourNumber,payer.name,payer.document,payer.address.zipCode,' +
  'payer.address.publicPlace,payer.address.city,payer.address.state\n' +
  'BANKSLIP,cred-charge-1,150.00,2027-01-15,NF-1,Maria da Silva,529.982.247-25,01310-100,Av Paulista 1000,Sao Paulo,SP\n';

/** The next `run`: a process of its own, so a gate of its own (this test's queue keeps the last run's). */
function nextRun(): void {
  ef.client.useApiKey(SANDBOX_PUBLIC_API_KEY);
  bankGateOf(ef.queue).reached();
}

describe.each(engines)('a 401 after an attempt of unknown outcome ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });

  it('a keyed resend refused for the key: uncertain, never failed; the next run gets the payment replayed', async () => {
    faultsFor(ef.sandbox.ctx).set([{ route: 'POST /baas/api/v1/bill-payments', dropAfterCommitRate: 1, times: 1 }]);
    const csv = `barCode,amount\n${BAR_CODE},54.32\n`;
    const { row, result } = await ef.runFile(billPaymentsKind as BatchKind<never>, csv, {
      ...RUN,
      // The answer lost; before the resend, the key is rotated at the bank.
      between: async () => ef.client.useApiKey(WRONG_KEY),
    });
    expect(row.state).toBe('uncertain');
    expect(row.errorCode).toBe(ENGINE_CODES.unknownAfterRetries);
    expect(row.errorMessage).toContain("the bank refuses remessa's credentials now");
    expect(row.errorMessage).not.toContain(WRONG_KEY);
    expect(result.credentialsRefused).toBe(true);
    expect((await ef.store.getSteps(row.batchId, 2)).get('pay')?.state).toBe('unknown');

    nextRun();
    const again = await ef.runFile(billPaymentsKind as BatchKind<never>, csv, RUN);
    expect(again.row.state).toBe('succeeded');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'bill_paid' })).toEqual([
      { kind: 'bill_paid', key: row.idempotencyKey, count: 1 },
    ]);
  });

  it('a look-up refused for the key: uncertain, never failed; the next run finds the charge, created once', async () => {
    faultsFor(ef.sandbox.ctx).set([{ route: 'POST /v1/charges', dropAfterCommitRate: 1, times: 1 }]);
    const { row } = await ef.runFile(chargesKind as BatchKind<never>, CHARGE_CSV, {
      ...RUN,
      between: async () => ef.client.useApiKey(WRONG_KEY),
    });
    expect(row.state).toBe('uncertain');
    expect(row.errorMessage).toContain('HTTP 401');
    expect((await ef.store.getSteps(row.batchId, 2)).get('create')?.state).toBe('unknown');

    nextRun();
    const again = await ef.runFile(chargesKind as BatchKind<never>, CHARGE_CSV, RUN);
    expect(again.row.state).toBe('succeeded');
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'charge_created' }).map((e) => e.count)).toEqual([1]);
  });
});
