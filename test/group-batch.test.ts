/**
 * src/store/group-batch.ts: a group's writes run one at a time in their order; a write may park at a statement that
 * serves the group's rows together, sent once every write has ended or parked; parked writes go on one at a time.
 * A failure ends the group, and every write still parked ends with it (no promise left hanging, none unhandled).
 */
import { describe, expect, it } from 'vitest';
import { GroupBatch, type GroupStatement } from '../src/store/group-batch.js';

/** A statement that records each call's entries and answers each entry doubled. */
function doubling(calls: number[][]): GroupStatement<number, number> {
  return {
    run: async (entries) => {
      calls.push([...entries]);
      await Promise.resolve();
      return entries.map((e) => e * 2);
    },
  };
}

describe('GroupBatch', () => {
  it('runs writes in order, one at a time; the parked ones share one statement, then go on in order', async () => {
    const batch = new GroupBatch();
    const calls: number[][] = [];
    const statement = doubling(calls);
    const log: string[] = [];
    const write = async (i: number) => {
      log.push(`start ${i}`);
      await Promise.resolve(); // a statement of its own first
      log.push(`own ${i}`);
      if (i === 1) return 'alone'; // a write that never parks
      const doubled = await batch.park(statement, i);
      log.push(`resumed ${i} with ${doubled}`);
      await Promise.resolve();
      log.push(`end ${i}`);
      return `write ${i}: ${doubled}`;
    };
    const results = await batch.run(3, write);
    expect(results).toEqual(['write 0: 0', 'alone', 'write 2: 4']);
    expect(calls).toEqual([[0, 2]]);
    // No write's own code runs between another's start and its park or end.
    expect(log).toEqual([
      'start 0',
      'own 0',
      'start 1',
      'own 1',
      'start 2',
      'own 2',
      'resumed 0 with 0',
      'end 0',
      'resumed 2 with 4',
      'end 2',
    ]);
  });

  it('a write that parks before its start returns (nothing awaited first) is seen parked', async () => {
    const batch = new GroupBatch();
    const calls: number[][] = [];
    const statement = doubling(calls);
    // Not async before its park: the park happens inside start(i) itself.
    const results = await batch.run(4, (i) => batch.park(statement, i + 1));
    expect(results).toEqual([2, 4, 6, 8]);
    expect(calls).toEqual([[1, 2, 3, 4]]);
  });

  it('a write that parks again joins the next round; each kind of statement is sent once a round', async () => {
    const batch = new GroupBatch();
    const first: number[][] = [];
    const second: number[][] = [];
    const a = doubling(first);
    const b = doubling(second);
    const results = await batch.run(3, async (i) => {
      const x = await batch.park(i === 1 ? b : a, i);
      return i === 0 ? batch.park(a, x + 10) : x;
    });
    expect(results).toEqual([20, 2, 4]);
    expect(first).toEqual([[0, 2], [10]]);
    expect(second).toEqual([[1]]);
  });

  it('a write that throws ends the group: the writes still parked end with its error, none left hanging', async () => {
    const batch = new GroupBatch();
    const statement = doubling([]);
    const ended: string[] = [];
    const boom = new Error('write 1 refused');
    const run = batch.run(4, async (i) => {
      try {
        if (i === 1) {
          await batch.park(statement, i);
          throw boom;
        }
        return await batch.park(statement, i);
      } finally {
        ended.push(`write ${i}`);
      }
    });
    await expect(run).rejects.toBe(boom);
    await new Promise((r) => setImmediate(r));
    // Write 0 ended (resumed before write 1), write 1 threw, writes 2 and 3 were rejected while parked.
    expect(ended.sort()).toEqual(['write 0', 'write 1', 'write 2', 'write 3']);
  });

  it("a group statement that fails ends the group with its error and every parked write's", async () => {
    const batch = new GroupBatch();
    const failure = new Error('the statement failed');
    const failing: GroupStatement<number, number> = {
      run: async () => {
        throw failure;
      },
    };
    const outcomes: unknown[] = [];
    const run = batch.run(3, async (i) => {
      try {
        return await batch.park(failing, i);
      } catch (error) {
        outcomes.push(error);
        throw error;
      }
    });
    await expect(run).rejects.toBe(failure);
    await new Promise((r) => setImmediate(r));
    expect(outcomes).toEqual([failure, failure, failure]);
  });
});
