/**
 * A change asked again after another change of the same thing (a slip's due date set to 20/12, then to 27/12, then
 * to 20/12 again) is not a repeat of the first: the bank holds the second. Before, the third row was answered
 * `duplicate` with the first's result ("due 20/12") while the slip was due 27/12, and nothing was sent. Rule 4 of
 * src/store/rows.ts (`BatchKind.changes`). The same for a Pix key claim asked again after remessa cancelled it: it was
 * answered `duplicate` with the cancelled claim's id and status (`BatchKind.undoneBy`). The sandbox runs in process.
 */
import { createHash, randomUUID } from 'node:crypto';
import { beforeEach, describe, expect, it } from 'vitest';
import { chargeUpdatesKind } from '../src/batches/charge-updates.js';
import { chargesKind } from '../src/batches/charges.js';
import { claimCancellationsKind } from '../src/batches/claim-cancellations.js';
import { claimsKind } from '../src/batches/claims.js';
import type { BatchKind } from '../src/batches/kind.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const ef = engineFilePerTest('change-again');
const updates = chargeUpdatesKind as unknown as BatchKind<never>;

async function newSlip(): Promise<string> {
  const id = `CHG-${randomUUID().slice(0, 8)}`;
  const header = 'correlationId,type,amount,dueDate,payer.name,payer.document,payer.address.zipCode';
  const address = 'payer.address.publicPlace,payer.address.city,payer.address.state';
  const values = `${id},BANKSLIP,100.00,2030-12-15,Maria da Silva,12345678909,01310100,Avenida Paulista,São Paulo,SP`;
  const csv = `${header},${address}\n${values}\n`;
  const { row } = await ef.runFile(chargesKind as unknown as BatchKind<never>, csv);
  expect(row.errorMessage ?? row.state).toBe('succeeded');
  return id;
}

/** The due date the bank holds for the charge now. */
async function dueDateAtBank(id: string): Promise<string | undefined> {
  return (await ef.client.charges.get(id)).dueDate?.slice(0, 10);
}

/** Files are batches by their content's hash: each file of a test ends with empty lines of its own (skipped). */
let files = 0;
const dueOn = async (id: string, date: string) =>
  (await ef.runFile(updates, `correlationId,dueDate\n${id},${date}\n${'\n'.repeat(++files)}`)).row;

describe.each(engines)('a change asked again after another change ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });

  it('is sent again, and says what the bank now holds; a true repeat of the last change is still a duplicate', async () => {
    const id = await newSlip();
    const first = await dueOn(id, '2030-12-20');
    expect(first.state).toBe('succeeded');
    expect((await dueOn(id, '2030-12-27')).state).toBe('succeeded');
    expect(await dueDateAtBank(id)).toBe('2030-12-27');

    const back = await dueOn(id, '2030-12-20');
    // Before: `duplicate` of the first, its result saying 2030-12-20, the bank still at 2030-12-27.
    expect(back.state).toBe('succeeded');
    expect(await dueDateAtBank(id)).toBe('2030-12-20');
    expect(back.outputs.chargeDueDate).toBe('2030-12-20');
    expect(back.idempotencyKey).not.toBe(first.idempotencyKey);

    // The same change dropped again right after: the bank holds it, nothing to send.
    const repeat = await dueOn(id, '20/12/2030');
    expect(repeat.state).toBe('duplicate');
    expect(repeat.duplicateOf).toMatchObject({ line: 2 });
  });

  it('a change of another charge leaves a repeat a duplicate; after any later change of its own, it is sent', async () => {
    const a = await newSlip();
    const b = await newSlip();
    expect((await dueOn(a, '2030-12-20')).state).toBe('succeeded');
    // Another charge's change says nothing of this one.
    expect((await dueOn(b, '2030-12-27')).state).toBe('succeeded');
    expect((await dueOn(a, '2030-12-20')).state).toBe('duplicate');
    // After a later change, even one the bank refused (the slip voided since), the store no longer knows which change
    // the charge holds: the repeat is sent, and says what the bank answers now, never the first's old success.
    await ef.client.charges.void(a);
    expect((await dueOn(a, '2030-12-27')).state).toBe('failed');
    const again = await dueOn(a, '2030-12-20');
    expect(again.state).toBe('failed');
    expect(again.errorMessage).toMatch(/^The bank refused \(HTTP 409\): .*voided/);
    // Said in the reader's words: who refused, then the bank's own words (here the sandbox's English).
    const pt = await ef.runFile(updates, `correlationId,dueDate\n${a},2030-12-29\n`, { locale: 'pt-BR' });
    expect(pt.row.errorMessage).toMatch(/^O banco recusou \(HTTP 409\): .*voided/);
  });

  it('in one file: each change after another change of the charge is sent, one after the other', async () => {
    const id = await newSlip();
    const dates = ['2030-12-20', '2030-12-27', '2030-12-20', '2030-12-27', '2030-12-21', '2030-12-27'];
    const csv = `correlationId,dueDate\n${dates.map((d) => `${id},${d}\n`).join('')}${id},2030-12-27\n`;
    await ef.runFile(updates, csv);
    const batchId = createHash('sha256').update(csv).digest('hex');
    const rows = await Promise.all(dates.map(async (_, i) => (await ef.store.getRow(batchId, i + 2))!));
    expect(rows.map((r) => r.state)).toEqual(dates.map(() => 'succeeded'));
    // Each row's confirmation read the charge after its own change and before the next: what it set.
    expect(rows.map((r) => r.outputs.chargeDueDate)).toEqual(dates);
    expect(await dueDateAtBank(id)).toBe('2030-12-27');
    // The last line repeats the change just before it: nothing to send.
    expect((await ef.store.getRow(batchId, dates.length + 2))!.state).toBe('duplicate');
  });
});

const CLAIM_HEADER =
  'type,key,account.number,account.branch,account.type,account.holder.document,account.holder.name,account.holder.type';
const claimFile = (email: string) =>
  `${CLAIM_HEADER}\nEMAIL,${email},123456-7,0001,CURRENT,12345678909,Maria da Silva,NATURAL\n${'\n'.repeat(++files)}`;
const cancelFile = (claimId: string) =>
  `claimId,participationFlowType,reason\n${claimId},CLAIMANT,USER_REQUESTED\n${'\n'.repeat(++files)}`;

describe.each(engines)('a claim asked again after remessa cancelled it ($name)', (engine) => {
  skipIfAsked(engine);
  beforeEach(async () => {
    ef.useStore(await engine.open());
  });
  const claims = claimsKind as unknown as BatchKind<never>;
  const cancellations = claimCancellationsKind as unknown as BatchKind<never>;

  it('starts a new claim; while the cancellation was refused, a repeat is still the duplicate', async () => {
    const email = `again-${randomUUID().slice(0, 8)}@example.com`;
    const first = (await ef.runFile(claims, claimFile(email))).row;
    expect(first.state).toBe('succeeded');
    const firstId = first.outputs.claimId as string;

    // Refused while pending: the claim stands, and a repeat is its duplicate.
    expect((await ef.runFile(cancellations, cancelFile(firstId), { maxAttempts: 2 })).row.state).toBe('failed');
    expect((await ef.runFile(claims, claimFile(email))).row.state).toBe('duplicate');

    await ef.moveClaim(firstId, 'AWAITING_RESOLUTION');
    expect((await ef.runFile(cancellations, cancelFile(firstId))).row.state).toBe('succeeded');
    const again = (await ef.runFile(claims, claimFile(email))).row;
    // Before: `duplicate`, answered with the cancelled claim's id; no claim was open at the bank.
    expect(again.state).toBe('succeeded');
    expect(again.outputs.claimId).not.toBe(firstId);
    expect(again.idempotencyKey).not.toBe(first.idempotencyKey);
    // And the new claim's repeat is its duplicate.
    expect((await ef.runFile(claims, claimFile(email))).row.state).toBe('duplicate');
  });
});
