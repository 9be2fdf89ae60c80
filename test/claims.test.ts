/**
 * Key claims against the sandbox over real HTTP (spec 4.5, 2.11, 7; brazilian-formats.md section 6), through the
 * bank client where it has the call, undici for the admin route and for bodies the client's types would not allow.
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { BankClient } from '../src/bank/client.js';
import { ConflictError, NotFoundError, ValidationError } from '../src/bank/errors.js';
import type { StartClaimInput } from '../src/bank/types.js';
import {
  CANCELLATION_REASONS,
  type CancellationReason,
  CLAIM_TYPES,
  type ClaimType,
  PARTICIPATION_FLOW_TYPES,
  type ParticipationFlowType,
} from '../src/formats/claims.js';
import { WHO_MAY_CANCEL } from '../src/sandbox/claims-rules.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY } from '../src/sandbox/server.js';
import { failure } from './helpers/errors.js';
import { type RawMethod, rawRequest, sandboxPerTest } from './helpers/sandbox.js';

const API_KEY = 'claims-test-key-0001';
const OTHER_KEY = 'claims-test-key-0002';
const NOW = new Date('2026-03-10T12:00:00.000Z');
const CPF_A = '12345678909';
const CPF_B = '52998224725';
const CNPJ = '11222333000181';

const sandboxes = sandboxPerTest({
  // Without the fixture claims, so searches see only what each test started.
  sandbox: { apiKeys: [API_KEY, OTHER_KEY], now: () => NOW, claimFixtures: false },
  client: { apiKey: API_KEY },
});
const { setup } = sandboxes;

function emailClaim(key: string, document = CPF_A): StartClaimInput {
  return {
    type: 'EMAIL',
    key,
    account: {
      number: '123456',
      branch: '0001',
      type: 'CURRENT',
      holder: { document, name: 'Fulana de Tal', type: 'NATURAL' },
    },
  };
}

const raw = (
  sandbox: RunningSandbox,
  method: RawMethod,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
) => rawRequest(sandbox, method, path, body, { 'x-service-api-key': API_KEY, ...headers });

async function admin(sandbox: RunningSandbox, id: string, body: Record<string, unknown>) {
  return raw(sandbox, 'PATCH', `/__sandbox/claims/${id}`, body);
}

function startRaw(sandbox: RunningSandbox, body: unknown) {
  return raw(sandbox, 'POST', '/indirect-pix/api/v1/dict/claims', body, { IdempotencyKey: randomUUID() });
}

describe('claim start', () => {
  it('starts an EMAIL claim: PENDIG, deadline 7 days ahead, donor participant named', async () => {
    const { client, sandbox } = await setup();
    const started = await client.claims.start(emailClaim('Fulana@Example.com'), randomUUID());
    expect(started.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(started.status).toBe('PENDIG');
    expect(started.resolutionDeadline).toBe('2026-03-17T12:00:00.000Z');
    expect(started.donorParticipant?.name).toBeTruthy();
    expect(started.donorParticipant?.ispb).toMatch(/^\d{8}$/);
    const view = await raw(sandbox, 'GET', `/__sandbox/claims/${started.id}`);
    expect(view.json).toMatchObject({
      type: 'PORTABILITY',
      participationFlowType: 'CLAIMANT',
      entry: { key: 'fulana@example.com', type: 'EMAIL' },
      claimantAccount: { number: '123456', branch: '0001', type: 'CURRENT', participant: { ispb: '38224857' } },
    });
    expect(sandbox.ctx.ledger.counts({ kind: 'claim_created' })).toHaveLength(1);
  });

  it('spells the open status PENDING when configured', async () => {
    const { client } = await setup({ claimPendingSpelling: 'PENDING' });
    const started = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    expect(started.status).toBe('PENDING');
  });

  it('starts a PHONE claim with a +55 mobile key', async () => {
    const { client, sandbox } = await setup();
    const started = await client.claims.start(
      { ...emailClaim(''), type: 'PHONE', key: '+5511987654321' },
      randomUUID(),
    );
    const view = await raw(sandbox, 'GET', `/__sandbox/claims/${started.id}`);
    expect(view.json.entry).toEqual({ key: '+5511987654321', type: 'PHONE' });
  });

  it.each([
    ['EMAIL', undefined, 'key é obrigatório'],
    ['PHONE', undefined, 'key é obrigatório'],
    ['EMAIL', 'not-an-email', 'e-mail válido'],
    ['PHONE', '11987654321', '+55'],
    ['PHONE', '+55 11 98765-4321', '+55'],
    ['PHONE', '+551130001234', '+55'],
  ])('refuses %s with key %s (VALIDATION_ERROR, Portuguese)', async (type, key, text) => {
    const { client } = await setup();
    const input = { ...emailClaim('x@example.com'), type, key } as StartClaimInput;
    const err = await failure(client.claims.start(input, randomUUID()));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.status).toBe(400);
    expect(err.serviceCode).toBe('VALIDATION_ERROR');
    expect(err.messages.join(' ')).toContain(text);
  });

  it('DOCUMENT uses the holder document as key; a different key is refused', async () => {
    const { client, sandbox } = await setup();
    const input: StartClaimInput = { ...emailClaim(''), type: 'DOCUMENT', key: undefined };
    const started = await client.claims.start(input, randomUUID());
    const view = await raw(sandbox, 'GET', `/__sandbox/claims/${started.id}`);
    expect(view.json.entry).toEqual({ key: CPF_A, type: 'DOCUMENT' });
    expect(view.json.type).toBe('PORTABILITY');

    const err = await failure(client.claims.start({ ...input, key: CPF_B }, randomUUID()));
    expect(err.serviceCode).toBe('VALIDATION_ERROR');
    expect(err.messages.join(' ')).toContain('documento do titular');
  });

  it('accepts a LEGAL holder with a CNPJ', async () => {
    const { client } = await setup();
    const input: StartClaimInput = {
      type: 'DOCUMENT',
      account: {
        number: '98765',
        branch: '0001',
        type: 'PAYMENT',
        holder: { document: CNPJ, name: 'Empresa Ltda', type: 'LEGAL' },
      },
    };
    await expect(client.claims.start(input, randomUUID())).resolves.toMatchObject({ status: 'PENDIG' });
  });

  it.each([
    ['a CPF with wrong check digits', { document: '12345678900', type: 'NATURAL' }, 'dígitos verificadores'],
    ['a CNPJ with wrong check digits', { document: '11222333000180', type: 'LEGAL' }, 'dígitos verificadores'],
    ['a CNPJ for a NATURAL holder', { document: CNPJ, type: 'NATURAL' }, '11 dígitos'],
    ['a CPF for a LEGAL holder', { document: CPF_A, type: 'LEGAL' }, '14 caracteres'],
  ])('refuses %s', async (_name, holder, text) => {
    const { sandbox } = await setup();
    const body = emailClaim('x@example.com');
    const res = await startRaw(sandbox, {
      ...body,
      account: { ...body.account, holder: { ...body.account.holder, ...holder } },
    });
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('VALIDATION_ERROR');
    expect(res.json.errors.join(' ')).toContain(text);
    expect(JSON.stringify(res.json)).not.toContain(holder.document); // personal data is not echoed
  });

  it('requires account and holder, listing every problem in the title/code/errors shape', async () => {
    const { sandbox } = await setup();
    const noAccount = await startRaw(sandbox, { type: 'EMAIL', key: 'a@example.com' });
    expect(noAccount.status).toBe(400);
    expect(noAccount.json).toEqual({
      title: 'Requisição inválida',
      code: 'VALIDATION_ERROR',
      errors: ['O campo account é obrigatório (number, branch, type, holder).'],
    });
    const noHolder = await startRaw(sandbox, {
      type: 'SOMETHING',
      key: 'a@example.com',
      account: { number: '1', branch: '1', type: 'CHECKING' },
    });
    expect(noHolder.status).toBe(400);
    const text = noHolder.json.errors.join('\n');
    expect(text).toContain('type');
    expect(text).toContain('account.type');
    expect(text).toContain('account.holder é obrigatório');
  });

  it('needs the IdempotencyKey header', async () => {
    const { sandbox } = await setup();
    const res = await raw(sandbox, 'POST', '/indirect-pix/api/v1/dict/claims', emailClaim('a@example.com'));
    expect(res.status).toBe(400);
  });

  it('replays a start with the same key and body: one claim, one ledger effect', async () => {
    const { client, sandbox } = await setup();
    const key = randomUUID();
    const first = await client.claims.start(emailClaim('once@example.com'), key);
    const second = await client.claims.start(emailClaim('once@example.com'), key);
    expect(second).toEqual(first);
    expect(sandbox.ctx.ledger.count('claim_created', key)).toBe(1);
  });

  it('refuses a second open claim for the same key (409 CLAIM_ALREADY_OPEN) until the first ends', async () => {
    const { client, sandbox } = await setup();
    const first = await client.claims.start(emailClaim('dup@example.com'), randomUUID());
    const err = await failure(client.claims.start(emailClaim('DUP@example.com', CPF_B), randomUUID()));
    expect(err).toBeInstanceOf(ConflictError);
    expect(err.serviceCode).toBe('CLAIM_ALREADY_OPEN');
    await admin(sandbox, first.id, { status: 'CANCELED', force: true });
    await expect(client.claims.start(emailClaim('dup@example.com', CPF_B), randomUUID())).resolves.toBeDefined();
  });

  it('picks OWNERSHIP when the key was last completed for another holder, PORTABILITY for the same holder', async () => {
    const { client, sandbox } = await setup();
    const first = await client.claims.start(emailClaim('moving@example.com', CPF_A), randomUUID());
    for (const status of ['AWAITING_RESOLUTION', 'CONFIRMED', 'COMPLETED']) {
      expect((await admin(sandbox, first.id, { status })).status).toBe(200);
    }
    const other = await client.claims.start(emailClaim('moving@example.com', CPF_B), randomUUID());
    expect((await raw(sandbox, 'GET', `/__sandbox/claims/${other.id}`)).json.type).toBe('OWNERSHIP');
    await admin(sandbox, other.id, { status: 'CANCELED', force: true });
    const same = await client.claims.start(emailClaim('moving@example.com', CPF_A), randomUUID());
    expect((await raw(sandbox, 'GET', `/__sandbox/claims/${same.id}`)).json.type).toBe('PORTABILITY');
  });
});

describe('claim search', () => {
  it('requires participationFlowType', async () => {
    const { sandbox } = await setup();
    const res = await raw(
      sandbox,
      'POST',
      '/indirect-pix/api/v1/dict/claims/search',
      {},
      { IdempotencyKey: randomUUID() },
    );
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('VALIDATION_ERROR');
    expect(res.json.errors[0]).toContain('participationFlowType');
  });

  it('defaults to AWAITING_RESOLUTION and accepts both PENDIG and PENDING', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    const b = await client.claims.start(emailClaim('b@example.com'), randomUUID());
    await admin(sandbox, b.id, { status: 'AWAITING_RESOLUTION' });

    const byDefault = await client.claims.search({ participationFlowType: 'CLAIMANT' }, randomUUID());
    expect(byDefault.map((c) => c.id)).toEqual([b.id]);
    for (const status of ['PENDIG', 'PENDING'] as const) {
      const open = await client.claims.search({ participationFlowType: 'CLAIMANT', status }, randomUUID());
      expect(open.map((c) => c.id)).toEqual([a.id]);
      expect(open[0]?.status).toBe('PENDIG');
    }
    const item = byDefault[0]!;
    expect(item).toMatchObject({
      id: b.id,
      type: 'PORTABILITY',
      status: 'AWAITING_RESOLUTION',
      participationFlowType: 'CLAIMANT',
      entry: { key: 'b@example.com', type: 'EMAIL' },
      resolutionDeadline: '2026-03-17T12:00:00.000Z',
    });
    expect(await client.claims.search({ participationFlowType: 'DONOR' }, randomUUID())).toEqual([]);
  });

  it('requires holder document and type when holder is present, and filters by them and the account', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com', CPF_A), randomUUID());
    const b = await client.claims.start(emailClaim('b@example.com', CPF_B), randomUUID());
    for (const id of [a.id, b.id]) await admin(sandbox, id, { status: 'AWAITING_RESOLUTION' });

    for (const holder of [{ type: 'NATURAL' }, { document: CPF_A }]) {
      const res = await raw(
        sandbox,
        'POST',
        '/indirect-pix/api/v1/dict/claims/search',
        { participationFlowType: 'CLAIMANT', account: { number: '123456', holder } },
        { IdempotencyKey: randomUUID() },
      );
      expect(res.status).toBe(400);
      expect(res.json.code).toBe('VALIDATION_ERROR');
      expect(res.json.errors.join(' ')).toContain('account.holder');
    }
    const found = await client.claims.search(
      { participationFlowType: 'CLAIMANT', account: { holder: { document: CPF_B, type: 'NATURAL' } } },
      randomUUID(),
    );
    expect(found.map((c) => c.id)).toEqual([b.id]);
    const byAccount = await client.claims.search(
      { participationFlowType: 'CLAIMANT', account: { number: '999', branch: '0001', type: 'CURRENT' } },
      randomUUID(),
    );
    expect(byAccount).toEqual([]);
  });

  it('shows only the claims of the API key used', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    await admin(sandbox, a.id, { status: 'AWAITING_RESOLUTION' });
    const other = sandboxes.closeAfterTest(new BankClient({ baseUrl: sandbox.url, apiKey: OTHER_KEY, maxAttempts: 1 }));
    expect(await other.claims.search({ participationFlowType: 'CLAIMANT' }, randomUUID())).toEqual([]);
    const err = await failure(
      other.claims.cancel(a.id, { participationFlowType: 'CLAIMANT', reason: 'FRAUD' }, randomUUID()),
    );
    expect(err.serviceCode).toBe('CLAIM_NOT_FOUND');
  });
});

describe('claim cancel', () => {
  it('refuses an id that is not a GUID with 400 VALIDATION_ERROR', async () => {
    const { client } = await setup();
    const err = await failure(
      client.claims.cancel('not-a-guid', { participationFlowType: 'CLAIMANT', reason: 'USER_REQUESTED' }, randomUUID()),
    );
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.status).toBe(400);
    expect(err.serviceCode).toBe('VALIDATION_ERROR');
    expect(err.title).toBe('Requisição inválida');
    expect(err.messages[0]).toContain('GUID');
  });

  it('answers 404 CLAIM_NOT_FOUND for an unknown claim', async () => {
    const { client } = await setup();
    const err = await failure(
      client.claims.cancel(randomUUID(), { participationFlowType: 'CLAIMANT', reason: 'USER_REQUESTED' }, randomUUID()),
    );
    expect(err).toBeInstanceOf(NotFoundError);
    expect(err.status).toBe(404);
    expect(err.serviceCode).toBe('CLAIM_NOT_FOUND');
    expect(err.title).toBe('Reivindicação não encontrada');
  });

  it('requires participationFlowType and reason', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    const res = await raw(
      sandbox,
      'POST',
      `/indirect-pix/api/v1/dict/claims/${a.id}/cancel`,
      { reason: 'LATER' },
      {
        IdempotencyKey: randomUUID(),
      },
    );
    expect(res.status).toBe(400);
    expect(res.json.code).toBe('VALIDATION_ERROR');
    expect(res.json.errors).toHaveLength(2);
  });

  it('refuses a PENDIG claim unless claimCancellableFromPending is set', async () => {
    const { client } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    const err = await failure(
      client.claims.cancel(a.id, { participationFlowType: 'CLAIMANT', reason: 'USER_REQUESTED' }, randomUUID()),
    );
    expect(err).toBeInstanceOf(ConflictError);
    expect(err.status).toBe(409);
    expect(err.serviceCode).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
    expect(err.title).toBe('Cancelamento não permitido');

    const lenient = await setup({ claimCancellableFromPending: true });
    const b = await lenient.client.claims.start(emailClaim('b@example.com'), randomUUID());
    await expect(
      lenient.client.claims.cancel(b.id, { participationFlowType: 'CLAIMANT', reason: 'USER_REQUESTED' }, randomUUID()),
    ).resolves.toMatchObject({ status: 'CANCELED' });
  });

  it('cancels once: result per 2.11, ledger effect, replay, then completed/cancelled claims refuse', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    await admin(sandbox, a.id, { status: 'CONFIRMED', force: true });
    const key = randomUUID();
    const input = { participationFlowType: 'CLAIMANT', reason: 'ACCOUNT_CLOSURE' } as const;
    const result = await client.claims.cancel(a.id, input, key);
    expect(result).toEqual({
      id: a.id,
      status: 'CANCELED',
      updatedAt: NOW.toISOString(),
      resolutionDeadline: '2026-03-17T12:00:00.000Z',
      cancellation: { reason: 'ACCOUNT_CLOSURE', source: 'CLAIMANT' },
    });
    expect(await client.claims.cancel(a.id, input, key)).toEqual(result);
    expect(sandbox.ctx.ledger.count('claim_cancelled', key)).toBe(1);

    const again = await failure(client.claims.cancel(a.id, input, randomUUID()));
    expect(again.serviceCode).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
    expect(again.messages[0]).toContain('já foi cancelada');

    const b = await client.claims.start(emailClaim('b@example.com'), randomUUID());
    await admin(sandbox, b.id, { status: 'COMPLETED', force: true });
    const done = await failure(client.claims.cancel(b.id, { ...input, reason: 'FRAUD' }, randomUUID()));
    expect(done.serviceCode).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
    expect(done.messages[0]).toContain('concluída');
    expect(sandbox.ctx.ledger.counts({ kind: 'claim_cancelled' })).toHaveLength(1);
  });

  it('refuses a cancel from the side the sandbox is not on', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    await admin(sandbox, a.id, { status: 'AWAITING_RESOLUTION' });
    const err = await failure(
      client.claims.cancel(a.id, { participationFlowType: 'DONOR', reason: 'FRAUD' }, randomUUID()),
    );
    expect(err.serviceCode).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
    expect(err.messages[0]).toContain('não é doador');
  });

  // Every cell of the who-may-cancel table, over HTTP.
  const cells: Array<[CancellationReason, ClaimType, ParticipationFlowType]> = [];
  for (const reason of CANCELLATION_REASONS) {
    for (const type of CLAIM_TYPES) for (const side of PARTICIPATION_FLOW_TYPES) cells.push([reason, type, side]);
  }
  it.each(cells)('%s by the %s %s follows the who-may-cancel table', async (reason, type, side) => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('cell@example.com'), randomUUID());
    const moved = await admin(sandbox, a.id, { status: 'AWAITING_RESOLUTION', type, participationFlowType: side });
    expect(moved.json).toMatchObject({ type, participationFlowType: side, status: 'AWAITING_RESOLUTION' });
    const call = client.claims.cancel(a.id, { participationFlowType: side, reason }, randomUUID());
    if (WHO_MAY_CANCEL[reason][type][side]) {
      await expect(call).resolves.toMatchObject({ status: 'CANCELED', cancellation: { reason, source: side } });
    } else {
      const err = await failure(call);
      expect(err.serviceCode).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
      expect(err.messages[0]).toContain(`pelo motivo ${reason}`);
    }
  });

  it('the table matches brazilian-formats.md section 6', () => {
    // USER_REQUESTED no/yes/yes/yes; ACCOUNT_CLOSURE no/yes/no/yes; FRAUD yes/yes/yes/yes
    const row = (r: CancellationReason) => [
      WHO_MAY_CANCEL[r].OWNERSHIP.DONOR,
      WHO_MAY_CANCEL[r].OWNERSHIP.CLAIMANT,
      WHO_MAY_CANCEL[r].PORTABILITY.DONOR,
      WHO_MAY_CANCEL[r].PORTABILITY.CLAIMANT,
    ];
    expect(row('USER_REQUESTED')).toEqual([false, true, true, true]);
    expect(row('ACCOUNT_CLOSURE')).toEqual([false, true, false, true]);
    expect(row('FRAUD')).toEqual([true, true, true, true]);
  });
});

describe('claims admin route', () => {
  it('moves along the flow, refuses skips and moves out of final statuses unless forced', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    const skip = await admin(sandbox, a.id, { status: 'COMPLETED' });
    expect(skip.status).toBe(409);
    expect((await admin(sandbox, a.id, { status: 'AWAITING_RESOLUTION' })).status).toBe(200);
    expect((await admin(sandbox, a.id, { status: 'PENDING' })).status).toBe(409);
    const cancelled = await admin(sandbox, a.id, { status: 'CANCELED', reason: 'FRAUD' });
    expect(cancelled.json.cancellation).toEqual({ reason: 'FRAUD', source: 'DONOR' });
    expect((await admin(sandbox, a.id, { status: 'CONFIRMED' })).status).toBe(409);
    const forced = await admin(sandbox, a.id, { status: 'CONFIRMED', force: true });
    expect(forced.json.status).toBe('CONFIRMED');
  });

  it('shows the sandbox as donor after a flip to DONOR', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    const flipped = await admin(sandbox, a.id, { participationFlowType: 'DONOR' });
    expect(flipped.json.donorParticipant).toEqual({ name: 'REMESSA SANDBOX BANK', ispb: '38224857' });
    expect(flipped.json.claimantAccount.participant.ispb).not.toBe('38224857');
  });

  it('validates its body and answers 404 for an unknown claim', async () => {
    const { client, sandbox } = await setup();
    const a = await client.claims.start(emailClaim('a@example.com'), randomUUID());
    const bad = await admin(sandbox, a.id, { status: 'DONE', type: 'X', participationFlowType: 'Y' });
    expect(bad.status).toBe(400);
    expect(Object.keys(bad.json.errors).sort()).toEqual(['$.participationFlowType', '$.status', '$.type']);
    expect((await admin(sandbox, randomUUID(), { status: 'CONFIRMED' })).status).toBe(404);
  });

  it('works with the public key too (claims are not restricted to own keys)', async () => {
    const { sandbox } = await setup();
    const client = sandboxes.closeAfterTest(
      new BankClient({ baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, maxAttempts: 1 }),
    );
    await expect(client.claims.start(emailClaim('pub@example.com'), randomUUID())).resolves.toBeDefined();
  });
});
