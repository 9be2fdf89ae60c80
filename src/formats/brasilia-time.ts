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

/**
 * The calendar day (yyyy-mm-dd) of an instant in Brasília: the day a finance team in Brazil calls "today", of the
 * retorno's files (src/store/things.ts) and of the per-day limits (src/store/approvals.ts).
 */
export function brasiliaDay(at: Date): string {
  return BRASILIA_DAY.format(at);
}
