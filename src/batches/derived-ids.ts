/**
 * Derived correlationIds: the id a row gets when its sheet has no correlationId column (src/batches/supply.ts says
 * when each is used). Part of the idempotency contract (correlationId -> natural key -> idempotency key,
 * src/store/keys.ts): never change the namespace, the escaping or what goes into a name, or a sheet dropped again
 * after the change would issue its charges twice.
 */
import { uuidV5 } from '../formats/uuid-v5.js';
import type { KindName } from '../types.js';

/** UUIDv5 namespace of derived correlationIds. Never change it (see above). */
export const DERIVED_ID_NAMESPACE = '8d0f5e2a-6b1c-4f3d-9a7e-2c4b6d8f0a13';

const SAFE_ID_CHAR = /[A-Za-z0-9._:-]/;

/**
 * The correlationId of a charge named by its Seu número: the Seu número itself, each character outside
 * `A-Z a-z 0-9 . _ : -` written as `~` and its UTF-8 bytes in hex (injective: `~` itself is escaped); the UUIDv5 of
 * `yourNumber\n<Seu número>` when that is longer than the id's 100 characters.
 */
export function correlationIdFromYourNumber(yourNumber: string): string {
  let out = '';
  for (const ch of yourNumber) {
    if (SAFE_ID_CHAR.test(ch)) out += ch;
    else for (const b of Buffer.from(ch, 'utf8')) out += `~${b.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out.length <= 100 ? out : uuidV5(`yourNumber\n${yourNumber}`, DERIVED_ID_NAMESPACE);
}

/** The correlationId derived from a row's content: UUIDv5 of `<kind>\n<canonical JSON of its request without id>`. */
export function correlationIdFromContent(kind: KindName, canonical: string): string {
  return uuidV5(`${kind}\n${canonical}`, DERIVED_ID_NAMESPACE);
}
