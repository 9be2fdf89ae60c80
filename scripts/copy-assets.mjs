// Copies the non-TypeScript files the program reads at run time (SQL migrations, SQLite's and PostgreSQL's) from src/
// to dist/.
import { cpSync, existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(import.meta.dirname, '..');
function walk(dir) {
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) {
      if (name === 'migrations' || name === 'migrations-pg') {
        const target = path.join(root, 'dist', path.relative(path.join(root, 'src'), full));
        cpSync(full, target, { recursive: true });
      } else walk(full);
    }
  }
}
if (existsSync(path.join(root, 'src'))) walk(path.join(root, 'src'));
