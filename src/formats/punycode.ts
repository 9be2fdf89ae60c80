/**
 * Whether a host label that starts with `xn--` (the ACE prefix of RFC 5890) is a valid A-label.
 *
 * Why not leave it to the URL parser: per the URL Standard (domain to ASCII, UTS #46 with IgnoreInvalidPunycode
 * false), a host with an `xn--` label that is not valid Punycode is not a valid host, and Node 20 and 22 refuse it
 * (`new URL('http://xn--0.a/')` throws). Node 24's parser (ada 4) keeps such a label as written and parses the url.
 * What remessa accepts must not change with the Node.js version it runs on, so the rule is checked here.
 */
import { domainToASCII } from 'node:url';
import punycode from 'punycode/punycode.js';

/**
 * Decodes Punycode (RFC 3492: the part of an A-label after `xn--`), or undefined when the input is not valid Punycode
 * (a non-digit where a digit is due, the input ending inside a number, a code point past U+10FFFF). The decoding is
 * punycode.js's (the `punycode` package; not node:punycode, which Node.js deprecates).
 */
export function decodePunycode(input: string): string | undefined {
  try {
    return punycode.decode(input);
  } catch {
    return undefined;
  }
}

/**
 * True when `label` has the ACE prefix `xn--` (any case) but is not a valid A-label: its Punycode does not decode,
 * decodes to ASCII only, or decodes to text that domain to ASCII does not turn back into this same label (a
 * disallowed character, a form that is not the mapped and normalised one). A label without the prefix: false.
 */
export function isMalformedALabel(label: string): boolean {
  if (!/^xn--/i.test(label)) return false;
  const unicode = decodePunycode(label.slice(4));
  if (unicode === undefined || ![...unicode].some((c) => c.codePointAt(0)! > 0x7f)) return true;
  return domainToASCII(unicode) !== label.toLowerCase();
}
