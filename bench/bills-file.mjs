// What the bill-payment baselines share (bench/baseline-bills.mjs, bench/baseline-client.mjs, bench/durable-floor.mjs):
// the bench's generated file as they read it (plain CSV, a header line, `.` decimals; no validation), their workers,
// and remessa's built bank client as they make it.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * remessa's built BankClient (DIST: a build of src/) for the sandbox at `url`, with `connections` connections. The V8
 * flags of a run (src/v8-flags.ts) are set first, before the client loads, as src/cli.ts sets them.
 */
export async function benchClient(dist, url, connections) {
  await import(pathToFileURL(path.resolve(dist, 'v8-flags.js')).href);
  const { BankClient } = await import(pathToFileURL(path.resolve(dist, 'bank/client.js')).href);
  return new BankClient({
    baseUrl: url,
    apiKey: process.env.REMESSA_API_KEY ?? 'sandbox-public-test-key',
    accountId: 'bench-account',
    connections,
  });
}

/** Each bill's identifier (bar code, else digitable line) and amount in cents, in file order. */
export function readBills(file) {
  const lines = readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const header = lines[0].split(',');
  const at = (name) => header.indexOf(name);
  return lines.slice(1).map((line) => {
    const cells = line.split(',');
    const identifier = cells[at('barCode')] || cells[at('digitableLine')];
    const [units, cents = '0'] = cells[at('amount')].split('.');
    return { identifier, amountCents: Number(units) * 100 + Number(cents.padEnd(2, '0')) };
  });
}

/** Pays every bill with `payOne`, `concurrency` at a time; the first five failures are told on stderr. */
export async function payAll(bills, concurrency, payOne) {
  let paid = 0;
  let failed = 0;
  let next = 0;
  async function worker() {
    while (next < bills.length) {
      const bill = bills[next++];
      try {
        await payOne(bill);
        paid++;
      } catch (err) {
        failed++;
        if (failed <= 5) process.stderr.write(`${err.message}\n`);
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { paid, failed };
}
