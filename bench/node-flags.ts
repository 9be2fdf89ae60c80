/**
 * The node flags of a command's first line: `#!/usr/bin/env -S node --single-threaded` (src/cli.ts, kept by tsc in
 * dist/cli.js), which the bin, the systemd units and `npm start` run remessa with (src/v8-flags.ts). The bench runs
 * remessa with them (bench/run.ts); test/systemd.test.ts checks the units and `npm start` carry them.
 */
import { readFileSync } from 'node:fs';

/** `#!/usr/bin/env node`, or with flags `#!/usr/bin/env -S node --a --b=1` (env passes several words only with -S). */
const SHEBANG = /^#!\/usr\/bin\/env (?:node|-S node((?: --[\w=.-]+)+))$/;

/** The flags of `file`'s first line; throws when that line is not a node shebang of that form. */
export function shebangFlags(file: string): string[] {
  const first = readFileSync(file, 'utf8').split('\n', 1)[0]!;
  const m = SHEBANG.exec(first);
  if (!m) throw new Error(`${file}: expected a first line "#!/usr/bin/env node [or -S node --flags]", got ${first}`);
  return m[1] === undefined ? [] : m[1].trim().split(' ');
}
