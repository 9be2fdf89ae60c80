/**
 * The service's webhook event types (service-interface.md section 6), shared by the bank client (what may be
 * registered) and the sandbox (what it accepts, plus its own additions on its side).
 */
export const WEBHOOK_EVENT_TYPES = [
  'CHARGE_PAID',
  'PIX_RECEIVED',
  'PIX_PAYMENT_UPDATED',
  'PIX_REFUNDED',
  'PIX_REFUND_PAYMENT_UPDATED',
  'TRANSFER_INTERNAL_CREDITED',
  'TRANSFER_INTERNAL_DEBITED',
  'TRANSFER_EXTERNAL_CREDITED',
  'TRANSFER_EXTERNAL_DEBITED',
  'INFRACTION_NOTIFICATION_CREATED',
  'INFRACTION_NOTIFICATION_UPDATED',
  'ACCOUNT_STATUS_UPDATED',
  'WHITELABEL_CUSTOMER_DOCUMENTATION_REJECTED',
  'WHITELABEL_CUSTOMER_APPROVED',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
