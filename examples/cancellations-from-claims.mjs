// Writes a claim-cancellations batch for the claims a claims batch started, ready for the inbox.
// The sandbox (like the bank) gives each claim a fresh id, so a cancellation file must name ids from a result:
//   node examples/cancellations-from-claims.mjs outbox/claims/claims.result.csv inbox/claim-cancellations/cancel.csv [SANDBOX_URL]
// A claim can be cancelled once the other participant has answered (AWAITING_RESOLUTION). Against the sandbox, give
// its URL (the daemon logs it as "embedded sandbox started") and its admin route plays that answer first.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';

const [from = 'outbox/claims/claims.result.csv', to = 'inbox/claim-cancellations/claim-cancellations.csv', sandbox] =
  process.argv.slice(2);
const rows = parse(readFileSync(from, 'utf8').replace(/^\uFEFF/, ''), { columns: true, skip_empty_lines: true });
const ids = rows.filter((r) => r.status === 'succeeded' && r.claimId).map((r) => r.claimId);
if (sandbox) {
  for (const id of ids) {
    const res = await fetch(`${sandbox}/__sandbox/claims/${id}`, {
      method: 'PATCH',
      headers: { 'x-service-api-key': 'sandbox-public-test-key', 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'AWAITING_RESOLUTION' }),
    });
    if (!res.ok) console.error(`claim ${id}: ${res.status} ${await res.text()}`);
  }
}
const lines = ['claimId,participationFlowType,reason', ...ids.map((id) => `${id},CLAIMANT,USER_REQUESTED`)];
// Temp name, then rename: the daemon never sees a half-written file.
writeFileSync(`${to}.tmp`, `${lines.join('\n')}\n`);
renameSync(`${to}.tmp`, to);
console.log(`${ids.length} cancellation(s) written to ${to}`);
