/**
 * A group commit's writes with statements that serve several rows at once (issue 13 §3: a round trip a statement is
 * what a row costs on PostgreSQL, whatever the statement does).
 *
 * The writes of a group (./store.ts `write`) run one at a time, in their order, as they always did. A write may park
 * at a statement that can serve the group's rows together (`park`: its row's last answer on the row's hint, for one):
 * the next write then starts. Once every write has ended or parked, each kind of parked statement is sent as one
 * statement for all its rows (`GroupStatement.run`), and the parked writes go on one at a time, in their order, each
 * until it ends or parks again. So no two writes' own statements ever interleave; what the group's statement changes
 * is what each write's own statement would have changed, as if the writes had run in this order: every write that did
 * not park, then the parked ones. The group commits all of them or none, so no other transaction sees the difference.
 *
 * What a parked statement may be: about its row alone, after statements of its write about that row alone (nothing a
 * later write could depend on), and a compare-and-set (it changes nothing when its condition fails, and its write then
 * takes the path it takes without the group). A write that throws ends the group: every parked write is rejected
 * with its error (the group is run again a savepoint each, without parking: ./store.ts `flush`). Nothing parks inside
 * a savepoint: the other writes would run inside it, and be undone with it.
 */

/** A kind of statement that serves several parked writes at once. */
export interface GroupStatement<Entry, Result> {
  /** One statement for the entries (at least one), each entry's result at its index. */
  run(entries: readonly Entry[]): Promise<Result[]>;
}

interface Parked {
  statement: GroupStatement<unknown, unknown>;
  entry: unknown;
  write: number;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

/** A group's writes run as the top of this file says. */
export class GroupBatch {
  private parked: Parked[] = [];
  /** The write running now (its index): a `park` is its. */
  private current = -1;
  /** Whether the running write has parked (it may, before its start returns: nothing it awaited came first). */
  private hasParked = false;
  /** Told when the running write parks. */
  private onPark: (() => void) | undefined;

  /** Called by the running write: resolves with its entry's result once the group's statement ran. */
  park<Entry, Result>(statement: GroupStatement<Entry, Result>, entry: Entry): Promise<Result> {
    return new Promise<Result>((resolve, reject) => {
      this.parked.push({
        statement: statement as GroupStatement<unknown, unknown>,
        entry,
        write: this.current,
        resolve: resolve as (r: unknown) => void,
        reject,
      });
      this.hasParked = true;
      this.onPark?.();
    });
  }

  /**
   * Runs the writes (`start(i)` starts the i-th) as the top of this file says; resolves with their results in their
   * order, or rejects with the first error (a write's, or a group statement's).
   */
  async run<T>(count: number, start: (i: number) => Promise<T>): Promise<T[]> {
    const writes: Array<Promise<T>> = [];
    const failures: unknown[] = [];
    try {
      for (let i = 0; i < count; i++) {
        this.current = i;
        this.hasParked = false;
        const w = start(i);
        writes.push(w);
        w.catch((error: unknown) => failures.push(error));
        await this.untilParkedOrEnded(w);
        if (failures.length > 0) throw failures[0];
      }
      while (this.parked.length > 0) {
        const parked = this.parked;
        this.parked = [];
        const results = await this.runStatements(parked);
        for (const [k, p] of parked.entries()) {
          this.current = p.write;
          this.hasParked = false;
          p.resolve(results[k]);
          await this.untilParkedOrEnded(writes[p.write]!);
          if (failures.length > 0) {
            // The writes of this round not yet resumed end with the group too.
            for (const rest of parked.slice(k + 1)) rest.reject(failures[0]);
            throw failures[0];
          }
        }
      }
      return await Promise.all(writes);
    } catch (error) {
      // The group ends here: the writes still parked never go on (their promises are handled above).
      for (const p of this.parked) p.reject(error);
      this.parked = [];
      throw error;
    }
  }

  /** Each kind of statement parked, once for its entries; every parked write's result, in `parked`'s order. */
  private async runStatements(parked: readonly Parked[]): Promise<unknown[]> {
    const results = new Array<unknown>(parked.length);
    const byStatement = new Map<GroupStatement<unknown, unknown>, number[]>();
    for (const [k, p] of parked.entries()) {
      const at = byStatement.get(p.statement);
      if (at === undefined) byStatement.set(p.statement, [k]);
      else at.push(k);
    }
    try {
      for (const [statement, at] of byStatement) {
        const out = await statement.run(at.map((k) => parked[k]!.entry));
        for (const [j, k] of at.entries()) results[k] = out[j];
      }
    } catch (error) {
      for (const p of parked) p.reject(error);
      throw error;
    }
    return results;
  }

  /** Resolves when the write `w` has parked or ended (settled: its outcome is read from `w`). */
  private untilParkedOrEnded(w: Promise<unknown>): Promise<void> {
    if (this.hasParked) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let done = false;
      const end = () => {
        if (done) return;
        done = true;
        this.onPark = undefined;
        resolve();
      };
      this.onPark = end;
      w.then(end, end);
    });
  }
}
