/**
 * The V8 flags of every remessa process, set when this module is evaluated: src/cli.ts imports it before any other
 * module, and the bench's client baseline (bench/baseline-client.mjs) imports the built one, so that what it measures
 * runs as a run does. Each flag was measured on its own (docs/performance.md (d)); why, at each.
 *
 * One flag V8 takes only on node's command line is on the command's: `--single-threaded` (no background threads for
 * V8: the collector and the optimizing compiler work on the main thread). A run's CPU went down 6.5% on average over
 * seven alternated pairs of 20,000 bills (-2% to -14%; the bare loop's by about 3%), peak RSS no higher, wall time the
 * same: on two cores shared with the bank, V8's helper threads cost more in all than the work they take off
 * (docs/performance.md (d) twenty-first pass). Set from here, V8 aborts the process (measured). So it is in the bin's
 * first line (src/cli.ts: `#!/usr/bin/env -S node --single-threaded`; `env -S` is GNU coreutils' since 8.30, Debian
 * 10 on, and BSD's), the systemd units' `ExecStart`, `npm start`, and the bench, which reads it from that first line
 * (test/systemd.test.ts checks the units carry it). `node dist/cli.js` typed by hand runs without it: slower, not
 * otherwise different.
 */
import { setFlagsFromString } from 'node:v8';

const RUN_V8_FLAGS: readonly string[] = [
  /**
   * The heap grows by at most 30% of what a full collection left alive before the next full collection (V8's default
   * lets it grow up to 4x). A run drives thousands of rows whose short-lived objects (requests, answers, statements'
   * results) outlive a young collection or two while their request is out: promoted, they are garbage in the old space,
   * which V8 let grow to ~110 MB before its first full collection although ~30 MB was alive (docs/performance.md (d):
   * peak RSS 212 -> 168 MB on 3,000 bill payments, CPU within the noise). Set before anything is allocated.
   * Not here: the young generation's size (`--max-semi-space-size`), which V8 fixes at start-up (set from here it does
   * nothing: measured); the systemd units pass it on node's command line (systemd/remessa.service).
   */
  '--heap-growing-percent=30',
  /**
   * WebAssembly stays in V8's baseline compiler (Liftoff). remessa's one WebAssembly module is undici's HTTP parser
   * (llhttp). Moments after the first requests, V8 would recompile its hot functions with its optimizing compiler,
   * and that compilation held 20-30 MB outside the heap for about 100 ms: the peak of a whole run's memory
   * (docs/performance.md (d) fourth pass: peak RSS 163 -> 141 MB on 3,000 bill payments, CPU within the noise).
   * V8 reads the flag when it compiles a module, and undici compiles llhttp at its first connection, long after this.
   */
  '--liftoff-only',
  /**
   * No allocation-site pretenuring. V8 moves an allocation site whose objects all survived a young collection to
   * allocating straight into the old generation; a site shared by every schema's parse (zod's outputs), tenured while
   * the start-up's objects were all alive, then puts each bank answer's object there. Dead, it still holds what it
   * points to (the answer's strings and nested objects) through every young collection until the next full one:
   * those are promoted too. In some runs it happened, in others not: 20,000 bills, three alternated pairs, promoted
   * 156-231 MB and 26-45 full collections with it, 148-150 MB and 21-23 without; peak RSS the same
   * (docs/performance.md (d) eighth pass). Set before the first schema parses.
   */
  '--no-allocation-site-pretenuring',
];

for (const flag of RUN_V8_FLAGS) setFlagsFromString(flag);
