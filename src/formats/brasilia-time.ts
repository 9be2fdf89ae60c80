/**
 * Brasília time: the clock a finance team in Brazil lives by. Apart from ./dates.ts, with no imports, so that the
 * message catalogue (src/i18n) can say instants without importing the formats' errors (which import it).
 */
/** Brasília's zone: the times a person in Brazil reads (and the retorno's and the per-day limits' days). */
export const BRASILIA_TIME_ZONE = 'America/Sao_Paulo';

const BRASILIA_PARTS = new Intl.DateTimeFormat('en-CA', {
  timeZone: BRASILIA_TIME_ZONE,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hourCycle: 'h23',
});

/**
 * An instant (ISO 8601) as a person in Brazil reads it, in Brasília time: `28/11/2026 04:48:01` (`dayFirst`, pt-BR),
 * else `2026-11-28 04:48:01`. The text as given when it is not an instant.
 */
export function brasiliaTime(iso: string, dayFirst: boolean): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return iso;
  const p: Record<string, string> = {};
  for (const part of BRASILIA_PARTS.formatToParts(ms)) p[part.type] = part.value;
  const time = `${p.hour}:${p.minute}:${p.second}`;
  return dayFirst ? `${p.day}/${p.month}/${p.year} ${time}` : `${p.year}-${p.month}-${p.day} ${time}`;
}

const BRASILIA_DAY = new Intl.DateTimeFormat('en-CA', {
  timeZone: BRASILIA_TIME_ZONE,
  year: 'numeric',
  month: '2-digit',
  day: '2-digit',
});

const HOUR_MS = 3_600_000;
/**
 * Since 1914 Brasília's offsets are whole hours (-3, and -2 in the summers it had) and its changes fall on whole hours:
 * every instant of one UTC hour lies in one Brasília day, so the day of the last hour asked is kept (`lastDay`): a
 * bill row's parse reads "today", and a row is parsed twice, each read an `Intl` format before (docs/performance.md (d)
 * sixteenth pass). Before 1914 (mean solar time, -3:06:28) nothing is kept.
 */
const WHOLE_HOURS_SINCE_MS = Date.UTC(1914, 0, 1, 12);
let lastDay = { hour: Number.NaN, day: '' };

/**
 * The calendar day (yyyy-mm-dd) of an instant in Brasília: the day a finance team in Brazil calls "today", of the
 * retorno's files (src/store/things.ts) and of the per-day limits (src/store/approvals.ts).
 */
export function brasiliaDay(at: Date): string {
  const ms = at.getTime();
  const hour = Math.floor(ms / HOUR_MS);
  if (hour === lastDay.hour) return lastDay.day;
  const day = BRASILIA_DAY.format(at); // a RangeError for an invalid date, as before (NaN equals no hour)
  if (ms >= WHOLE_HOURS_SINCE_MS) lastDay = { hour, day };
  return day;
}

/**
 * The instant (ms) a calendar day (yyyy-mm-dd) begins in Brasília: `2026-11-29` -> 2026-11-29T03:00:00Z. Read from the
 * zone's rules (UTC-3 since 2019, when Brazil ended daylight saving time; Intl knows it if it ever returns).
 */
export function brasiliaMidnight(day: string): number {
  const utcMidnight = Date.parse(`${day}T00:00:00Z`);
  // The zone's offset at that instant (hours behind UTC), then the midnight it gives.
  const p: Record<string, string> = {};
  for (const part of BRASILIA_PARTS.formatToParts(utcMidnight)) p[part.type] = part.value;
  const local = Date.parse(`${p.year}-${p.month}-${p.day}T${p.hour}:${p.minute}:${p.second}Z`);
  return utcMidnight + (utcMidnight - local);
}

/**
 * A date-time as a person or a Brazilian bank writes it: with its zone as given (`2026-11-25T10:00:00Z`, `...-03:00`);
 * without one, Brasília's wall time (`2026-11-25T10:00:00` is 13:00 UTC); a date alone, its midnight in Brasília.
 * Undefined when it is none of these. (A day's offset is the same all day in Brasília since 2019.)
 */
export function brasiliaWallTime(text: string): Date | undefined {
  const local = /^(\d{4}-\d{2}-\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?)?$/.exec(text);
  if (local) {
    const [, day, hh = '00', mm = '00', ss = '00', frac = ''] = local;
    const asUtc = Date.parse(`${day}T${hh}:${mm}:${ss}${frac}Z`);
    if (Number.isNaN(asUtc)) return undefined;
    return new Date(asUtc + (brasiliaMidnight(day!) - Date.parse(`${day}T00:00:00Z`)));
  }
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text)) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}
