/**
 * A charge whose correlationId the bank already holds, on the row's first attempt (a store restored from before the
 * file, a file sent by another remessa): before, the row was `failed` with the bank's 409, and a person made the
 * charge again by hand: two slips for one debt. Now the bank's charge is looked up: the same charge answers the row
 * `succeeded` with its slip; another one `failed` saying what differs. The sandbox runs in process.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chargesKind } from '../src/batches/charges.js';
import type { BatchKind } from '../src/batches/kind.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const engines = storeEngines();
const ef = engineFilePerTest('charge-id-taken');
const charges = chargesKind as unknown as BatchKind<never>;
const HEADER =
  'correlationId,type,amount,dueDate,payer.name,payer.document,payer.address.zipCode,payer.address.publicPlace,' +
  'payer.address.city,payer.address.state';
const file = (id: string, amount: string) =>
  `${HEADER}\n${id},BANKSLIP,${amount},2030-12-15,Maria da Silva,12345678909,01310100,Avenida Paulista,São Paulo,SP\n`;

describe.each(engines)('a charge already at the bank under the row correlationId ($name)', (engine) => {
  skipIfAsked(engine);

  it('the same charge: the row succeeds with the slip the bank holds, and nothing is created twice', async () => {
    const id = `TAKEN-${randomUUID().slice(0, 8)}`;
    const before = await engine.open();
    ef.useStore(before);
    const first = (await ef.runFile(charges, file(id, '100.00'))).row;
    expect(first.state).toBe('succeeded');
    await before.close();
    // A store restored from before the file: it has no record of the charge, the bank has it.
    ef.useStore(await engine.open());
    const again = (await ef.runFile(charges, file(id, '100.00'))).row;
    expect(again.errorMessage ?? again.state).toBe('succeeded');
    expect(again.outputs.barCode).toBe(first.outputs.barCode);
    expect(ef.sandbox.ctx.ledger.counts({ kind: 'charge_created' })).toHaveLength(1);
  });

  it('another charge: failed, saying what differs, in the reader words', async () => {
    const id = `TAKEN-${randomUUID().slice(0, 8)}`;
    const before = await engine.open();
    ef.useStore(before);
    expect((await ef.runFile(charges, file(id, '100.00'))).row.state).toBe('succeeded');
    await before.close();
    ef.useStore(await engine.open());
    const other = (await ef.runFile(charges, file(id, '250.00'), { locale: 'pt-BR' })).row;
    expect(other.state).toBe('failed');
    expect(other.errorCode).toBe('CHARGE_ID_TAKEN');
    expect(other.errorMessage).toBe(
      `O banco já tem outra cobrança com o correlationId ${id} (valor no banco / nesta linha: amount: R$ 100,00 / ` +
        'R$ 250,00): esta não foi criada; use outro correlationId ou Seu número',
    );
  });
});
