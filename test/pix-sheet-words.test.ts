/**
 * A Pix sheet as a finance clerk writes it in Excel, through the engine against the sandbox over real HTTP: the QR
 * code types as sheets write them (`Pix dinâmico`, `Pix estático`, as the charges sheet already takes them), and what
 * a row whose charge the bank does not know reads in the clerk's words.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
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
