/**
 * A Pix sheet as a finance clerk writes it in Excel, through the engine against the sandbox over real HTTP: the QR
 * code types as sheets write them (`Pix dinâmico`, `Pix estático`, as the charges sheet already takes them), and what
 * a row whose charge the bank does not know reads in the clerk's words.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { chargeUpdatesKind } from '../src/batches/charge-updates.js';
import { chargeVoidsKind } from '../src/batches/charge-voids.js';
import type { BatchKind } from '../src/batches/kind.js';
import { qrCodesKind } from '../src/batches/qr-codes.js';
import { engineFilePerTest } from './helpers/engine-file.js';
import { storeEngines } from './helpers/stores.js';

const sqlite = storeEngines().find((e) => e.name === 'sqlite')!;
const ef = engineFilePerTest('pix-sheet-words');
const qrCodes = qrCodesKind as unknown as BatchKind<never>;

describe('qr-codes: the type as a sheet writes it', () => {
  it.each([
    ['Pix dinâmico', 'PIX_DYNAMIC'],
    ['PIX DINAMICO', 'PIX_DYNAMIC'],
    ['Dinâmico', 'PIX_DYNAMIC'],
    ['Pix estático', 'PIX_STATIC'],
    ['estatico', 'PIX_STATIC'],
  ])('"%s" creates a %s code', async (word, type) => {
    ef.useStore(await sqlite.open());
    const sheet = `correlationId;type;amount;description\r\n${randomUUID()};${word};12,34;Pedido 77\r\n`;
    const { row } = await ef.runFile(qrCodes, sheet, { locale: 'pt-BR' });
    expect(row.errorMessage ?? row.state).toBe('succeeded');
    const payload = String(row.outputs.qrCodePayload);
    // A dynamic code carries its point of initiation 12 (once), a static one none (or 11).
    expect(payload.startsWith('000201010212')).toBe(type === 'PIX_DYNAMIC');
    expect(payload).toContain('540512.34');
  });

  it('a word that could be either type ("Pix") is still refused, never guessed', async () => {
    ef.useStore(await sqlite.open());
    const { row } = await ef.runFile(qrCodes, `correlationId;type;amount\r\n${randomUUID()};Pix;12,34\r\n`, {
      locale: 'pt-BR',
    });
    expect(row.state).toBe('rejected');
    expect(row.errorCode).toBe('INVALID_ENUM');
  });
});

describe('a charge the bank does not know, in the clerk words', () => {
  // The bank answers 404 with a problem that has only a title (spec: the 404 problem on every {id} route). The row
  // said remessa's own English request line ("POST /v1/charges/X/void failed with HTTP 404: ..."), where the clerk
  // reads Portuguese; now it says the bank's words only, after the lead-in in the reader's language.
  const voids = chargeVoidsKind as unknown as BatchKind<never>;
  const updates = chargeUpdatesKind as unknown as BatchKind<never>;

  it.each([
    ['a void', voids, 'correlationId\r\nNAO-EXISTE-1\r\n'],
    ['an update', updates, 'correlationId;dueDate\r\nNAO-EXISTE-2;10/02/2030\r\n'],
  ])('%s: failed, "O banco recusou (HTTP 404): Not Found", no request line', async (_what, kind, sheet) => {
    ef.useStore(await sqlite.open());
    const { row } = await ef.runFile(kind, sheet, { locale: 'pt-BR' });
    expect(row.state).toBe('failed');
    expect(row.errorCode).toBe('SERVICE_NOT_FOUND');
    expect(row.errorMessage).toMatch(/^O banco recusou \(HTTP 404\): Not Found \(traceId [0-9a-f-]+\)$/);
  });
});
