/**
 * `engines` in package.json is honest: every package the lock file installs (dependencies and dev dependencies, the
 * ones CI and `npm install` put on a user's machine) accepts the oldest Node the project says it runs on. A package
 * that asks for a newer Node (cookie 2, pulled in by fastify's light-my-request 6.8, wants Node 22) is pinned back by
 * `overrides` or the floor is raised, knowingly.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '..');
const read = (file: string) => JSON.parse(readFileSync(path.join(root, file), 'utf8'));

describe('engines', () => {
  it('every installed package accepts the oldest Node that package.json declares', () => {
    const pkg = read('package.json') as { engines: { node: string } };
    const floor = semver.minVersion(pkg.engines.node);
    expect(floor?.version).toBe('20.19.0');
    const lock = read('package-lock.json') as {
      packages: Record<string, { version?: string; engines?: unknown }>;
    };
    const refusing: string[] = [];
    for (const [where, entry] of Object.entries(lock.packages)) {
      const wants = (entry.engines as { node?: unknown } | undefined)?.node;
      if (typeof wants !== 'string') continue;
      if (!semver.satisfies(floor!, wants)) refusing.push(`${where}@${entry.version}: node ${wants}`);
    }
    expect(refusing).toEqual([]);
  });
});
