/** Dates of `remessa status --since/--until` (apart, so the CLI parses them without loading the store). */

/** Parses `--since`/`--until`: a date (YYYY-MM-DD, the whole UTC day) or an ISO 8601 time. */
export function parseStatusDate(text: string, edge: 'start' | 'end'): Date | undefined {
  if (/^\d{4}-\d{2}-\d{2}$/.test(text)) {
    const day = new Date(`${text}T00:00:00.000Z`);
    if (Number.isNaN(day.getTime()) || day.toISOString().slice(0, 10) !== text) return undefined;
    return edge === 'start' ? day : new Date(day.getTime() + 86_400_000 - 1);
  }
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/.test(text)) return undefined;
  const at = new Date(text);
  return Number.isNaN(at.getTime()) ? undefined : at;
}
