/**
 * The batch machine of the money controls in the store (src/store/approvals.ts), on a real store (a SQLite file and
 * a PostgreSQL database, test/helpers/stores.ts): no intent of an unapproved batch is ever committed, whatever the
 * caller does; decisions are checked and taken once; the per-day amounts are counted once per batch, on the day in
 * America/Sao_Paulo, and survive reopening the store.
 */

import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Dialect } from '../src/batches/kind.js';
import { brasiliaDay } from '../src/formats/brasilia-time.js';
import { gateBatch, writePreview } from '../src/runner/approval.js';
import type { MoneyControlOptions } from '../src/runner/options.js';
import {
  APPROVAL_CODES,
  ApprovalError,
  decideApproval,
  getApproval,
  heldTakingsNamed,
  IdempotencyKeys,
  type IngestRow,
  markPreviewWritten,
  releasedOnDay,
  type Store,
} from '../src/store/index.js';
import { batchIdForIntake, registerIntake } from '../src/store/intakes.js';
import { skipIfAsked, storeEngines } from './helpers/stores.js';

const DIALECT: Dialect = { delimiter: ',', decimalMark: '.', encoding: 'utf8', bom: false };
const RULES = { forbidSameAsOwner: true, makers: ['joao'] };

const engines = storeEngines();

describe.each(engines)('on $name', (engine) => {
  skipIfAsked(engine);
  let store: Store;

  beforeEach(async () => {
    store = await engine.open();
  });
  afterEach(async () => {
    await store.close();
  });

  function row(line: number, key: string, amountCents: number): IngestRow {
    return {
      line,
      record: { barCode: key, amount: String(amountCents / 100) },
      valid: true,
      parsed: {},
      naturalKey: key,
      idempotencyKey: new IdempotencyKeys('1').forRow('bill-payments', key),
      amountCents,
    };
  }

  async function storedBatch(id: string, amounts: number[]): Promise<void> {
    await store.createBatch({
      id,
      kind: 'bill-payments',
      fileName: `${id}.csv`,
      dialect: DIALECT,
      header: ['barCode', 'amount'],
    });
    await store.ingest(
      id,
      amounts.map((a, i) => row(i + 2, `${id}-${i}`, a)),
    );
    await store.finishIngest(id, 'all-or-nothing');
  }

  const controls = (extra: Partial<MoneyControlOptions> = {}): MoneyControlOptions => ({
    approvalKinds: ['bill-payments'],
    forbidSameAsOwner: true,
    makers: [],
    pollMs: 1000,
    limits: {},
    ...extra,
  });

  describe('its preview', () => {
    it('shows a row left waiting for the bank as to pay, not looked up, in the total (it said "not paid")', async () => {
      const id = '20261128T003336Z-c796c6a6'; // as remessa names a batch: its take time, then a tag
      await storedBatch(id, [1000, 2500]);
      expect(await gateBatch(store, id, controls(), 'maria')).toBe('hold');
      await store.recordRowWaiting(id, 3, null, {
        code: 'BANK_UNREACHABLE',
        message: 'the bank could not be reached',
      });
      const dir = await mkdtemp(path.join(tmpdir(), 'preview-'));
      try {
        const file = await writePreview(store, id, { outboxDir: dir, name: 'b9', locale: 'en' });
        const text = await readFile(file, 'utf8');
        const lines = text.split(/\r?\n/);
        expect(lines.find((l) => l.startsWith(`${id}-1,`))).toMatch(
          /,to pay,BANK_UNREACHABLE,not looked up yet \(the bank could not be reached\); looked up again before paying,25\.00/,
        );
        expect(text).toMatch(/TOTAL to pay,,2 rows,,,35\.00/);
        expect(text).not.toMatch(/not paid/);
        // The command it gives names this batch alone: its whole id (a prefix names every file of ten minutes).
        expect(text).toContain(`DECIDE,,remessa approve ${id} --by NAME`);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });

    it('is never written over: held again after a restart, the batch keeps the preview the approver read', async () => {
      const id = '20261129T041500Z-0b5e1c2d';
      await storedBatch(id, [1000, 2500]);
      expect(await gateBatch(store, id, controls(), 'maria')).toBe('hold');
      await store.recordRowWaiting(id, 3, null, { code: 'BANK_UNREACHABLE', message: 'the bank could not be reached' });
      const dir = await mkdtemp(path.join(tmpdir(), 'preview-'));
      try {
        const file = await writePreview(store, id, { outboxDir: dir, name: 'b10', locale: 'en' });
        const read = await readFile(file, 'utf8');
        const before = await stat(file);
        // The process restarts: the batch is held again, and its row is no longer waiting (as after a lookup).
        await store.close();
        store = await engine.reopen(store);
        expect(await gateBatch(store, id, controls(), 'maria')).toBe('hold');
        await store.recordRowWaiting(id, 3, null, { code: 'OTHER', message: 'something else' });
        expect(await writePreview(store, id, { outboxDir: dir, name: 'b10', locale: 'en' })).toBe(file);
        expect(await readFile(file, 'utf8')).toBe(read);
        expect((await stat(file)).ino).toBe(before.ino);
        expect((await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.csv'))).toEqual([
          path.join('bill-payments', 'b10.preview.csv'),
        ]);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  });

  describe('a batch awaiting approval', () => {
    it('never gets an intent committed, also after the store is reopened; approve lets it, once', async () => {
      await storedBatch('b1', [1000, 2000]);
      expect(await gateBatch(store, 'b1', controls(), 'maria')).toBe('hold');
      expect((await store.getBatch('b1'))?.status).toBe('awaiting_approval');
      await expect(store.recordIntent('b1', 2, 'pay')).rejects.toThrow(/not approved/);
      await store.close();
      store = await engine.reopen(store);
      expect(await gateBatch(store, 'b1', controls(), 'maria')).toBe('hold');
      await expect(store.recordIntent('b1', 2, 'pay')).rejects.toThrow(/not approved/);
      // With a read's answer riding in it (rule 9 of rows.ts): refused the same, and the answer is not kept either.
      await expect(
        store.recordIntent('b1', 2, 'pay', { step: 'lookup', output: { billAmount: 1000 } }),
      ).rejects.toThrow(/not approved/);
      expect((await store.getSteps('b1', 2)).size).toBe(0);
      const held = (await store.getRow('b1', 2))!;
      expect(held.state).toBe('pending');
      expect(held.outputs).not.toHaveProperty('billAmount');

      // No decision before the preview; the owner and a maker are refused; nothing changes then.
      await expect(
        decideApproval(store, 'b1', { approve: true, by: 'Ana', user: 'ana', via: 'command' }, RULES, new Date()),
      ).rejects.toThrow(/ainda não tem prévia/);
      await markPreviewWritten(store, 'b1', new Date());
      for (const [by, why] of [
        [' Maria ', /Maria é dono do arquivo/],
        ['JOAO', /JOAO consta em approval\.makers/],
      ] as const) {
        const refused = decideApproval(
          store,
          'b1',
          { approve: true, by, user: 'ana', via: 'command' },
          RULES,
          new Date(),
        );
        await expect(refused).rejects.toThrow(ApprovalError);
        await expect(refused).rejects.toThrow(why);
      }
      // A decision made before the preview (a marker dropped with its file, or left from an earlier one) is refused.
      const preview = Date.parse((await getApproval(store, 'b1'))!.previewAt!);
      const early = decideApproval(
        store,
        'b1',
        { approve: true, by: 'Ana', user: 'ana', via: 'marker', madeAt: new Date(preview - 1) },
        RULES,
        new Date(),
      );
      await expect(early).rejects.toMatchObject({ code: APPROVAL_CODES.beforePreview });
      await expect(early).rejects.toThrow(/esperava uma decisão tomada depois da prévia/);
      expect((await getApproval(store, 'b1'))?.state).toBe('awaiting');
      // In English when the decider's locale says so.
      await expect(
        decideApproval(
          store,
          'b1',
          { approve: true, by: 'joao', user: 'ana', via: 'command', locale: 'en' },
          RULES,
          new Date(),
        ),
      ).rejects.toThrow(/joao is listed in approval\.makers/);
      expect((await getApproval(store, 'b1'))?.state).toBe('awaiting');

      await decideApproval(store, 'b1', { approve: true, by: 'Ana', user: 'ana', via: 'command' }, RULES, new Date());
      await expect(
        decideApproval(
          store,
          'b1',
          { approve: false, by: 'Ana', user: 'ana', via: 'command', note: 'x' },
          RULES,
          new Date(),
        ),
      ).rejects.toThrow(/^O lote b1 \(\S+\) já foi aprovado \(approved\) por Ana em \d\d\/\d\d\/\d{4} /);
      expect(await gateBatch(store, 'b1', controls(), 'maria')).toBe('go');
      expect((await store.getBatch('b1'))?.status).toBe('running');
      await store.recordIntent('b1', 2, 'pay');
      expect((await store.getRow('b1', 2))?.state).toBe('in_flight');
    });

    it('the approver is the OS user who decided, not the name written; an unknown or indistinct one is refused', async () => {
      const approve = (user: string | null, via: 'command' | 'marker' = 'marker', rules = RULES) =>
        decideApproval(
          store,
          'i1',
          { approve: true, by: 'Maria Gerente', user, via, marker: 'lote.approved', locale: 'en' },
          rules,
          new Date(),
        );
      const refusal = async (user: string | null, via: 'command' | 'marker' = 'marker', rules = RULES) => {
        const err = await approve(user, via, rules).catch((e: unknown) => e);
        expect(err).toBeInstanceOf(ApprovalError);
        expect((await getApproval(store, 'i1'))?.state).toBe('awaiting');
        return (err as ApprovalError).message;
      };
      await storedBatch('i1', [1000]);
      expect(await gateBatch(store, 'i1', controls(), 'joao.caixa')).toBe('hold');
      await markPreviewWritten(store, 'i1', new Date());
      // The clerk who sent the file writes his manager's name: the marker is his, so it is refused.
      expect(await refusal('joao.caixa')).toBe(
        'lote.approved was written by the OS user joao.caixa, the one who sent the file, and approval.forbidSameAsOwner ' +
          'is on: the approver is who writes the marker, not the name written in it (Maria Gerente). Another person ' +
          'must approve it, as their own user',
      );
      expect(await refusal(' JOAO.CAIXA ', 'command')).toMatch(
        /^remessa approve ran as the OS user JOAO\.CAIXA, the one who sent the file.*not --by \(Maria Gerente\)/,
      );
      // Nobody can be told apart: refused, saying what to do.
      expect(await refusal(null)).toMatch(
        /^Who wrote lote\.approved is not known \(owner: unknown\).*run as your own OS/,
      );
      expect(await refusal('nobody', 'command')).toMatch(/^The OS user running this command is not known \(nobody\)/);
      expect(await refusal('uid 65534')).toMatch(/not known \(owner: uid 65534\)/);
      // An OS user listed in approval.makers, whatever name is written.
      expect(await refusal('joao', 'command')).toBe(
        'joao is listed in approval.makers (prepares files): another person must approve it',
      );
      // forbidSameAsOwner off: the owner is not compared (the makers still are).
      expect(await refusal('joao', 'marker', { forbidSameAsOwner: false, makers: ['joao'] })).toMatch(
        /^joao is listed/,
      );

      const approved = await approve('maria');
      expect(approved).toMatchObject({ state: 'approved', decidedBy: 'Maria Gerente', decidedUser: 'maria' });
    });

    it('a file whose maker cannot be told (unknown, nobody) is never approved while forbidSameAsOwner is on', async () => {
      for (const [id, owner] of [
        ['u1', null],
        ['u2', 'nobody'],
      ] as const) {
        await storedBatch(id, [1000]);
        expect(await gateBatch(store, id, controls(), owner)).toBe('hold');
        await markPreviewWritten(store, id, new Date());
        for (const user of ['maria', owner]) {
          const refused = decideApproval(
            store,
            id,
            { approve: true, by: 'Maria', user, via: 'command' },
            RULES,
            new Date(),
          );
          await expect(refused).rejects.toThrow(
            new RegExp(`^Não se sabe quem enviou o arquivo \\(dono: ${owner ?? 'desconhecido'}\\).*PrivateUsers=true`),
          );
        }
        expect((await store.getBatch(id))?.status).toBe('awaiting_approval');
        // Off, it may be approved (the makers still checked); a rejection is never refused.
        const off = { forbidSameAsOwner: false, makers: ['joao'] };
        if (id === 'u1') {
          await decideApproval(
            store,
            id,
            { approve: true, by: 'Maria', user: 'maria', via: 'command' },
            off,
            new Date(),
          );
          expect((await getApproval(store, id))?.state).toBe('approved');
        } else {
          await decideApproval(
            store,
            id,
            { approve: false, by: 'Maria', user: null, via: 'command', note: 'x' },
            RULES,
            new Date(),
          );
          expect((await getApproval(store, id))?.state).toBe('rejected');
        }
      }
    });

    it('rejected: every unfinished row rejected (an uncertain lookup too), the batch done, no intent possible', async () => {
      await storedBatch('b2', [1000, 2000]);
      await gateBatch(store, 'b2', controls(), null);
      await store.recordRowUncertain('b2', 3, 'lookup', { code: 'TIMEOUT', message: 'lookup timed out' });
      await markPreviewWritten(store, 'b2', new Date());
      await decideApproval(
        store,
        'b2',
        { approve: false, by: 'Ana', user: 'ana', via: 'command', note: 'wrong' },
        RULES,
        new Date(),
      );
      expect((await store.getBatch('b2'))?.status).toBe('done');
      expect([(await store.getRow('b2', 2))?.state, (await store.getRow('b2', 3))?.state]).toEqual([
        'rejected',
        'rejected',
      ]);
      expect((await store.getRow('b2', 2))?.errorMessage).toMatch(/^Rejeitado por Ana em .*: wrong; nada foi enviado$/);
      await expect(store.recordIntent('b2', 2, 'pay')).rejects.toThrow();
    });

    it('a refusal names the state in Portuguese, with its code beside (README, Language)', async () => {
      await storedBatch('b5', [1000]);
      await gateBatch(store, 'b5', controls(), null);
      await markPreviewWritten(store, 'b5', new Date());
      // A batch whose decision is pending while the batch itself is not held (its status moved on meanwhile).
      await store.sql.run(`UPDATE batches SET status = 'running' WHERE id = ?`, ['b5']);
      const decide = (locale: 'pt-BR' | 'en') =>
        decideApproval(
          store,
          'b5',
          { approve: true, by: 'Ana', user: 'ana', via: 'command', locale },
          RULES,
          new Date(),
        );
      await expect(decide('pt-BR')).rejects.toThrow(
        /^O lote b5 \(\S+\) não aguarda aprovação: está em execução \(running\)$/,
      );
      await expect(decide('en')).rejects.toThrow(/^Batch b5 \(\S+\) does not wait for approval: it is running$/);
    });

    it("rejected in the decider's locale: English when asked for", async () => {
      await storedBatch('b3', [1000]);
      await gateBatch(store, 'b3', controls(), null);
      await markPreviewWritten(store, 'b3', new Date());
      const decision = { approve: false, by: 'Ana', user: 'ana', via: 'command', note: 'wrong', locale: 'en' } as const;
      await decideApproval(store, 'b3', decision, RULES, new Date());
      expect((await store.getRow('b3', 2))?.errorMessage).toMatch(/^Rejected by Ana at .*: wrong; nothing was sent$/);
    });
  });

  describe('takings held, by the name of an .approved marker', () => {
    it('are those of the name or of the name and an extension, newest first; % and _ in a name are themselves', async () => {
      for (const [id, takenAt] of [
        ['lote_1', '2026-11-20T10:00:00Z'],
        ['loteX1', '2026-11-20T11:00:00Z'],
        ['lote_1.b', '2026-11-20T12:00:00Z'],
        ['outro', '2026-11-20T13:00:00Z'],
      ] as const) {
        const intake = await registerIntake(store, {
          id,
          folder: 'bill-payments',
          fileName: `${id}.csv`,
          source: `bill-payments/${id}.csv`,
          contentSha256: id,
          takenAt,
          answerName: id,
        });
        expect(await batchIdForIntake(store, intake)).toBe(id);
        await storedBatch(id, [1000]);
        expect(await gateBatch(store, id, controls(), 'maria')).toBe('hold');
      }
      const named = await heldTakingsNamed(store, 'lote_1');
      expect(named.map((h) => [h.fileName, h.state, h.source, h.answerName])).toEqual([
        ['lote_1.b.csv', 'awaiting', 'bill-payments/lote_1.b.csv', 'lote_1.b'],
        ['lote_1.csv', 'awaiting', 'bill-payments/lote_1.csv', 'lote_1'],
      ]);
      expect((await heldTakingsNamed(store, 'lote_1.csv')).map((h) => h.fileName)).toEqual(['lote_1.csv']);
      expect(await heldTakingsNamed(store, 'lote%')).toEqual([]);
    });
  });

  describe('per-day amounts', () => {
    it('are counted once per batch on the Sao Paulo day, hold across a reopen, and reject a file that passes them', async () => {
      const c = controls({ approvalKinds: [], limits: { 'bill-payments': { perDay: 5000 } } });
      // 02:30 UTC on the 24th is still the 23rd in Sao Paulo (UTC-3).
      const late = new Date('2026-11-24T02:30:00Z');
      expect(brasiliaDay(late)).toBe('2026-11-23');
      await storedBatch('d1', [1500, 1500]);
      expect(await gateBatch(store, 'd1', c, null, late)).toBe('go');
      expect(await gateBatch(store, 'd1', c, null, late)).toBe('go');
      expect(await releasedOnDay(store, 'bill-payments', '2026-11-23')).toBe(3000);
      await store.close();
      store = await engine.reopen(store);
      await storedBatch('d2', [1000, 1001]);
      expect(await gateBatch(store, 'd2', c, null, late)).toBe('go');
      expect((await store.getBatch('d2'))?.status).toBe('done');
      expect((await store.getRow('d2', 2))?.errorCode).toBe('LIMIT_PER_DAY');
      expect(await releasedOnDay(store, 'bill-payments', '2026-11-23')).toBe(3000);
      // The next day in Sao Paulo starts from zero.
      await storedBatch('d3', [1000, 1001]);
      expect(await gateBatch(store, 'd3', c, null, new Date('2026-11-24T03:30:00Z'))).toBe('go');
      expect((await store.getBatch('d3'))?.status).toBe('running');
      expect(await releasedOnDay(store, 'bill-payments', '2026-11-24')).toBe(2001);
    });

    it("count an approved batch's rows left waiting for the bank; a limit its preview did not show voids the approval", async () => {
      const c = controls({ limits: { 'bill-payments': { perDay: 5000 } } });
      const day1 = new Date('2026-11-23T15:00:00Z');
      const day2 = new Date('2026-11-24T15:00:00Z');
      // Held on the 23rd; the bank could not be reached for its lookups: its rows wait.
      await storedBatch('w1', [2000, 2000]);
      expect(await gateBatch(store, 'w1', c, 'maria', day1)).toBe('hold');
      for (const line of [2, 3]) {
        await store.recordRowWaiting('w1', line, null, { code: 'BANK_UNREACHABLE', message: 'unreachable' });
      }
      // Another file, held the same day within the limit alone (its preview: nothing let go yet).
      await storedBatch('w2', [2000]);
      expect(await gateBatch(store, 'w2', c, 'maria', day1)).toBe('hold');
      expect((await getApproval(store, 'w2'))?.reasons.map((r) => r.code)).toEqual([APPROVAL_CODES.required]);
      for (const id of ['w1', 'w2']) {
        await markPreviewWritten(store, id, day1);
        await decideApproval(store, id, { approve: true, by: 'Ana', user: 'ana', via: 'command' }, RULES, day1);
      }
      // Approved on the 23rd, let go on the 24th: its waiting rows are let go too, and count.
      expect(await gateBatch(store, 'w1', c, null, day2)).toBe('go');
      expect(await releasedOnDay(store, 'bill-payments', '2026-11-24')).toBe(4000);
      // 4000 + 2000 passes 5000: the approval of w2 never saw that. Voided, nothing let go, no intent possible.
      expect(await gateBatch(store, 'w2', c, null, day2, 'en')).toBe('hold');
      expect((await store.getBatch('w2'))?.status).toBe('awaiting_approval');
      const again = (await getApproval(store, 'w2'))!;
      expect(again).toMatchObject({ state: 'awaiting', previewAt: null, decidedBy: null, amountCents: 2000 });
      expect(again.reasons.map((r) => r.code)).toEqual([
        APPROVAL_CODES.required,
        APPROVAL_CODES.perDay,
        APPROVAL_CODES.previewStale,
      ]);
      expect(again.reasons[2]!.message).toMatch(/^Approved by Ana at .* on a preview that did not show LIMIT_PER_DAY/);
      await expect(store.recordIntent('w2', 2, 'pay')).rejects.toThrow(/not approved/);
      expect(await releasedOnDay(store, 'bill-payments', '2026-11-24')).toBe(4000);
      // A new decision needs the new preview; once approved on it, the limit it shows is overridden.
      await expect(
        decideApproval(store, 'w2', { approve: true, by: 'Rui', user: 'ana', via: 'command' }, RULES, day2),
      ).rejects.toMatchObject({ code: APPROVAL_CODES.noPreview });
      await markPreviewWritten(store, 'w2', day2);
      await decideApproval(store, 'w2', { approve: true, by: 'Rui', user: 'ana', via: 'command' }, RULES, day2);
      expect(await gateBatch(store, 'w2', c, null, day2)).toBe('go');
      expect(await releasedOnDay(store, 'bill-payments', '2026-11-24')).toBe(6000);
    });
  });
});
