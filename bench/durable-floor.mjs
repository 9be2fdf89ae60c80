// A probe, not a baseline of `npm run bench`: what the durability rules cost at the least, written the plainest way.
// remessa's built BankClient makes the calls of bench/baseline-client.mjs (look the bill up, pay it with an
// IdempotencyKey), and better-sqlite3 keeps the writes a row needs in a table shaped like the store's `rows`:
// - every row stored first, 500 a transaction (ingestion);
// - before each payment leaves, its intent (and the lookup's answer) committed with synchronous=FULL;
// - after it, its answer committed with synchronous=NORMAL; the result lines written to a file and renamed.
// No engine, queue, state machine, retries, file reading or validation. docs/performance.md (d) eleventh pass.
//
// usage: node bench/durable-floor.mjs DIST URL FILE CONCURRENCY DB [MODE]   (DIST: a build of src/, e.g. .bench/dist)
// MODE: per-row (default: each row's write waits up to 2 ms for the other rows' writes, one commit for them all, as
//       remessa's commit window did), per-page (a page of 256 rows: its lookups, its intents in ONE commit, its
//       payments, its answers in one commit), no-fsync (per-row, synchronous=OFF), no-store (per-row, no writes
//       after ingestion).
import { hash, randomUUID } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { benchClient, payAll, readBills } from './bills-file.mjs';

const [dist, url, file, concurrencyText, dbPath, mode = 'per-row'] = process.argv.slice(2);
if (!dist || !url || !file || !concurrencyText || !dbPath) {
  process.stderr.write('usage: node bench/durable-floor.mjs DIST URL FILE CONCURRENCY DB [MODE]\n');
  process.exit(2);
}
if (!['per-row', 'per-page', 'no-fsync', 'no-store'].includes(mode)) throw new Error(`unknown mode ${mode}`);
const concurrency = Number(concurrencyText);
const client = await benchClient(dist, url, concurrency);
const Database = createRequire(import.meta.url)('better-sqlite3');

const bills = readBills(file);
const db = new Database(dbPath);
db.pragma('journal_mode = WAL');
const fullSync = mode === 'no-fsync' ? 'synchronous = OFF' : 'synchronous = FULL';
const answerSync = mode === 'no-fsync' ? 'synchronous = OFF' : 'synchronous = NORMAL';
db.pragma(fullSync);
db.exec(`
  CREATE TABLE rows (batch_id TEXT NOT NULL, line INTEGER NOT NULL, natural_key TEXT, cells TEXT, parsed TEXT,
    state TEXT NOT NULL, current_step TEXT, outputs TEXT, amount_cents INTEGER, updated_at TEXT NOT NULL,
    PRIMARY KEY (batch_id, line)) WITHOUT ROWID;
  CREATE INDEX rows_unfinished ON rows (batch_id, state) WHERE state IN ('pending', 'in_flight', 'waiting', 'uncertain');
  CREATE TABLE steps (batch_id TEXT NOT NULL, line INTEGER NOT NULL, step TEXT NOT NULL, state TEXT NOT NULL,
    PRIMARY KEY (batch_id, line, step)) WITHOUT ROWID;
  CREATE TABLE natural_keys (key_digest BLOB PRIMARY KEY, batch_id TEXT NOT NULL, line INTEGER NOT NULL) WITHOUT ROWID;
`);
const BATCH = '20261127T123231Z-aec90e63';
const insertRow = db.prepare(`INSERT INTO rows VALUES (?, ?, ?, ?, ?, 'pending', NULL, NULL, ?, ?)`);
const insertKey = db.prepare('INSERT INTO natural_keys VALUES (?, ?, ?)');
const intentRow = db.prepare(
  `UPDATE rows SET state = 'in_flight', current_step = 'pay', outputs = ?, updated_at = ? WHERE batch_id = ? AND line = ?`,
);
const intentStep = db.prepare(
  `INSERT INTO steps VALUES (?, ?, 'pay', 'intent') ON CONFLICT DO UPDATE SET state = 'intent'`,
);
const doneRow = db.prepare(
  `UPDATE rows SET state = 'succeeded', current_step = NULL, outputs = ?, updated_at = ? WHERE batch_id = ? AND line = ?`,
);
const deleteSteps = db.prepare('DELETE FROM steps WHERE batch_id = ? AND line = ?');

const lineOf = new Map(bills.map((bill, i) => [bill, i + 2]));
for (let i = 0; i < bills.length; i += 500) {
  db.transaction(() => {
    for (const bill of bills.slice(i, i + 500)) {
      const cells = JSON.stringify([bill.identifier, '', String(bill.amountCents / 100)]);
      const now = new Date().toISOString();
      insertRow.run(
        BATCH,
        lineOf.get(bill),
        `0|${bill.amountCents}|`,
        cells,
        `[${bill.amountCents}]`,
        bill.amountCents,
        now,
      );
      insertKey.run(
        Buffer.from(hash('sha256', `bill-payments\n${bill.identifier}`, 'hex').slice(0, 32), 'hex'),
        BATCH,
        lineOf.get(bill),
      );
    }
  })();
}

const intent = (bill, looked) => {
  intentRow.run(JSON.stringify(looked), new Date().toISOString(), BATCH, lineOf.get(bill));
  intentStep.run(BATCH, lineOf.get(bill));
};
const answer = (bill, looked, paid) => {
  doneRow.run(JSON.stringify([looked, paid]), new Date().toISOString(), BATCH, lineOf.get(bill));
  deleteSteps.run(BATCH, lineOf.get(bill));
};
const commit = (durable, writes) => {
  if (!durable) db.pragma(answerSync);
  try {
    db.transaction(() => {
      for (const w of writes) w();
    })();
  } finally {
    if (!durable) db.pragma(fullSync);
  }
};

/** Per row: a write waits up to 2 ms for the others', then one commit holds them all. */
function grouped(durable) {
  if (mode === 'no-store') return () => Promise.resolve();
  let queued = [];
  let scheduled = false;
  const flush = () => {
    scheduled = false;
    const group = queued;
    queued = [];
    commit(
      durable,
      group.map((w) => w.write),
    );
    for (const w of group) w.resolve();
  };
  return (write) =>
    new Promise((resolve) => {
      queued.push({ write, resolve });
      if (!scheduled) setTimeout(flush, 2);
      scheduled = true;
    });
}

const results = new Array(bills.length);
const resultLine = (bill, paid) => `${bill.identifier},${bill.amountCents},succeeded,${paid.id ?? ''}`;
let paid = 0;
let failed = 0;
if (mode === 'per-page') {
  for (let p = 0; p < bills.length; p += 256) {
    const page = bills.slice(p, p + 256);
    const looked = new Map();
    const payments = new Map();
    await payAll(page, concurrency, async (bill) => {
      looked.set(bill, await client.billPayments.lookup(bill.identifier));
    });
    commit(
      true,
      page.map((bill) => () => intent(bill, looked.get(bill))),
    );
    const r = await payAll(page, concurrency, async (bill) => {
      const payment = await client.billPayments.pay(looked.get(bill), {
        amountCents: bill.amountCents,
        idempotencyKey: randomUUID(),
      });
      payments.set(bill, payment);
      results[lineOf.get(bill) - 2] = resultLine(bill, payment);
    });
    paid += r.paid;
    failed += r.failed;
    commit(
      false,
      page.filter((bill) => payments.has(bill)).map((bill) => () => answer(bill, looked.get(bill), payments.get(bill))),
    );
  }
} else {
  const intents = grouped(true);
  const answers = grouped(false);
  ({ paid, failed } = await payAll(bills, concurrency, async (bill) => {
    const looked = await client.billPayments.lookup(bill.identifier);
    await intents(() => intent(bill, looked));
    const payment = await client.billPayments.pay(looked, {
      amountCents: bill.amountCents,
      idempotencyKey: randomUUID(),
    });
    await answers(() => answer(bill, looked, payment));
    results[lineOf.get(bill) - 2] = resultLine(bill, payment);
  }));
}
await client.close();
writeFileSync(`${dbPath}.result.tmp`, `${results.join('\n')}\n`);
renameSync(`${dbPath}.result.tmp`, `${dbPath}.result.csv`);
db.close();
process.stdout.write(`${JSON.stringify({ bills: bills.length, paid, failed, mode })}\n`);
process.exit(failed === 0 ? 0 : 1);
