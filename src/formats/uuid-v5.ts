/**
 * UUID version 5 (RFC 9562: SHA-1 of the namespace's 16 bytes and the name's UTF-8 bytes, version and variant bits
 * set), byte for byte the `v5(name, namespace)` of the `uuid` package, which remessa's idempotency keys were derived
 * with and still must be: a key is derived at ingestion and derived again when its row is read (src/store/keys.ts),
 * and a key that came out different by one byte would be a new request to the bank, a bill paid twice.
 *
 * Why not `uuid`'s own: for every call it validates and parses the namespace string, turns the name into bytes
 * through `unescape(encodeURIComponent(...))`, copies both into a new array and formats the digest: ~4% of a
 * bill-payment run's CPU (docs/performance.md (d)). Here the namespace's bytes are parsed once (by `uuid`'s own
 * `parse`, so a namespace it refuses is refused with its error) and the name is hashed from the string itself.
 * A name that is not well-formed UTF-16 (a lone surrogate) is handed to `uuid`'s v5, which throws its URIError, as
 * before. test/uuid-v5.test.ts checks the equality against `uuid` (fast-check) and on fixed vectors.
 */
import { createHash } from 'node:crypto';
import { parse as parseUuid, v5 as uuidPackageV5 } from 'uuid';

/** Namespaces seen (a process uses a handful: one per account id, plus the fixed ones); bounded all the same. */
const namespaces = new Map<string, Buffer>();
const MAX_NAMESPACES = 256;

const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => (i + 0x100).toString(16).slice(1));

/** A lone surrogate (`uuid` throws on it); a pair is one code point under the `u` flag and does not match. */
const LONE_SURROGATE = /\p{Cs}/u;

function namespaceBytes(namespace: string): Buffer {
  let bytes = namespaces.get(namespace);
  if (bytes === undefined) {
    bytes = Buffer.from(parseUuid(namespace)); // throws TypeError('Invalid UUID') as uuid's v5 does
    if (namespaces.size >= MAX_NAMESPACES) namespaces.clear();
    namespaces.set(namespace, bytes);
  }
  return bytes;
}

/** The same string as `v5(name, namespace)` of the `uuid` package (lower-case 8-4-4-4-12). */
export function uuidV5(name: string, namespace: string): string {
  // uuid reads the name before the namespace: a name it refuses is refused first, whatever the namespace.
  if (LONE_SURROGATE.test(name)) return uuidPackageV5(name, namespace);
  const ns = namespaceBytes(namespace);
  const b = createHash('sha1').update(ns).update(name, 'utf8').digest();
  return `${HEX[b[0]!]}${HEX[b[1]!]}${HEX[b[2]!]}${HEX[b[3]!]}-${HEX[b[4]!]}${HEX[b[5]!]}-${HEX[(b[6]! & 0x0f) | 0x50]}${
    HEX[b[7]!]
  }-${HEX[(b[8]! & 0x3f) | 0x80]}${HEX[b[9]!]}-${HEX[b[10]!]}${HEX[b[11]!]}${HEX[b[12]!]}${HEX[b[13]!]}${HEX[b[14]!]}${
    HEX[b[15]!]
  }`;
}
