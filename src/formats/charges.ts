/** The service's charge types (service-interface.md 2.1), shared by the `charges` batch kind and the sandbox. */
export const CHARGE_TYPES = ['BANKSLIP', 'BANKSLIP_PIX', 'PIX_STATIC', 'PIX_DYNAMIC'] as const;
export type ChargeType = (typeof CHARGE_TYPES)[number];

/**
 * A correlationId the client sends and the sandbox accepts: it travels in URL paths, so 1 to 100 URL-safe characters
 * (the spec shows no rule; docs/service-gaps.md).
 */
export const CORRELATION_ID_PATTERN = /^[A-Za-z0-9._~:-]{1,100}$/;

/** Most items on a page of the charge list (spec 8). */
export const MAX_CHARGES_PAGE_LIMIT = 100;

/** Most characters of an additionalInfo value of a PIX_STATIC charge (spec 2.3, 8). */
export const PIX_STATIC_ADDITIONAL_INFO_MAX = 37;

/** Longest expiresIn of a PIX_DYNAMIC charge, in seconds: one year (the spec shows no limit; the sandbox's). */
export const MAX_EXPIRES_IN_SECONDS = 31_536_000;

/**
 * Due dates a charge may have (creation and update): from today (the day in Brasília, as the bank counts days) to
 * MAX_DUE_DATE_DAYS_AHEAD days ahead. The spec only says an unparsable date is a 400; the sandbox refuses a past date
 * and one more than 10 years ahead (the bar code's due-date factor reaches ~15), and remessa checks the same before
 * sending (docs/service-gaps.md).
 */
export const MAX_DUE_DATE_DAYS_AHEAD = 3650;
