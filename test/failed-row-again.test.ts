/**
 * A `failed` row is certainly not done, so the same row dropped again in a later file is sent again. It must reach
 * the bank as a new request: a bank that keeps every answer of a key (Stripe's model, the sandbox's default) replays
 * the first refusal to the same key forever, and the row would repeat an answer that is no longer true ("the claim is
 * still PENDIG") however often it is dropped. The sandbox runs in process.
 */
import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BankClient } from '../src/bank/client.js';
import { claimCancellationsKind } from '../src/batches/claim-cancellations.js';
import type { BatchKind } from '../src/batches/kind.js';
import { readBatch } from '../src/csv/reader.js';
import { RequestQueue } from '../src/queue/index.js';
import { processBatch } from '../src/runner/engine.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import type { Store } from '../src/store/index.js';
import { sandboxPerTest } from './helpers/sandbox.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const bank = sandboxPerTest({ sandbox: { port: 0 }, client: { apiKey: SANDBOX_PUBLIC_API_KEY } });
let dir: string;
let sandbox: RunningSandbox;
let client: BankClient;
let store: Store;
let queue: RequestQueue;

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'remessa-failed-again-'));
  queue = new RequestQueue({ concurrency: 2 });
  ({ sandbox, client } = await bank.setup());
});
afterEach(async () => {
  await store?.close();
  queue.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One file of `kind` (content `csv`, its own batch) through the engine; its row of line 2. */
async function runFile(kind: BatchKind<never>, csv: string) {
  const file = path.join(dir, `${kind.name}.csv`);
  writeFileSync(file, csv);
  const batchId = createHash('sha256').update(readFileSync(file)).digest('hex');
  const reader = await readBatch(file, { columns: kind.columns });
  try {
    await processBatch({
      store,
      kind,
      batchId,
      fileName: path.basename(file),
      input: reader,
      client,
      queue,
      filesDir: path.join(dir, 'files'),
      accountId: 'acc-1',
      retry: { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 20, maxRetryAfterMs: 10 },
      random: () => 0.5,
      sleep: async () => undefined,
      locale: 'en',
    });
    return (await store.getRow(batchId, 2))!;
  } finally {
    reader.close();
  }
}

async function moveClaim(claimId: string, status: string): Promise<void> {
  const res = await request(`${sandbox.url}/__sandbox/claims/${claimId}`, {
    method: 'PATCH',
    headers: { 'x-service-api-key': SANDBOX_PUBLIC_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ status }),
  });
  expect(res.statusCode).toBe(200);
  await res.body.dump();
}

describe.each(engines)('a failed row dropped again ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    store = await engine.open();
  });

  it('a claim cancellation refused while the claim was pending succeeds once the claim can be cancelled', async () => {
    const claim = await client.claims.start(
      {
        type: 'EMAIL',
        key: `again-${randomUUID().slice(0, 8)}@example.com`,
        account: {
          number: '123456-7',
          branch: '0001',
          type: 'CURRENT',
          holder: { document: '12345678909', name: 'Maria da Silva', type: 'NATURAL' },
        },
      },
      randomUUID(),
    );
    const kind = claimCancellationsKind as unknown as BatchKind<never>;
    const first = await runFile(kind, `claimId,participationFlowType,reason\n${claim.id},CLAIMANT,USER_REQUESTED\n`);
    expect(first.state).toBe('failed');
    expect(first.errorMessage).toContain('CLAIM_CANCELLATION_IS_NOT_ALLOWED');

    await moveClaim(claim.id, 'AWAITING_RESOLUTION');
    // The same cancellation, dropped again the next day (another file: the reason written otherwise).
    const again = await runFile(kind, `claimId,participationFlowType,reason\n${claim.id},CLAIMANT,user_requested\n`);
    // Before: failed again with the first day's refusal, replayed by the bank to the same key ("still PENDIG").
    expect(again.errorMessage ?? '').not.toContain('PENDIG');
    expect(again.state).toBe('succeeded');
    expect(again.idempotencyKey).not.toBe(first.idempotencyKey);

    // And a succeeded row dropped again is still its duplicate: nothing sent.
    const third = await runFile(kind, `claimId,participationFlowType,reason\n${claim.id},CLAIMANT,FRAUD\n`);
    expect(third.state).toBe('duplicate');
  });
});
