// Baseline of the bill-payment benchmark: a bare undici loop making the calls a bill payment needs (look the bill
// up, then pay it with an IdempotencyKey), CONCURRENCY bills at a time, against the sandbox at URL. No store, no
// queue, no validation beyond what is needed to make the calls. Prints counts as JSON.
//
// usage: node bench/baseline-bills.mjs URL FILE CONCURRENCY [LOOKUPS_PER_BILL]
// LOOKUPS_PER_BILL (default 1): 2 repeats the lookup before paying, as remessa's pay step does.
import { randomUUID } from 'node:crypto';
import { Pool } from 'undici';
import { payAll, readBills } from './bills-file.mjs';

const [url, file, concurrencyText, lookupsText] = process.argv.slice(2);
if (!url || !file || !concurrencyText) {
  process.stderr.write('usage: node bench/baseline-bills.mjs URL FILE CONCURRENCY [LOOKUPS_PER_BILL]\n');
  process.exit(2);
}
const concurrency = Number(concurrencyText);
const lookups = Number(lookupsText ?? '1');
const apiKey = process.env.REMESSA_API_KEY ?? 'sandbox-public-test-key';
const PATH = '/baas/api/v1/bill-payments';

const bills = readBills(file);

const pool = new Pool(new URL(url).origin, { connections: concurrency });
const headers = { 'x-service-api-key': apiKey, accept: 'application/json' };
let requests = 0;

async function payOne(bill) {
  let record;
  for (let i = 0; i < lookups; i++) {
    const res = await pool.request({ method: 'GET', path: `${PATH}/${bill.identifier}`, headers });
    requests++;
    record = await res.body.json();
    if (res.statusCode !== 200)
      throw new Error(`lookup ${bill.identifier}: ${res.statusCode} ${JSON.stringify(record)}`);
  }
  if (record.status !== 'PENDING_PAYMENT') throw new Error(`bill ${bill.identifier} reads ${record.status}`);
  const res = await pool.request({
    method: 'POST',
    path: PATH,
    headers: { ...headers, 'content-type': 'application/json', IdempotencyKey: randomUUID() },
    body: JSON.stringify({ amount: bill.amountCents / 100, barCode: record.barCode }),
  });
  requests++;
  const payment = await res.body.json();
  if (res.statusCode >= 300) throw new Error(`pay ${bill.identifier}: ${res.statusCode} ${JSON.stringify(payment)}`);
  return payment;
}

const { paid, failed } = await payAll(bills, concurrency, payOne);
await pool.close();
process.stdout.write(`${JSON.stringify({ bills: bills.length, paid, failed, requests })}\n`);
process.exit(failed === 0 ? 0 : 1);
