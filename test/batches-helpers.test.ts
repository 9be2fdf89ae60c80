import { join, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { correlationIdFromYourNumber } from '../src/batches/derived-ids.js';
import { kindFor, kindFromPath } from '../src/batches/registry.js';
import { rejectionCode, resultCells, resultHeader, validateRecord } from '../src/batches/results.js';
import { safeFileName } from '../src/batches/safe-name.js';
import { msg } from '../src/i18n/index.js';

describe('safeFileName', () => {
  it('keeps safe ids as they are', () => {
    expect(safeFileName('INV-2026_0001', 'pdf')).toBe('INV-2026_0001.pdf');
    expect(safeFileName('5f0c2a9e-8d41-4c7b-9a3e-2b6d1f8e4c10', 'png')).toBe(
      '5f0c2a9e-8d41-4c7b-9a3e-2b6d1f8e4c10.png',
    );
  });

  it('neutralises traversal, separators, hidden names and device names, with a hash to stay unique', () => {
    for (const id of [
      '../../etc/passwd',
      '..',
      '.',
      '.hidden',
      'a/b',
      'a\\b',
      'C:\\x',
      'CON',
      'nul.txt',
      'a\u0000b',
      '',
      'São Paulo',
      'x.',
    ]) {
      const name = safeFileName(id, 'pdf');
      expect(name).toMatch(/^[A-Za-z0-9_-][A-Za-z0-9._-]*-[0-9a-f]{8}\.pdf$/);
      expect(name.includes('..')).toBe(false);
    }
    expect(safeFileName('a/b', 'pdf')).not.toBe(safeFileName('a\\b', 'pdf'));
    expect(safeFileName('São Paulo', 'pdf').startsWith('Sao_Paulo-')).toBe(true);
    // A Seu número's derived correlationId (NF 3001/A): named as typed, not by its escapes (was NF_203001_2FA-...).
    const derived = correlationIdFromYourNumber('NF 3001/A');
    expect(derived).toBe('NF~203001~2FA');
    expect(safeFileName(derived, 'pdf')).toMatch(/^NF_3001_A-[0-9a-f]{8}\.pdf$/);
    expect(safeFileName(correlationIdFromYourNumber('Ação nº 7'), 'pdf')).toMatch(/^Acao_no_7-[0-9a-f]{8}\.pdf$/);
    // Ids that read alike once unescaped still get names of their own (the hash is the id's).
    expect(safeFileName('NF~20A', 'pdf')).not.toBe(safeFileName('NF A', 'pdf'));
  });

  it('any string gives one plain file name of bounded length (property)', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (id) => {
        const name = safeFileName(id, 'pdf');
        expect(name).not.toContain('/');
        expect(name).not.toContain('\\');
        expect(name).not.toContain('\u0000');
        expect(name.startsWith('.')).toBe(false);
        expect(name.length).toBeLessThanOrEqual(124);
        expect(join('/out', name).startsWith(`/out${sep}`)).toBe(true);
        expect(name).not.toMatch(/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i);
      }),
    );
  });
});

describe('registry paths', () => {
  const inbox = join('/srv', 'inbox');

  it('finds the kind from the folder or the name prefix', () => {
    expect(kindFromPath(inbox, join(inbox, 'charges', 'x.csv'))).toBe('charges');
    expect(kindFromPath(inbox, join(inbox, 'bill-payments', 'Lote 1.CSV'))).toBe('bill-payments');
    expect(kindFromPath(inbox, join(inbox, 'charges-2026-12.csv'))).toBe('charges');
    expect(kindFromPath(inbox, join(inbox, 'charge-updates_dez.csv'))).toBe('charge-updates');
    expect(kindFromPath(inbox, join(inbox, 'charge-voids-1.csv'))).toBe('charge-voids');
    expect(kindFromPath(inbox, join(inbox, 'claims-1.csv'))).toBe('claims');
    expect(kindFromPath(inbox, join(inbox, 'claim-cancellations-1.csv'))).toBe('claim-cancellations');
  });

  it('gives nothing for unknown kinds, other places or other extensions', () => {
    expect(kindFromPath(inbox, join(inbox, 'payments', 'x.csv'))).toBeUndefined();
    expect(kindFromPath(inbox, join(inbox, 'chargesx.csv'))).toBeUndefined();
    expect(kindFromPath(inbox, join(inbox, 'charges.csv'))).toBeUndefined();
    expect(kindFromPath(inbox, join(inbox, 'charges', 'x.txt'))).toBeUndefined();
    expect(kindFromPath(inbox, join(inbox, 'charges', 'deep', 'x.csv'))).toBeUndefined();
    expect(kindFromPath(inbox, join('/srv', 'other', 'charges-x.csv'))).toBeUndefined();
    expect(kindFor('charges')?.name).toBe('charges');
    expect(kindFor('nope')).toBeUndefined();
  });
});

describe('result lines', () => {
  const kind = kindFor('bill-payments')!;

  it('header: input headers, status columns, outputs', () => {
    expect(resultHeader(kind, ['Linha', 'Valor'])).toEqual([
      'Linha',
      'Valor',
      'status',
      'errorCode',
      'errorMessage',
      'billType',
      'billStatus',
      'paymentId',
      'paymentStatus',
      'paidAmount',
    ]);
  });

  it('cells: input padded to the header width, outputs merged over steps, cents marked for formatting', () => {
    const cells = resultCells(kind, 3, {
      cells: ['a', 'b'],
      status: 'succeeded',
      outputs: {
        lookup: { billType: 'BANKSLIP', billStatus: 'PENDING_PAYMENT' },
        pay: { paymentId: 'p1', paymentStatus: 'PAID', paidAmount: 325 },
      },
    });
    expect(cells).toEqual([
      'a',
      'b',
      '',
      'succeeded',
      null,
      null,
      'BANKSLIP',
      'PENDING_PAYMENT',
      'p1',
      'PAID',
      { cents: 325 },
    ]);
  });

  it('a record with the wrong number of cells is rejected with the kind errors too', () => {
    const result = validateRecord(
      kind,
      {
        line: 3,
        record: { barCode: '1' },
        cells: ['1'],
        problems: [{ code: 'COLUMN_COUNT', message: msg('COLUMN_COUNT', { expected: 2, got: 1 }) }],
      },
      { encoding: 'utf8', bom: false, delimiter: ',', decimalMark: '.' },
    );
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(rejectionCode(result.errors)).toBe('COLUMN_COUNT');
      expect(result.errors.length).toBeGreaterThan(1);
    }
  });
});
