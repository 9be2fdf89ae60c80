// The bill-payment benchmark's second baseline (`--client`): remessa's own bank client alone, the calls of
// bench/baseline-bills.mjs (look the bill up, then pay it with an IdempotencyKey) made through the built BankClient
// (src/bank: its transport, headers, retries' bookkeeping, answer readers), CONCURRENCY bills at a time. No store,
// engine, queue, file reading or answer file. Between the bare loop and `remessa run`, it tells what a row costs in
// the HTTP layer and what in the rest. Prints counts as JSON.
//
// usage: node bench/baseline-client.mjs DIST URL FILE CONCURRENCY   (DIST: a build of src/, e.g. .bench/dist)
import { randomUUID } from 'node:crypto';
import { benchClient, payAll, readBills } from './bills-file.mjs';

const [dist, url, file, concurrencyText] = process.argv.slice(2);
if (!dist || !url || !file || !concurrencyText) {
  process.stderr.write('usage: node bench/baseline-client.mjs DIST URL FILE CONCURRENCY\n');
  process.exit(2);
}
const concurrency = Number(concurrencyText);
const client = await benchClient(dist, url, concurrency);
const bills = readBills(file);

async function payOne(bill) {
  const looked = await client.billPayments.lookup(bill.identifier);
  await client.billPayments.pay(looked, { amountCents: bill.amountCents, idempotencyKey: randomUUID() });
}
const { paid, failed } = await payAll(bills, concurrency, payOne);
await client.close();
process.stdout.write(`${JSON.stringify({ bills: bills.length, paid, failed })}\n`);
process.exit(failed === 0 ? 0 : 1);
