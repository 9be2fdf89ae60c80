/**
 * The pure parts of `remessa status`: what state a stored batch shows (parked when nobody drives the data folder), and
 * the dates of --since/--until.
 */

import { mkdtempSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brasiliaTime } from '../src/formats/brasilia-time.js';
import { msg } from '../src/i18n/index.js';
import { batchState, currentDriver, parseStatusDate, renderUnsettled } from '../src/runner/status.js';

describe('batchState', () => {
  it('a batch not finished shows running only while a process drives the folder, else parked', () => {
    expect(batchState({ status: 'running' }, true)).toBe('running');
    expect(batchState({ status: 'running' }, false)).toBe('parked');
    expect(batchState({ status: 'ready' }, true)).toBe('running');
    expect(batchState({ status: 'ready' }, false)).toBe('parked');
    expect(batchState({ status: 'ingesting' }, true)).toBe('ingesting');
    expect(batchState({ status: 'ingesting' }, false)).toBe('parked');
    expect(batchState({ status: 'done' }, false)).toBe('done');
    expect(batchState({ status: 'rejected' }, true)).toBe('rejected');
  });

  it('an approved batch not let go yet shows approved, driven or not; once running, its approval is not read', () => {
    expect(batchState({ status: 'ready' }, false, true)).toBe('approved');
    expect(batchState({ status: 'ready' }, true, true)).toBe('approved');
    expect(batchState({ status: 'running' }, false, true)).toBe('parked');
    expect(batchState({ status: 'awaiting_approval' }, false)).toBe('awaiting_approval');
  });

  it('a holder file left by a process that is gone is nobody driving', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'remessa-status-'));
    expect(currentDriver(dir)).toBeNull();
    const holder = { pid: process.pid, host: hostname(), command: 'remessa daemon', since: '2026-11-23T10:00:00.000Z' };
    writeFileSync(path.join(dir, 'remessa.lock.json'), JSON.stringify(holder));
    expect(currentDriver(dir)).toEqual(holder);
    // A pid that cannot be running (above the kernel's pid_max).
    writeFileSync(path.join(dir, 'remessa.lock.json'), JSON.stringify({ ...holder, pid: 2 ** 30 }));
    expect(currentDriver(dir)).toBeNull();
  });
});

describe('parseStatusDate', () => {
  it("a day is Brasília's whole day, written as ISO or as a sheet does; a time needs its offset; nonsense is refused", () => {
    // Before: the whole UTC day, while status shows Brasília's times: a file of 22:30 on the 23rd was on the 24th.
    expect(parseStatusDate('2026-11-23', 'start')?.toISOString()).toBe('2026-11-23T03:00:00.000Z');
    expect(parseStatusDate('2026-11-23', 'end')?.toISOString()).toBe('2026-11-24T02:59:59.999Z');
    expect(parseStatusDate('23/11/2026', 'start')?.toISOString()).toBe('2026-11-23T03:00:00.000Z');
    expect(parseStatusDate('31/02/2026', 'start')).toBeUndefined();
    expect(parseStatusDate('2026-11-23T14:00:00-03:00', 'start')?.toISOString()).toBe('2026-11-23T17:00:00.000Z');
    expect(parseStatusDate('2026-11-23T14:00Z', 'end')?.toISOString()).toBe('2026-11-23T14:00:00.000Z');
    for (const bad of ['2026-02-30', '23/11/26', '2026-11-23T14:00:00', 'yesterday', '']) {
      expect(parseStatusDate(bad, 'start')).toBeUndefined();
    }
  });
});

describe("the retorno's lines", () => {
  it('are said in the locale: foreign events and payments waiting for a final status', () => {
    const lines = [
      { message: msg('STATUS.foreign', { count: 1 }) },
      { message: msg('STATUS.foreignEvent', { type: 'CHARGE_PAID', subject: 'x', id: 'e2' }), item: true as const },
      { message: msg('STATUS.waitingFinal', { count: 1 }) },
      {
        message: msg('STATUS.waitingThing', {
          kind: 'pix-payment',
          key: 'E123',
          status: 'PIX_PROCESSING',
          since: '2026-11-23T10:00:00.000Z',
          file: 'pix.csv',
          line: 2,
        }),
        item: true as const,
      },
    ];
    expect(renderUnsettled(lines, 'pt-BR')).toEqual([
      'Eventos do banco sobre coisas que o remessa não criou: 1',
      '  CHARGE_PAID x (evento e2)',
      'Aguardando status final do banco: 1',
      '  pix-payment E123: PIX_PROCESSING desde 2026-11-23T10:00:00.000Z (pix.csv linha 2)',
    ]);
    expect(renderUnsettled(lines, 'en')).toEqual([
      'Bank events about things remessa did not create: 1',
      '  CHARGE_PAID x (event e2)',
      'Waiting for a final status from the bank: 1',
      '  pix-payment E123: PIX_PROCESSING since 2026-11-23T10:00:00.000Z (pix.csv line 2)',
    ]);
  });
});

describe('brasiliaTime', () => {
  it('says an instant in Brasília time, day first in pt-BR; leaves what is not an instant as it is', () => {
    expect(brasiliaTime('2026-11-28T07:48:01.766Z', true)).toBe('28/11/2026 04:48:01');
    expect(brasiliaTime('2026-11-28T02:30:00Z', false)).toBe('2026-11-27 23:30:00');
    expect(brasiliaTime('-', true)).toBe('-');
  });
});
