/**
 * What remessa's own checks before a payment tell a person (src/bank/bill-payments.ts `checkBillPayment`,
 * src/bank/pix-payments.ts `toPixPaymentRequest`): said in the user's language, money as a person reads it.
 * Regression: a bill row with the wrong amount was answered, under pt-BR, "amountCents: expected the charged amount
 * 4321 cents (bill ... does not allow partial payment), got 123": English, an internal field name, and cents.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { RequestValidationError } from '../src/bank/errors.js';
import { toPixPaymentRequest } from '../src/bank/pix-payments.js';
import { billPaymentsKind } from '../src/batches/bill-payments.js';
import type { BatchKind } from '../src/batches/kind.js';
import { readBatch } from '../src/csv/reader.js';
import { buildBankSlipBarCode } from '../src/formats/index.js';
import type { Locale } from '../src/i18n/index.js';
import { RequestQueue } from '../src/queue/index.js';
import { processBatch } from '../src/runner/engine.js';
import { SANDBOX_BILL_FIXTURES } from '../src/sandbox/bills.js';
import { SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { openStore, type Store } from '../src/store/store.js';
import { sandboxPerTest } from './helpers/sandbox.js';

const bank = sandboxPerTest({ sandbox: { port: 0 }, client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let dir: string;
let client: BankClient;
let store: Store;
let queue: RequestQueue;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-own-checks-'));
  queue = new RequestQueue({ concurrency: 2 });
  ({ client } = await bank.setup());
  store = await openStore(path.join(dir, 'remessa.sqlite'));
});
afterEach(async () => {
  await store?.close();
  queue.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A bill of R$ 43,21 that does not allow partial payment. */
const BAR_CODE = buildBankSlipBarCode({
  bankCode: '341',
  dueDate: '2030-12-31',
  amountCents: 4321,
  freeField: '1090000123456789000420000',
});

/** One bill payment row (`csv`'s line 2) through the engine, in `locale`; its stored row. */
async function billRow(csv: string, locale: Locale) {
  const file = path.join(dir, `bill-payments-${locale}.csv`);
  writeFileSync(file, csv);
  const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
  const reader = await readBatch(file, { columns: billPaymentsKind.columns });
  try {
    await processBatch({
      store,
      kind: billPaymentsKind as BatchKind<never>,
      batchId,
      fileName: path.basename(file),
      input: reader,
      client,
      queue,
      filesDir: path.join(dir, 'files'),
      accountId: 'acc-1',
      retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 2, maxRetryAfterMs: 1 },
      locale,
    });
    return (await store.getRow(batchId, 2))!;
  } finally {
    reader.close();
  }
}

describe("remessa's own checks before paying a bill", () => {
  it('a wrong amount: the charged amount and the row amount in reais, in pt-BR', async () => {
    const row = await billRow(`barCode,amount\n${BAR_CODE},1.23\n`, 'pt-BR');
    expect(row.state).toBe('failed');
    expect(row.errorCode).toBe('BANK_AMOUNT_OUT_OF_RANGE');
    expect(row.errorMessage).toBe(
      `Esperava o valor cobrado do boleto, R$ 43,21 (este boleto não aceita pagamento parcial), veio R$ 1,23`,
    );
  });

  it('the same in English', async () => {
    const row = await billRow(`barCode,amount\n${BAR_CODE},1.23\n`, 'en');
    expect(row.errorMessage).toBe(
      'Expected the charged amount of the bill, R$43.21 (this bill does not allow partial payment), got R$1.23',
    );
  });

  it('a bill that is not payable: its status as the bank gave it, explained', async () => {
    const row = await billRow(`barCode,amount\n${SANDBOX_BILL_FIXTURES.BLOCKED_PAYMENT.barCode},50.00\n`, 'pt-BR');
    expect(row.state).toBe('failed');
    expect(row.errorCode).toBe('BANK_BILL_NOT_PAYABLE');
    expect(row.errorMessage).toBe(
      'Esperava um boleto em aberto, a pagar (PENDING_PAYMENT); a consulta ao banco diz BLOCKED_PAYMENT: nada foi enviado',
    );
  });
});

describe("remessa's own checks before paying a Pix QR code", () => {
  it("an amount other than the QR code's own fixed amount: in reais", () => {
    const init = {
      endToEndId: 'E1234567820301231000000000000001',
      transactionId: 't-1',
      type: 'STATIC' as const,
      status: 'ACTIVE',
      allowChangeAmount: false,
      amountCents: 1050,
    };
    const err = (() => {
      try {
        toPixPaymentRequest(init as never, { amountCents: 999 });
      } catch (e) {
        return e;
      }
    })() as RequestValidationError;
    expect(err).toBeInstanceOf(RequestValidationError);
    expect(err.describe('pt-BR')).toBe(
      'Esperava o valor do próprio QR code, R$ 10,50 (ele não aceita outro valor), veio R$ 9,99',
    );
  });
});
