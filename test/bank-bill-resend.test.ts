/**
 * A bill payment whose outcome is unknown is resent with the same IdempotencyKey, even though the bill now reads
 * PAID (the first attempt paid it): the bank answers with the first outcome and the ledger shows one payment.
 * Regression: the pipeline used to look the bill up, see PAID and give the row up as uncertain.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { RequestValidationError } from '../src/bank/errors.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

let sandbox: RunningSandbox;
let client: BankClient;

beforeAll(async () => {
  sandbox = await startSandbox();
  client = new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY });
});

afterAll(async () => {
  await client.close();
  await sandbox.close();
});

describe('resending a bill payment after an unknown outcome', () => {
  it('replays the first payment with the same key; without the flag the client refuses a PAID bill', async () => {
    const line = SANDBOX_BILL_FIXTURES.PENDING_PAYMENT.digitableLine;
    const key = randomUUID();
    const before = await client.billPayments.lookup(line);
    const first = await client.billPayments.pay(before, {
      amountCents: before.chargedAmountCents,
      idempotencyKey: key,
    });

    const after = await client.billPayments.lookup(line);
    expect(after.status).toBe('PAID');
    await expect(
      client.billPayments.pay(after, { amountCents: before.chargedAmountCents, idempotencyKey: key }),
    ).rejects.toBeInstanceOf(RequestValidationError);

    const again = await client.billPayments.pay(after, {
      amountCents: before.chargedAmountCents,
      idempotencyKey: key,
      resendOfUnknownOutcome: true,
    });
    expect(again.id).toBe(first.id);
    expect(sandbox.ctx.ledger.count('bill_paid', key)).toBe(1);
  });
});
