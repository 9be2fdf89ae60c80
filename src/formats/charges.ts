/** The service's charge types (service-interface.md 2.1), shared by the `charges` batch kind and the sandbox. */
export const CHARGE_TYPES = ['BANKSLIP', 'BANKSLIP_PIX', 'PIX_STATIC', 'PIX_DYNAMIC'] as const;
export type ChargeType = (typeof CHARGE_TYPES)[number];
