/**
 * What one statement costs this process on PostgreSQL, whatever it does: N statements one after the other on one
 * connection of `pg` (the store's driver) to a throw-away cluster, as the store sends them, with the process's CPU
 * (user + system) per statement. docs/performance.md "(d) Sixth pass" uses it to tell how much of a bill row's CPU on
 * PostgreSQL its round trips account for.
 *
 * usage: npx tsx bench/pg-query-cost.ts [N]   (default 5,000 statements a kind; needs PostgreSQL's binaries)
 */
import pg from 'pg';
import { startPostgres } from '../test/helpers/postgres.js';

const n = Number(process.argv[2] ?? 5_000);
const cluster = await startPostgres();
try {
  const db = await cluster.createDatabase();
  const pool = new pg.Pool({
    host: '127.0.0.1',
    port: cluster.port,
    user: cluster.user,
    password: cluster.password,
    database: db.name,
    max: 1,
  });
  await pool.query('CREATE TABLE t (a integer PRIMARY KEY, b text)');
  await pool.query(`INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 1000) g`);
  const client = await pool.connect();
  const kinds: Array<[string, (i: number) => Promise<unknown>]> = [
    ['SELECT $1 (one value)', (i) => client.query('SELECT $1::integer AS x', [i])],
    ['SELECT a row by key', (i) => client.query('SELECT a, b FROM t WHERE a = $1', [1 + (i % 1000)])],
    ['UPDATE a row by key', (i) => client.query('UPDATE t SET b = $2 WHERE a = $1', [1 + (i % 1000), `y${i}`])],
    [
      'BEGIN, then COMMIT (two)',
      async () => {
        await client.query('BEGIN');
        await client.query('COMMIT');
      },
    ],
  ];
  console.log(`| statement (${n} one after the other) | CPU µs each | of which system | wall µs each |`);
  console.log('|---|---|---|---|');
  for (const [label, run] of kinds) {
    for (let i = 0; i < 200; i++) await run(i); // warm
    const cpu = process.cpuUsage();
    const started = performance.now();
    for (let i = 0; i < n; i++) await run(i);
    const used = process.cpuUsage(cpu);
    const per = label.startsWith('BEGIN') ? 2 * n : n;
    console.log(
      `| ${label} | ${((used.user + used.system) / per).toFixed(1)} | ${(used.system / per).toFixed(1)} | ${(
        ((performance.now() - started) * 1000) / per
      ).toFixed(0)} |`,
    );
  }
  client.release();
  await pool.end();
} finally {
  await cluster.stop();
}
