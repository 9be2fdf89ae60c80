import { formatError } from './errors.js';

/**
 * Calendar dates as `yyyy-mm-dd` strings (the wire's and the bar code's unit: a day, no zone), and the timestamp
 * shape of the wire. Day arithmetic is integer (days since 1970-01-01), so no time zone or DST can shift a day.
 */

const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** dd/mm/yyyy, and d/m/yyyy as Excel writes `15/3/2027` (not ambiguous: the year has 4 digits, the order is fixed). */
const BR_DATE = /^(\d{1,2})\/(\d{1,2})\/(\d{4})$/;
/**
 * A date Excel wrote as its serial number (the column formatted as Number or General): 5 digits are 1927 to 2173.
 * Never read as a date: a sheet of the 1904 system (old Mac Excel) counts 1462 days less. Its 1900-system day is named.
 */
const EXCEL_SERIAL = /^\d{5}$/;
/** dd/mm/yy: Excel's short date format. Never read as a year (19yy or 20yy is a guess): refused with a hint. */
const BR_DATE_SHORT_YEAR = /^(\d{1,2})\/(\d{1,2})\/(\d{2})$/;
/**
 * A date with a time of day, as Excel writes a cell formatted as date and time (`20/01/2027 00:00`) or a system its
 * ISO form (`2027-01-20T00:00:00`, `2027-01-20 00:00`): the date part, then the time. Midnight is a date with no time
 * (what a date-only value formatted so shows) and is read as that date; any other time is refused, naming the date:
 * which day a moment of the day belongs to is not this column's to guess.
 */
const DATE_WITH_TIME = /^(\d{1,2}\/\d{1,2}\/\d{4}|\d{4}-\d{2}-\d{2})(?:[ T]+)(\d{1,2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?$/;
/** Serial number of 1970-01-01 in Excel's 1900 date system (which counts a 29/02/1900 that never was). */
const EXCEL_SERIAL_EPOCH = 25569;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The number written by the `count` ASCII digits of `text` at `start`, or -1 when one of them is not a digit. */
function digitsAt(text: string, start: number, count: number): number {
  let n = 0;
  for (let i = start; i < start + count; i++) {
    const d = text.charCodeAt(i) - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

function pad(value: number, width: number): string {
  return String(value).padStart(width, '0');
}

function checkCalendar(text: string, year: number, month: number, day: number): string {
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) {
    throw formatError('INVALID_DATE', 'INVALID_DATE.calendar', { got: JSON.stringify(text) });
  }
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

/**
 * Reads `yyyy-mm-dd` or `dd/mm/yyyy` (Brazilian spreadsheets; surrounding spaces tolerated) and returns
 * `yyyy-mm-dd`. Throws {@link FormatError} `INVALID_DATE` for any other shape or a day the calendar lacks
 * (2026-02-29); for an Excel serial number (`46384`) its message names the day it would be, and for a year of two
 * digits (`15/03/27`, Excel's short date) it asks for four, naming the 20yy day it may mean. A date with the time
 * 00:00 (Excel's date-and-time format) is that date; another time is refused (`DATE_WITH_TIME`).
 */
export function parseDate(text: string): string {
  // Fast path: exactly yyyy-mm-dd (the common cell), read by char codes; any other text takes the regexes below.
  if (text.length === 10 && text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45) {
    const year = digitsAt(text, 0, 4);
    const month = digitsAt(text, 5, 2);
    const day = digitsAt(text, 8, 2);
    if (year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month)) return text;
  }
  const trimmed = text.trim();
  const iso = ISO_DATE.exec(trimmed);
  if (iso) return checkCalendar(trimmed, Number(iso[1]), Number(iso[2]), Number(iso[3]));
  const br = BR_DATE.exec(trimmed);
  if (br) return checkCalendar(trimmed, Number(br[3]), Number(br[2]), Number(br[1]));
  const withTime = DATE_WITH_TIME.exec(trimmed);
  if (withTime) {
    const date = parseDate(withTime[1]!);
    if (Number(withTime[2]) === 0 && Number(withTime[3]) === 0 && Number(withTime[4] ?? 0) === 0) return date;
    const [year, month, day] = date.split('-');
    throw formatError('INVALID_DATE', 'INVALID_DATE.withTime', {
      got: JSON.stringify(trimmed),
      date: `${day}/${month}/${year}`,
    });
  }
  const short = BR_DATE_SHORT_YEAR.exec(trimmed);
  if (short) {
    throw formatError('INVALID_DATE', 'INVALID_DATE.shortYear', {
      got: JSON.stringify(trimmed),
      date: `${pad(Number(short[1]), 2)}/${pad(Number(short[2]), 2)}/20${short[3]}`,
    });
  }
  if (EXCEL_SERIAL.test(trimmed)) {
    const [year, month, day] = fromEpochDay(Number(trimmed) - EXCEL_SERIAL_EPOCH).split('-');
    throw formatError('INVALID_DATE', 'INVALID_DATE.serial', {
      got: JSON.stringify(trimmed),
      date: `${day}/${month}/${year}`,
    });
  }
  throw formatError('INVALID_DATE', 'INVALID_DATE', { got: JSON.stringify(text) });
}

/** True when `text` is exactly a calendar-valid `yyyy-mm-dd`. */
export function isIsoDate(text: string): boolean {
  const iso = ISO_DATE.exec(text);
  if (!iso) return false;
  const [year, month, day] = [Number(iso[1]), Number(iso[2]), Number(iso[3])];
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysInMonth(year, month);
}

function requireIsoDate(date: string): [number, number, number] {
  if (!isIsoDate(date)) throw formatError('INVALID_DATE', 'INVALID_DATE.iso', { got: JSON.stringify(date) });
  return [Number(date.slice(0, 4)), Number(date.slice(5, 7)), Number(date.slice(8, 10))];
}

/** Days since 1970-01-01 of a `yyyy-mm-dd` date (negative before). Civil-to-days, proleptic Gregorian. */
export function epochDay(date: string): number {
  const [y, m, d] = requireIsoDate(date);
  const year = m <= 2 ? y - 1 : y;
  const era = Math.floor(year / 400);
  const yoe = year - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** The `yyyy-mm-dd` date `days` days after 1970-01-01. Inverse of {@link epochDay}. */
export function fromEpochDay(days: number): string {
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}`;
}

/** `date` (yyyy-mm-dd) plus `days` (may be negative). */
export function addDays(date: string, days: number): string {
  return fromEpochDay(epochDay(date) + days);
}

/**
 * The same date one year later (yyyy-mm-dd), 29 February becoming 28 February: the last day a date range starting at
 * `date` may end on (the service's one-year limit on charge lists, spec section 8).
 */
export function oneYearAfter(date: string): string {
  const year = String(Number(date.slice(0, 4)) + 1).padStart(4, '0');
  const candidate = `${year}${date.slice(4)}`;
  return isIsoDate(candidate) ? candidate : `${year}-02-28`;
}

/** Whole days from `from` to `to` (both yyyy-mm-dd); negative when `to` is earlier. */
export function daysBetween(from: string, to: string): number {
  return epochDay(to) - epochDay(from);
}

/**
 * A bank's date-time as a UTC instant (`2026-11-27T23:50:00-03:00` -> `2026-11-28T02:50:00.000Z`); one without a zone
 * is read as UTC (the spec's times are UTC), a date alone as its UTC midnight; undefined when it is not a date-time.
 * Times are compared and ordered as text in the store: only this form orders as the instants do.
 */
export function utcInstant(text: string | null | undefined): string | undefined {
  if (!text) return undefined;
  const zoned = /(Z|[+-]\d\d:?\d\d)$/i.test(text) || !/T/.test(text) ? text : `${text}Z`;
  const ms = Date.parse(zoned);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}

/** The UTC calendar date of an instant, as yyyy-mm-dd. */
export function utcDate(at: Date = new Date()): string {
  return isoTimestamp(at).slice(0, 10);
}

/** The wire's timestamp: ISO 8601, UTC, with milliseconds (`2026-11-22T00:00:00.000Z`). */
export function isoTimestamp(at: Date): string {
  if (Number.isNaN(at.getTime())) throw formatError('INVALID_DATE', 'INVALID_DATE.instant');
  return at.toISOString();
}
