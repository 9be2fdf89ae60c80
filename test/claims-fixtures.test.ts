import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { fixtureClaimId, SANDBOX_CLAIM_FIXTURES } from '../src/sandbox/claim-fixtures.js';
import { type RunningSandbox, SANDBOX_PUBLIC_API_KEY, startSandbox } from '../src/sandbox/server.js';

const OTHER_KEY = 'claims-fixture-key-1';
let sandbox: RunningSandbox | undefined;

afterEach(async () => {
  await sandbox?.close();
  sandbox = undefined;
});

async function cancel(url: string, apiKey: string, id: string) {
  const response = await fetch(`${url}/indirect-pix/api/v1/dict/claims/${id}/cancel`, {
    method: 'POST',
    headers: { 'x-service-api-key': apiKey, 'content-type': 'application/json', IdempotencyKey: randomUUID() },
    body: JSON.stringify({ participationFlowType: 'CLAIMANT', reason: 'USER_REQUESTED' }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe('fixture claims', () => {
  it('a fresh sandbox knows the documented claim ids, and each answers a cancel as documented', async () => {
    sandbox = await startSandbox({ apiKeys: [OTHER_KEY] });
    const [awaiting, confirmed, completed] = SANDBOX_CLAIM_FIXTURES;
    const first = await cancel(sandbox.url, SANDBOX_PUBLIC_API_KEY, awaiting!.id);
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ id: awaiting!.id, status: 'CANCELED', cancellation: { source: 'CLAIMANT' } });
    expect((await cancel(sandbox.url, SANDBOX_PUBLIC_API_KEY, confirmed!.id)).status).toBe(200);
    const refused = await cancel(sandbox.url, SANDBOX_PUBLIC_API_KEY, completed!.id);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('CLAIM_CANCELLATION_IS_NOT_ALLOWED');
  });

  it('another key has its own copies, so one key cancelling does not touch the other', async () => {
    sandbox = await startSandbox({ apiKeys: [OTHER_KEY] });
    const id = SANDBOX_CLAIM_FIXTURES[0]!.id;
    expect((await cancel(sandbox.url, SANDBOX_PUBLIC_API_KEY, id)).status).toBe(200);
    const own = fixtureClaimId(id, OTHER_KEY, SANDBOX_PUBLIC_API_KEY);
    expect(own).not.toBe(id);
    expect((await cancel(sandbox.url, OTHER_KEY, own)).status).toBe(200);
    // The public key's fixture id is not the other key's claim.
    expect((await cancel(sandbox.url, OTHER_KEY, id)).body.code).toBe('CLAIM_NOT_FOUND');
  });

  it('docs/sandbox.md lists every fixture with its status', () => {
    const doc = readFileSync(new URL('../docs/sandbox.md', import.meta.url), 'utf8');
    for (const fixture of SANDBOX_CLAIM_FIXTURES) {
      expect(doc).toMatch(new RegExp(`\\| \`${fixture.id}\` \\| ${fixture.status} \\|`));
    }
  });
});
