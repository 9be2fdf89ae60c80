/**
 * Punycode and A-labels (src/formats/punycode.ts): the same answer on every Node.js version, whatever its URL parser
 * lets through (Node 24's keeps `xn--0` as written, Node 20 and 22 refuse it).
 */
import { domainToASCII, domainToUnicode } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodePunycode, isMalformedALabel } from '../src/formats/punycode.js';

describe('decodePunycode', () => {
  it.each([
    ['bcher-kva', 'bücher'],
    ['mnchen-3ya', 'münchen'],
    ['ls8h', '💩'],
    // RFC 3492 section 7.1: (A) Arabic (Egyptian), (B) Chinese (simplified), (L), (S)
    ['egbpdaj6bu4bxfgehfvwxn', 'ليهمابتكلموشعربي؟'],
    ['ihqwcrb4cv8a8dqg056pqjye', '他们为什么不说中文'],
    ['3B-ww4c5e180e575a65lsy2b', '3年B組金八先生'],
    ['-> $1.00 <--', '-> $1.00 <-'],
    ['abc-', 'abc'],
    ['', ''],
  ])('decodes %j to %j', (input, output) => {
    expect(decodePunycode(input)).toBe(output);
  });

  it.each([
    ['0', 'the input ends inside a number'],
    ['zz', 'the input ends inside a number'],
    ['-rid', 'a delimiter where a digit is due'],
    ['ü-x', 'a non-ASCII basic code point'],
    ['99999999999', 'a code point past U+10FFFF'],
  ])('refuses %j: %s', (input) => {
    expect(decodePunycode(input)).toBeUndefined();
  });

  it('decodes what domain to ASCII encodes (property)', () => {
    const text = fc.string({
      unit: fc.constantFrom(...'áçãéêíóõúüñßøåæ日本語中文한국어русскийελληνικά'),
      minLength: 1,
    });
    fc.assert(
      fc.property(text, (s) => {
        const ascii = domainToASCII(s);
        fc.pre(ascii.startsWith('xn--') && !ascii.includes('.'));
        expect(decodePunycode(ascii.slice(4))).toBe(domainToUnicode(ascii));
        expect(isMalformedALabel(ascii)).toBe(false);
      }),
    );
  });
});

describe('isMalformedALabel', () => {
  it('accepts an A-label, in any case, and a label without the ACE prefix', () => {
    for (const label of ['xn--bcher-kva', 'XN--BCHER-KVA', 'xn--mnchen-3ya', 'example', 'ab--cd', 'x-n--a']) {
      expect(isMalformedALabel(label)).toBe(false);
    }
  });

  it.each([
    ['xn--0', 'not Punycode'],
    ['xn--', 'nothing after the prefix'],
    ['xn--abc-', 'decodes to ASCII only'],
    ['xn---rid', 'not Punycode (a delimiter where a digit is due)'],
    ['xn--a', 'decodes to U+0080, a control character'],
    ['xn--tda-', 'decodes to ASCII only ("tda")'],
  ])('refuses %j: %s', (label) => {
    expect(isMalformedALabel(label)).toBe(true);
  });

  it('answers a boolean for any string, never throws (property)', () => {
    fc.assert(fc.property(fc.string(), (s) => typeof isMalformedALabel(`xn--${s}`) === 'boolean'));
  });
});
