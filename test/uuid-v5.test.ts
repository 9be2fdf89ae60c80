/**
 * src/formats/uuid-v5.ts must give byte for byte what the `uuid` package's v5 gives (the idempotency keys stored and
 * derived again when read were made with it: one byte off would send a row's payment under a new key), and
 * src/store/keys.ts `naturalKeyDigest` must stay the SHA-256 prefix PostgreSQL's migration 016 computes too.
 */
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { v5 as uuidPackageV5 } from 'uuid';
import { describe, expect, it } from 'vitest';
import { uuidV5 } from '../src/formats/uuid-v5.js';
import { accountNamespace, deriveIdempotencyKey, naturalKeyDigest, REMESSA_NAMESPACE } from '../src/store/keys.js';

/** The value, or the error's class and message: both sides must agree on either. */
function outcome(fn: () => string): string {
  try {
    return fn();
  } catch (error) {
    return `${(error as Error).constructor.name}: ${(error as Error).message}`;
  }
}

const names = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 120 }), // every code point, lone surrogates included
  fc.string({ unit: 'grapheme', maxLength: 60 }),
  fc.string({ unit: 'binary-ascii', maxLength: 300 }),
  fc.constantFrom('', '\n', 'bill-payments\n', '\uD800', 'a\uDC00b', '😀', '\u0000'),
);
const namespaces = fc.oneof(
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
  fc.constantFrom(REMESSA_NAMESPACE, accountNamespace('0001234'), '00000000-0000-0000-0000-000000000000'),
  fc.string({ maxLength: 40 }), // not a UUID: both refuse it alike
);

describe('uuidV5 (node:crypto) against the uuid package', () => {
  it('gives the same string, or the same error, for any name and namespace (property)', () => {
    fc.assert(
      fc.property(names, namespaces, (name, namespace) => {
        expect(outcome(() => uuidV5(name, namespace))).toBe(outcome(() => uuidPackageV5(name, namespace)));
      }),
      { numRuns: 5000 },
    );
  });

  it('gives the same key for the same inputs on every call (the namespace cache)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(names, fc.constantFrom(REMESSA_NAMESPACE, accountNamespace('a')))), (calls) => {
        for (const [name, namespace] of calls) {
          expect(outcome(() => uuidV5(name, namespace))).toBe(outcome(() => uuidPackageV5(name, namespace)));
        }
      }),
    );
  });

  it('fixed vectors: the RFC 4122 example and remessa keys as stored', () => {
    expect(uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8')).toBe(
      '2ed6657d-e927-568b-95e1-2665a8aea6a2',
    );
    const account = accountNamespace('0001234');
    expect(account).toBe('128a0e2d-7e62-549b-b143-7dc817d95337');
    expect(deriveIdempotencyKey(account, 'bill-payments', '34191090000123456789000017773000000000000000')).toBe(
      '0ccc8f5b-9076-5f0c-95ce-dd30890e5180',
    );
    expect(deriveIdempotencyKey(account, 'charges', 'ção-ü-€-😀')).toBe('fc73a6c4-559d-514b-aafc-92a7afa7e288');
    expect(uuidV5('', account)).toBe('95c19b60-b698-504a-b95f-567f2877692e');
    expect(uuidV5('x'.repeat(200), REMESSA_NAMESPACE)).toBe('ee3e6857-0faa-5211-b73a-83c3c3dc2a60');
  });
});

describe('naturalKeyDigest (the natural_keys table, migrations 016 and 022)', () => {
  it('is the first 15 bytes of the SHA-256 of `<kind>\\n<natural key>` in UTF-8, for any key (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom('bill-payments', 'charges'), names, (kind, key) => {
        const whole = createHash('sha256').update(`${kind}\n${key}`).digest();
        expect(naturalKeyDigest(kind, key).equals(whole.subarray(0, 15))).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('matches a digest computed outside Node (sha256sum of the same bytes)', () => {
    const key = '34191313800000059987700000000000000049980000';
    expect(naturalKeyDigest('bill-payments', key).toString('hex')).toBe('21e531e9647ff8218bc4cf1e65c731');
  });
});
