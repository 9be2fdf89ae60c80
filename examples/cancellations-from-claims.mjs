// Writes a claim-cancellations batch for the claims a claims batch started, ready for the inbox.
// The sandbox (like the bank) gives each claim a fresh id, so a cancellation file must name ids from a result:
//   node examples/cancellations-from-claims.mjs outbox/claims/claims.result.csv inbox/claim-cancellations/cancel.csv
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { parse } from 'csv-parse/sync';

const [from = 'outbox/claims/claims.result.csv', to = 'inbox/claim-cancellations/claim-cancellations.csv'] =
  process.argv.slice(2);
const rows = parse(readFileSync(from, 'utf8').replace(/^\uFEFF/, ''), { columns: true, skip_empty_lines: true });
const lines = ['claimId,participationFlowType,reason'];
for (const row of rows) if (row.status === 'succeeded' && row.claimId) lines.push(`${row.claimId},CLAIMANT,USER_REQUESTED`);
// Temp name, then rename: the daemon never sees a half-written file.
writeFileSync(`${to}.tmp`, `${lines.join('\n')}\n`);
renameSync(`${to}.tmp`, to);
console.log(`${lines.length - 1} cancellation(s) written to ${to}`);
