// Baseline of the validate benchmark: csv-parse alone reading the file, nothing else (no decoding check, no
// mapping, no validation). Same reading idiom as remessa (a read stream piped into the parser, consumed with
// for await). Prints the number of records read, header included.
import { createReadStream } from 'node:fs';
import { parse } from 'csv-parse';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: node bench/baseline-csv-parse.mjs FILE\n');
  process.exit(2);
}
let records = 0;
const parser = createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(parse({ delimiter: ',' }));
for await (const _record of parser) records++;
process.stdout.write(`${JSON.stringify({ records })}\n`);
