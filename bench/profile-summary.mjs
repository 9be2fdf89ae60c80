// Summarises a .cpuprofile (node --cpu-prof): self time by function and by file, biggest first.
// usage: node bench/profile-summary.mjs FILE.cpuprofile [TOP]
import { readFileSync } from 'node:fs';

const [file, topText] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-summary.mjs FILE.cpuprofile [TOP]\n');
  process.exit(2);
}
const top = Number(topText ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map();
const dt = profile.timeDeltas;
for (let i = 0; i < profile.samples.length; i++) {
  const id = profile.samples[i];
  self.set(id, (self.get(id) ?? 0) + (dt[i] ?? 0));
}
const total = [...self.values()].reduce((a, b) => a + b, 0);
const short = (url) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/.*\/node_modules\//, 'nm:')
    .replace(/.*\/(dist|src)\//, '$1/');
const fn = new Map();
const files = new Map();
for (const [id, us] of self) {
  const n = byId.get(id);
  const cf = n.callFrame;
  const where = short(cf.url || '(native)');
  const key = `${cf.functionName || '(anonymous)'}  ${where}:${cf.lineNumber + 1}`;
  fn.set(key, (fn.get(key) ?? 0) + us);
  const pkg = where.startsWith('nm:')
    ? where
        .split('/')
        .slice(0, where.startsWith('nm:@') ? 2 : 1)
        .join('/')
    : where;
  files.set(pkg, (files.get(pkg) ?? 0) + us);
}
const pct = (us) => `${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms`;
console.log(`total sampled ${(total / 1000).toFixed(0)} ms`);
console.log('\n-- self time by function --');
for (const [k, us] of [...fn].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${k}`);
console.log('\n-- self time by file / package --');
for (const [k, us] of [...files].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${k}`);
