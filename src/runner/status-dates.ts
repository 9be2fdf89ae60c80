/** Dates of `remessa status --since/--until` (apart, so the CLI parses them without loading the store). */

/** Parses `--since`/`--until`: a date (YYYY-MM-DD or DD/MM/YYYY, Brasília's whole day) or an ISO 8601 time. */
export function parseStatusDate(text: string, edge: 'start' | 'end'): Date | undefined {
  // A day, as the sheet writes it (28/11/2026) or as ISO (2026-11-28): Brasília's whole day, as status shows times
  // and as the retorno counts days (UTC-3, src/formats/brasilia-time.ts `brasiliaDay`).
  const br = /^(\d{2})\/(\d{2})\/(\d{4})$/.exec(text);
  const iso = br ? `${br[3]}-${br[2]}-${br[1]}` : text;
  if (/^\d{4}-\d{2}-\d{2}$/.test(iso)) {
    const utc = new Date(`${iso}T00:00:00.000Z`);
    if (Number.isNaN(utc.getTime()) || utc.toISOString().slice(0, 10) !== iso) return undefined;
    const day = new Date(`${iso}T00:00:00.000-03:00`);
    return edge === 'start' ? day : new Date(day.getTime() + 86_400_000 - 1);
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(text)) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}
