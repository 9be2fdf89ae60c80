/**
 * Rule 9 of src/store/rows.ts: a read step's answer (a bill's lookup) is not a commit of its own; it rides in the
 * transaction of the row's next write, the next step's intent above all. Whenever the row does not go on to that
 * intent (held for approval, stopped, waiting for the bank, failed, uncertain), the answer is written with whatever
 * the row writes instead, so that previews and result files show the lookup's outputs. On both engines.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ServiceUnreachableError } from '../src/bank/errors.js';
import { type BatchKind, type StepContext, StepOutcomeError } from '../src/batches/kind.js';
import { RequestQueue } from '../src/queue/index.js';
import type { ProcessBatchOptions } from '../src/runner/engine.js';
import { StoreError } from '../src/store/db.js';
import type { Store } from '../src/store/index.js';
import { type IdRow, type IdRowStep, idRowKind, processIdRows } from './helpers/fake-kind.js';
import { interceptWrites, skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();

type Row = IdRow;
type Step = IdRowStep;

/** A bill payment's shape: a lookup (read) then a payment (money, keyed). */
function lookupThenPay(lookup: Step['run'], pay: Step['run']): BatchKind<Row> {
  return idRowKind(
    [
      { name: 'lookup', effect: 'read', usesIdempotencyKey: false, run: lookup },
      { name: 'pay', effect: 'money', usesIdempotencyKey: true, run: pay },
    ],
    ['looked', 'paid'],
  );
}

const looked = async (ctx: StepContext<Row>) => ({ looked: `L-${ctx.row.id}` });

describe.each(engines)('a read answer rides in the row next write ($name)', (engine) => {
  skipIfAsked(engine);
  let dir: string;
  let store: Store;
  let queues: RequestQueue[];

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'remessa-read-answers-'));
    store = await engine.open();
    queues = [];
  });
  afterEach(async () => {
    await store.close();
    for (const q of queues) q.close();
    rmSync(dir, { recursive: true, force: true });
  });

  function run(kind: BatchKind<Row>, ids: string[], extra: Partial<ProcessBatchOptions> = {}) {
    const queue = new RequestQueue({ concurrency: 4, maxRowsInFlight: 8 });
    queues.push(queue);
    return processIdRows(store, kind, ids, queue, path.join(dir, 'files'), extra);
  }

  /** Counts the store's writes (each a savepoint of a group commit) from now on. */
  function countWrites(): () => number {
    let n = 0;
    const real = store.write.bind(store);
    store.write = ((fn, options) => {
      n++;
      return real(fn, options);
    }) as typeof store.write;
    return () => n;
  }

  async function expectLookupKept(line: number, state: string): Promise<void> {
    const row = (await store.getRow('b', line))!;
    expect(row.state).toBe(state);
    expect(row.outputs).toMatchObject({ looked: `L-${row.record.id}` });
    expect((await store.getSteps('b', line)).get('lookup')?.state).toBe('done');
  }

  it('a row is two writes, not three: the lookup is stored with the intent, durable before the payment leaves', async () => {
    const writes = countWrites();
    const seen: string[] = [];
    const kind = lookupThenPay(looked, async (ctx) => {
      // The intent is committed before the request leaves; the lookup's answer with it.
      const steps = await store.getSteps('b', 2);
      seen.push(`${steps.get('lookup')?.state}/${steps.get('pay')?.state}`);
      return { paid: `P-${ctx.row.id}` };
    });
    const r = await run(kind, ['a']);
    expect(r.counts.succeeded).toBe(1);
    expect(seen).toEqual(['done/intent']);
    expect(writes()).toBe(2);
    expect((await store.getRow('b', 2))!.outputs).toEqual({ looked: 'L-a', paid: 'P-a' });
  });

  it('held for approval: the lookup is stored with the park (the preview shows it), nothing paid', async () => {
    let paid = 0;
    const kind = lookupThenPay(looked, async () => {
      paid++;
      return { paid: 'x' };
    });
    const r = await run(kind, ['a', 'b'], { gate: async () => 'hold' });
    expect(r.held).toBe(true);
    expect(paid).toBe(0);
    await expectLookupKept(2, 'pending');
    await expectLookupKept(3, 'pending');
  });

  it('stopped after the lookup: stored with the park; the next run pays without looking up again', async () => {
    const stop = new AbortController();
    let lookups = 0;
    let paid = 0;
    const kind = lookupThenPay(
      async (ctx) => {
        lookups++;
        stop.abort();
        return looked(ctx);
      },
      async () => {
        paid++;
        return { paid: 'x' };
      },
    );
    const first = await run(kind, ['a'], { signal: stop.signal });
    expect(first.stopped).toBe(true);
    expect(paid).toBe(0);
    await expectLookupKept(2, 'pending');
    const second = await run(kind, ['a']);
    expect(second.counts.succeeded).toBe(1);
    expect([lookups, paid]).toEqual([1, 1]);
  });

  it('the payment refused: the row failed, with the lookup stored', async () => {
    const kind = lookupThenPay(looked, async () => {
      throw new StepOutcomeError('failed', 'BILL_REFUSED', 'refused');
    });
    const r = await run(kind, ['a']);
    expect(r.counts.failed).toBe(1);
    await expectLookupKept(2, 'failed');
    expect((await store.getSteps('b', 2)).get('pay')?.state).toBe('failed');
  });

  it('the intent could not be stored: the row is left uncertain with the lookup stored, nothing sent', async () => {
    let paid = 0;
    const kind = lookupThenPay(looked, async () => {
      paid++;
      return { paid: 'x' };
    });
    let failures = 0;
    interceptWrites(store, {
      recordIntent: () => {
        failures++;
        throw new StoreError('STORE_IO', 'disk I/O error (injected)');
      },
    });
    const r = await run(kind, ['a']);
    expect(failures).toBe(1);
    expect(paid).toBe(0);
    expect(r.counts.uncertain).toBe(1);
    await expectLookupKept(2, 'uncertain');
    expect((await store.getSteps('b', 2)).get('pay')).toBeUndefined();
  });

  it('the bank unreachable at the payment: the row waits, with the lookup stored', async () => {
    // The lookup's own answer says the bank is reachable (the gate is up), so the payment's intent is written, with
    // the lookup, before the connection is refused: what is checked is that the waiting row keeps it.
    let tries = 0;
    const kind = lookupThenPay(looked, async () => {
      tries++;
      throw new ServiceUnreachableError('connect ECONNREFUSED (test)', {
        method: 'POST',
        path: '/pay',
        reason: 'refused',
      });
    });
    const r = await run(kind, ['a'], { unreachable: { retryDelaysMs: [60_000], maxWaitMs: 200 } });
    expect(r.complete).toBe(false);
    expect(tries).toBe(1);
    await expectLookupKept(2, 'waiting');
    expect((await store.getSteps('b', 2)).get('pay')?.state).toBe('not_sent');
  });
});
