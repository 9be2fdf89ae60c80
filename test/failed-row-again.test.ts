/**
 * A `failed` row is certainly not done, so the same row dropped again in a later file is sent again. It must reach
 * the bank as a new request: a bank that keeps every answer of a key (Stripe's model, the sandbox's default) replays
 * the first refusal to the same key forever, and the row would repeat an answer that is no longer true ("the claim is
 * still PENDIG") however often it is dropped. The sandbox runs in process.
 */
import { randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { claimCancellationsKind } from '../src/batches/claim-cancellations.js';
import type { BatchKind } from '../src/batches/kind.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
// A sandbox, a client and the test's store, per test; one file of a batch of its own at a time through the engine.
const ef = engineFilePerTest('failed-again');
/** One file of `kind` through the engine (two attempts a step); its row of line 2. */
const runFile = async (kind: BatchKind<never>, csv: string) => (await ef.runFile(kind, csv, { maxAttempts: 2 })).row;

describe.each(engines)('a failed row dropped again ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });

  it('a claim cancellation refused while the claim was pending succeeds once the claim can be cancelled', async () => {
    const claim = await ef.client.claims.start(
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

    await ef.moveClaim(claim.id, 'AWAITING_RESOLUTION');
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
