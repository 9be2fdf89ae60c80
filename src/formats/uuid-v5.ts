/**
 * UUID version 5 (RFC 9562: SHA-1 of the namespace's 16 bytes and the name's UTF-8 bytes, version and variant bits
 * set), byte for byte the `v5(name, namespace)` of the `uuid` package, which remessa's idempotency keys were derived
 * with and still must be: a key is derived at ingestion and derived again when its row is read (src/store/keys.ts),
 * and a key that came out different by one byte would be a new request to the bank, a bill paid twice.
 *
 * Why not `uuid`'s own: for every call it validates and parses the namespace string, turns the name into bytes
 * through `unescape(encodeURIComponent(...))`, copies both into a new array and formats the digest: ~4% of a
 * bill-payment run's CPU (docs/performance.md (d)). Here the namespace's bytes are parsed once (by `uuid`'s own
 * `parse`, so a namespace it refuses is refused with its error) and the name's bytes are hashed with them in one
 * call.
 * A name that is not well-formed UTF-16 (a lone surrogate) is handed to `uuid`'s v5, which throws its URIError, as
 * before. test/uuid-v5.test.ts checks the equality against `uuid` (fast-check) and on fixed vectors.
 */
import { hash } from 'node:crypto';
import { parse as parseUuid, v5 as uuidPackageV5 } from 'uuid';

/** Namespaces seen (a process uses a handful: one per account id, plus the fixed ones); bounded all the same. */
const namespaces = new Map<string, Buffer>();
const MAX_NAMESPACES = 256;

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
  // One-shot `hash` in hex: no Hash object a call, and the digits are the UUID's but for two: the version (5) and
  // the variant (the 17th digit's two top bits set to 10: its two low bits kept, 8-b).
  const h = hash('sha1', Buffer.concat([namespaceBytes(namespace), Buffer.from(name, 'utf8')]));
  const variant = '89ab'[Number.parseInt(h[16]!, 16) & 3];
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}
