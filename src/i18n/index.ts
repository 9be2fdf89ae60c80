/**
 * The words a person reads: one catalogue per language (./en.ts, ./pt-BR.ts), keyed by the stable error code (or
 * `CODE.variant` when one code has several sentences), with the values to interpolate. Code raises codes and values,
 * never sentences; the sentence is chosen here, at the edge, in the locale of the configuration (`locale`) or of the
 * command line (`--locale`). Stable codes (`INVALID_CPF`, ...) and row statuses never change with the locale: ERPs
 * read them. Log lines for operators stay in English.
 *
 * A value may itself be a message (a `when`, a `why`): it is rendered in the same locale first; an amount of money
 * (`money`), an instant (`instant`) and a day (`day`) are said as the locale says them.
 */
import { brasiliaTime } from '../formats/brasilia-time.js';
import { EN } from './en.js';
import { PT_BR } from './pt-BR.js';

export const LOCALES = ['pt-BR', 'en'] as const;
export type Locale = (typeof LOCALES)[number];
/** Brazilian Portuguese: remessa's users are finance teams in Brazil. */
export const DEFAULT_LOCALE: Locale = 'pt-BR';

export type MessageKey = keyof typeof EN;
/** An amount of money as a value: said as the locale reads money (`R$ 10,01`, `R$10.01`), never as cents. */
export interface MoneyValue {
  cents: number;
}
/** An instant (ISO 8601) as a value: said in Brasília time as the locale writes it (`28/11/2026 04:48:01`). */
export interface InstantValue {
  instant: string;
}
/** A calendar day (yyyy-mm-dd) as a value: said as the locale writes a date (`29/11/2026` in pt-BR). */
export interface DayValue {
  day: string;
}
export type ParamValue = string | number | Message | MoneyValue | InstantValue | DayValue | undefined;
export type Params = Readonly<Record<string, ParamValue>>;
/** A sentence to be: its catalogue key and the values to put in it. */
export interface Message {
  key: MessageKey;
  params?: Params;
}
/** A catalogue entry: its sentence, given the values already rendered as text. */
export type Entry = string | ((p: Readonly<Record<string, string | undefined>>) => string);
export type Catalogue = Record<MessageKey, Entry>;

export const CATALOGUES: Readonly<Record<Locale, Catalogue>> = { en: EN, 'pt-BR': PT_BR };

export function isLocale(value: unknown): value is Locale {
  return typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
}

export function isMessageKey(value: string): value is MessageKey {
  return Object.hasOwn(EN, value);
}

/** The sentence of `key` in `locale` with `params` put in (`{name}` in a string entry). */
export function t(locale: Locale, key: MessageKey, params: Params = {}): string {
  const entry = CATALOGUES[locale][key] ?? EN[key];
  const values: Record<string, string | undefined> = {};
  for (const name in params) {
    const v = params[name];
    values[name] =
      v === undefined
        ? undefined
        : typeof v !== 'object'
          ? String(v)
          : 'cents' in v
            ? moneyIn(locale, v.cents)
            : 'instant' in v
              ? instantIn(locale, v.instant)
              : 'day' in v
                ? dayIn(locale, v.day)
                : t(locale, v.key, v.params);
  }
  if (typeof entry === 'function') return entry(values);
  // A placeholder without a value is left as it is (`{eta_formatted}` is filled by the progress bar itself).
  return entry.replace(/\{(\w+)\}/g, (whole, name: string) => (name in values ? (values[name] ?? '') : whole));
}

/** `t` of a message. */
export function render(locale: Locale, message: Message): string {
  return t(locale, message.key, message.params);
}

/**
 * Whole cents as a person reading `locale` reads money: `R$ 1.234,56` in pt-BR (thousands grouped with ".", decimal
 * comma, always 2 decimals), `R$1,234.56` in English. Not checked here: src/formats/money.ts `formatMoney` checks first.
 */
export function moneyIn(locale: Locale, cents: number): string {
  const [group, mark, space] = locale === 'pt-BR' ? ['.', ',', ' '] : [',', '.', ''];
  const whole = Math.floor(cents / 100)
    .toString()
    .replace(/\B(?=(\d{3})+(?!\d))/g, group);
  return `R$${space}${whole}${mark}${String(cents % 100).padStart(2, '0')}`;
}

/** A money value: `msg('X', { amount: money(1001) })` reads `R$ 10,01` in pt-BR. */
export function money(cents: number): MoneyValue {
  return { cents };
}

/**
 * An instant as a person reading `locale` reads it, in Brasília time (the time a finance team in Brazil lives by; the
 * retorno's days): `28/11/2026 04:48:01` in pt-BR, `2026-11-28 04:48:01 BRT` in English (whose reader may live by
 * another clock). Text that is not an instant is said as it is.
 */
export function instantIn(locale: Locale, iso: string): string {
  const shown = brasiliaTime(iso, locale === 'pt-BR');
  return locale === 'pt-BR' || shown === iso ? shown : `${shown} BRT`;
}

/** An instant value: `msg('X', { at: instant('2026-11-28T07:48:01Z') })` (see `instantIn`). */
export function instant(iso: string): InstantValue {
  return { instant: iso };
}

/** A day as `locale` writes it: `29/11/2026` in pt-BR (as the sheet's dates), `2026-11-29` in English. */
export function dayIn(locale: Locale, isoDay: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(isoDay);
  return locale === 'pt-BR' && m ? `${m[3]}/${m[2]}/${m[1]}` : isoDay;
}

/** A day value: `msg('X', { today: day('2026-11-29') })` reads `29/11/2026` in pt-BR (see `dayIn`). */
export function day(isoDay: string): DayValue {
  return { day: isoDay };
}

/** A message value: `msg('WHEN.with', { column: 'payer.name' })`. */
export function msg(key: MessageKey, params?: Params): Message {
  return params === undefined ? { key } : { key, params };
}
