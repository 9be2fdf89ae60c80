/**
 * The service's statuses of a bill looked up for payment (service-interface.md 2.5), shared by the bank client and
 * the sandbox.
 */
export const BILL_STATUSES = ['PAID', 'PENDING_PAYMENT', 'BLOCKED_PAYMENT', 'PAYMENT_DEADLINE_EXCEEDED'] as const;
export type BillStatus = (typeof BILL_STATUSES)[number];
