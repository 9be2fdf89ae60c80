/**
 * Punycode (RFC 3492), and whether a host label that starts with `xn--` (the ACE prefix of RFC 5890) is a valid
 * A-label.
 *
 * Why not leave it to the URL parser: per the URL Standard (domain to ASCII, UTS #46 with IgnoreInvalidPunycode
 * false), a host with an `xn--` label that is not valid Punycode is not a valid host, and Node 20 and 22 refuse it
 * (`new URL('http://xn--0.a/')` throws). Node 24's parser (ada 4) keeps such a label as written and parses the url.
 * What remessa accepts must not change with the Node.js version it runs on, so the rule is checked here.
 */
import { domainToASCII } from 'node:url';

const BASE = 36;
const T_MIN = 1;
const T_MAX = 26;
const SKEW = 38;
const DAMP = 700;
const INITIAL_BIAS = 72;
const INITIAL_N = 0x80;
const MAX_CODE_POINT = 0x10ffff;

/** RFC 3492 section 6.1. */
function adapt(delta: number, numPoints: number, firstTime: boolean): number {
  let d = firstTime ? Math.floor(delta / DAMP) : Math.floor(delta / 2);
  d += Math.floor(d / numPoints);
  let k = 0;
  while (d > ((BASE - T_MIN) * T_MAX) >> 1) {
    d = Math.floor(d / (BASE - T_MIN));
    k += BASE;
  }
  return k + Math.floor(((BASE - T_MIN + 1) * d) / (d + SKEW));
}

/** The value of a Punycode digit: `a`-`z` (either case) 0-25, `0`-`9` 26-35; BASE for anything else. */
function digitValue(code: number): number {
  if (code >= 0x61 && code <= 0x7a) return code - 0x61;
  if (code >= 0x41 && code <= 0x5a) return code - 0x41;
  if (code >= 0x30 && code <= 0x39) return code - 0x30 + 26;
  return BASE;
}

/**
 * Decodes Punycode (RFC 3492 section 6.2: the part of an A-label after `xn--`), or undefined when the input is not
 * valid Punycode (a non-digit where a digit is due, the input ending inside a number, a code point past U+10FFFF).
 */
export function decodePunycode(input: string): string | undefined {
  const delimiter = input.lastIndexOf('-');
  const output: number[] = [];
  for (let j = 0; j < Math.max(delimiter, 0); j++) {
    const code = input.charCodeAt(j);
    if (code >= 0x80) return undefined;
    output.push(code);
  }
  let n = INITIAL_N;
  let i = 0;
  let bias = INITIAL_BIAS;
  for (let p = delimiter > 0 ? delimiter + 1 : 0; p < input.length; ) {
    const oldI = i;
    let w = 1;
    for (let k = BASE; ; k += BASE) {
      if (p >= input.length) return undefined;
      const digit = digitValue(input.charCodeAt(p++));
      if (digit >= BASE) return undefined;
      i += digit * w;
      // Past this, n would pass U+10FFFF below; stopping here also keeps i and w exact (far under 2^53).
      if (i > (MAX_CODE_POINT + 1) * (output.length + 1)) return undefined;
      const t = k <= bias ? T_MIN : k >= bias + T_MAX ? T_MAX : k - bias;
      if (digit < t) break;
      w *= BASE - t;
    }
    bias = adapt(i - oldI, output.length + 1, oldI === 0);
    n += Math.floor(i / (output.length + 1));
    i %= output.length + 1;
    if (n > MAX_CODE_POINT) return undefined;
    output.splice(i, 0, n);
    i++;
  }
  return String.fromCodePoint(...output);
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
