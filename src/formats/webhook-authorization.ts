/**
 * How a webhook's authorization value travels (spec 2.12 and 5: "sent to the receiving endpoint in the request header
 * according to authorizationScheme"), shared by the two ends of a delivery: the sandbox, which sends it
 * (src/sandbox/webhook-delivery.ts), and remessa's receiver, which checks it (src/webhooks/receiver.ts). The rules are
 * written once here so the two can never disagree; docs/service-gaps.md "Webhooks and events" states them.
 */

export const AUTHORIZATION_SCHEMES = ['BASIC', 'BEARER', 'HEADER'] as const;
export type AuthorizationScheme = (typeof AUTHORIZATION_SCHEMES)[number];

/** Header carrying the stable event id (also `id` in the body). */
export const EVENT_ID_HEADER = 'x-webhook-event-id';
export const EVENT_TYPE_HEADER = 'x-webhook-event-type';
export const WEBHOOK_ID_HEADER = 'x-webhook-id';
export const ATTEMPT_HEADER = 'x-webhook-attempt';

/** Headers a HEADER-scheme authorization may not set: they belong to the delivery itself. */
export const RESERVED_HEADERS = new Set([
  'host',
  'content-type',
  'content-length',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  EVENT_ID_HEADER,
  EVENT_TYPE_HEADER,
  WEBHOOK_ID_HEADER,
  ATTEMPT_HEADER,
]);

const HEADER_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const CONTROL_CHARS = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/**
 * Splits a HEADER-scheme value `Name: value` into its parts; undefined when the text before the first colon is not
 * a header name token (the whole value is then sent as `Authorization`).
 */
export function splitHeaderAuthorization(value: string): { name: string; value: string } | undefined {
  const colon = value.indexOf(':');
  if (colon <= 0) return undefined;
  const name = value.slice(0, colon).trim();
  const rest = value.slice(colon + 1).trim();
  if (!HEADER_TOKEN.test(name) || rest === '') return undefined;
  return { name: name.toLowerCase(), value: rest };
}

/**
 * The authorization header(s) of a delivery:
 * - BASIC: `Authorization: Basic <value>`. A value with a colon is `user:password` in clear and is base64-encoded
 *   first; a value without one is taken as already encoded (base64 never contains a colon).
 * - BEARER: `Authorization: Bearer <value>`.
 * - HEADER: a value `Name: value` sends header `Name` with `value`; any other value is sent as is in
 *   `Authorization` (no scheme word added).
 * No scheme or no value: no authorization header.
 */
export function authorizationHeaders(
  scheme: AuthorizationScheme | null | undefined,
  value: string | null | undefined,
): Record<string, string> {
  if (!scheme || !value) return {};
  switch (scheme) {
    case 'BASIC':
      return {
        authorization: `Basic ${value.includes(':') ? Buffer.from(value, 'utf8').toString('base64') : value}`,
      };
    case 'BEARER':
      return { authorization: `Bearer ${value}` };
    case 'HEADER': {
      const split = splitHeaderAuthorization(value);
      return split ? { [split.name]: split.value } : { authorization: value };
    }
  }
}

/** Why an authorization value cannot be used with its scheme (English, for the problem body); undefined if fine. */
export function authorizationProblem(scheme: AuthorizationScheme, value: string): string | undefined {
  if (value.length === 0) return 'Expected a non-empty authorization value, got an empty string.';
  if (value.length > 4096) return `Expected at most 4096 characters, got ${value.length}.`;
  if (CONTROL_CHARS.test(value)) return 'Expected no control characters (line breaks, NUL, ...) in the value.';
  if (scheme === 'BASIC' && !value.includes(':') && !/^[A-Za-z0-9+/]+={0,2}$/.test(value)) {
    return 'Expected user:password, or its base64 encoding, for BASIC.';
  }
  if (scheme === 'HEADER') {
    const split = splitHeaderAuthorization(value);
    if (split && RESERVED_HEADERS.has(split.name)) {
      return `Expected a header name other than ${split.name} (it belongs to the delivery itself).`;
    }
  }
  return undefined;
}
