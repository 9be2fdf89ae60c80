/**
 * The receiver's check of a delivery's authorization (spec 5: the bank sends the value registered with the webhook
 * "in the request header according to authorizationScheme"). The header forms are the shared ones of
 * src/formats/webhook-authorization.ts, so what the sandbox sends is exactly what is expected here.
 *
 * What must hold: the secret part is compared in constant time, over SHA-256 digests of equal length
 * (`crypto.timingSafeEqual`), so neither the time taken nor an early exit tells an attacker how much of a guess was
 * right, or the value's length. Only the scheme word (`Basic`, `Bearer`), which is not secret, is compared plainly
 * (case-insensitively, as HTTP says).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type AuthorizationScheme, authorizationHeaders } from '../formats/webhook-authorization.js';
import { registerSecret } from '../log.js';

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/** A checker for one registered (scheme, value): call it with each request's headers. */
export function authorizationChecker(
  scheme: AuthorizationScheme,
  value: string,
): (headers: IncomingHttpHeaders) => boolean {
  const expected = Object.entries(authorizationHeaders(scheme, value))[0];
  if (!expected) throw new Error('Expected a webhook authorization value, got none');
  const [name, full] = expected;
  // BASIC and BEARER: `Word secret`; the word is compared apart, the secret by digest.
  const space = scheme === 'HEADER' ? -1 : full.indexOf(' ');
  const word = space > 0 ? full.slice(0, space).toLowerCase() : undefined;
  const secretDigest = digest(space > 0 ? full.slice(space + 1) : full);
  return (headers) => {
    const raw = headers[name];
    if (typeof raw !== 'string') return false;
    let presented = raw;
    let wordOk = true;
    if (word !== undefined) {
      const at = raw.indexOf(' ');
      wordOk = at > 0 && raw.slice(0, at).toLowerCase() === word;
      presented = at > 0 ? raw.slice(at + 1).trim() : raw;
    } else {
      presented = raw.trim();
    }
    // Always compare, even when the word is wrong: the time taken must not depend on which part failed.
    const secretOk = timingSafeEqual(digest(presented), secretDigest);
    return wordOk && secretOk;
  };
}

/** Registers with the log scrubber the value and every form of it that travels in a header. */
export function registerAuthorizationSecrets(scheme: AuthorizationScheme, value: string): void {
  registerSecret(value);
  for (const v of Object.values(authorizationHeaders(scheme, value))) {
    registerSecret(v);
    registerSecret(v.replace(/^(Basic|Bearer) /, ''));
  }
}
