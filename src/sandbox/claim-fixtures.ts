/**
 * Fixture key claims, seeded at every start (insert-if-absent, so a claim cancelled once stays cancelled).
 *
 * The sandbox gives every claim started through the API a fresh id, as the bank does; these fixed ids let a
 * claim-cancellations batch (examples/claim-cancellations.csv) succeed against a fresh sandbox, and let tests reach
 * each cancellation branch without the admin route. Every API key the sandbox accepts sees its own copy: claims are
 * scoped per key, and the ids are the same for every key, so the row for one key does not block another.
 * Listed in docs/sandbox.md.
 */
import { addDays } from '../formats/dates.js';
import { apiKeyId } from './auth.js';
import type { SandboxContext } from './server.js';

export interface ClaimFixture {
  /** Fixed GUID (per API key: the stored id is this one for the public key, see `fixtureClaimId`). */
  id: string;
  status: 'AWAITING_RESOLUTION' | 'CONFIRMED' | 'COMPLETED';
  type: 'PORTABILITY' | 'OWNERSHIP';
  participationFlowType: 'CLAIMANT' | 'DONOR';
  key: string;
  keyType: 'EMAIL' | 'PHONE' | 'DOCUMENT';
  /** What a cancellation of it answers, for the docs. */
  note: string;
}

export const SANDBOX_CLAIM_FIXTURES: readonly ClaimFixture[] = [
  {
    id: '7d3c1a52-0c4e-4f6b-9a1d-2e5f8b9c0a11',
    status: 'AWAITING_RESOLUTION',
    type: 'PORTABILITY',
    participationFlowType: 'CLAIMANT',
    key: 'fixture-portabilidade@example.com',
    keyType: 'EMAIL',
    note: 'cancellable by the claimant for any reason',
  },
  {
    id: '2b7e9f40-5c1d-4a8e-b3f6-9d0c1e2a3b44',
    status: 'CONFIRMED',
    type: 'OWNERSHIP',
    participationFlowType: 'CLAIMANT',
    key: '+5511912345678',
    keyType: 'PHONE',
    note: 'cancellable by the claimant for any reason',
  },
  {
    id: 'c0a8e1f2-3b4d-4c5e-8f6a-7b8c9d0e1f22',
    status: 'COMPLETED',
    type: 'PORTABILITY',
    participationFlowType: 'CLAIMANT',
    key: 'fixture-concluida@example.com',
    keyType: 'EMAIL',
    note: 'completed: CLAIM_CANCELLATION_IS_NOT_ALLOWED',
  },
];

/** Inserts the fixtures for every key the sandbox accepts, unless already there. */
export function seedClaimFixtures(ctx: SandboxContext, apiKeys: readonly string[]): void {
  const { db, clock } = ctx;
  const insert = db.prepare(
    `INSERT OR IGNORE INTO claims (id, owner, type, status, participation_flow_type, key, key_type, account_number,
       account_branch, account_type, holder_document, holder_name, holder_type, counterparty_name, counterparty_ispb,
       resolution_deadline, created_at, updated_at)
     VALUES (@id, @owner, @type, @status, @flow, @key, @key_type, '1234567', '0001', 'CURRENT', '12345678909',
       'Titular Exemplo', 'NATURAL', 'BANCO DOADOR EXEMPLO', '00000000', @deadline, @now, @now)`,
  );
  const now = clock.nowIso();
  const deadline = `${addDays(now.slice(0, 10), 7)}${now.slice(10)}`;
  db.transaction(() => {
    for (const apiKey of apiKeys) {
      const owner = apiKeyId(apiKey);
      for (const fixture of SANDBOX_CLAIM_FIXTURES) {
        insert.run({
          id: fixtureClaimId(fixture.id, apiKey, apiKeys[0]),
          owner,
          type: fixture.type,
          status: fixture.status,
          flow: fixture.participationFlowType,
          key: fixture.key,
          key_type: fixture.keyType,
          deadline,
          now,
        });
      }
    }
  })();
}

/**
 * The stored id of a fixture for a key. Ids are a primary key, so only the first key (the public test key when it is
 * accepted) gets the documented ids; any other key gets them with the last 12 hex digits replaced by a hash of the
 * key id, stable across restarts.
 */
export function fixtureClaimId(id: string, apiKey: string, firstKey: string | undefined): string {
  if (apiKey === firstKey) return id;
  return `${id.slice(0, 24)}${apiKeyId(apiKey)
    .replace(/[^0-9a-f]/g, '')
    .padEnd(12, '0')
    .slice(0, 12)}`;
}
