/**
 * The events the bank POSTs to remessa's receiver, as remessa reads them.
 *
 * The interface does not show any payload (spec 6: "Payload of each event: not shown"), so the sandbox's documented
 * payload is the contract (docs/sandbox.md "Delivery: payloads, headers, retries", docs/service-gaps.md "Webhooks and
 * events"): an envelope `{id, event, createdAt, data}`. The schemas below require only what remessa needs to keep an
 * event (its id and type) and tolerate every added or unknown field (`z.looseObject`): a bank that adds a field must
 * never make remessa refuse, and so lose, an event. Identifiers of the thing an event is about are picked from
 * `data` when present, for the retorno to find the thing; an event without any is kept all the same.
 */
import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../formats/events.js';

/** Event types remessa can register for: the spec's 14 (section 6) and the sandbox's CHARGE_EXPIRED. */
export const REGISTRABLE_EVENT_TYPES = [...WEBHOOK_EVENT_TYPES, 'CHARGE_EXPIRED'] as const;
export type RegistrableEventType = (typeof REGISTRABLE_EVENT_TYPES)[number];

/**
 * The event types that matter to remessa, registered by default: charges paid (bank slips, Pix charges), Pix received
 * (QR codes and Pix charges: carries the correlationId of a QR charge), Pix payments remessa made changing status.
 * The spec lists no event for key claims, expiries or voids: those are learnt by reconciliation.
 */
export const DEFAULT_EVENT_TYPES: readonly RegistrableEventType[] = [
  'CHARGE_PAID',
  'PIX_RECEIVED',
  'PIX_PAYMENT_UPDATED',
];

/**
 * What the embedded sandbox is registered for: the defaults plus its CHARGE_EXPIRED (the staging expire route exists
 * "to validate notifications", spec 6). A real bank does not know CHARGE_EXPIRED: it is not a default there.
 */
export const EMBEDDED_EVENT_TYPES: readonly RegistrableEventType[] = [...DEFAULT_EVENT_TYPES, 'CHARGE_EXPIRED'];

const id = z.string().trim().min(1).max(200);
const optionalText = z
  .union([z.string(), z.number()])
  .transform((v) => String(v))
  .optional()
  .catch(undefined);

/** The envelope. `data` may carry anything; the identifiers are read leniently (a wrong type is just not taken). */
export const webhookEnvelopeSchema = z.looseObject({
  id,
  event: z.string().trim().min(1).max(100),
  createdAt: z.string().max(100).optional().catch(undefined),
  data: z
    .looseObject({
      id: optionalText,
      correlationId: optionalText,
      endToEndId: optionalText,
      ourNumber: optionalText,
      txid: optionalText,
      claimId: optionalText,
      payment: z.looseObject({ endToEndId: optionalText }).optional().catch(undefined),
    })
    .default({}),
});
export type WebhookEnvelope = z.infer<typeof webhookEnvelopeSchema>;

/** The identifiers an event carries, as far as its data shows them. */
export interface EventIdentifiers {
  correlationId: string | undefined;
  endToEndId: string | undefined;
  claimId: string | undefined;
  ourNumber: string | undefined;
  /** A Pix payment's id (PIX_PAYMENT_UPDATED `data.id`). */
  paymentId: string | undefined;
  txid: string | undefined;
}

export function eventIdentifiers(envelope: WebhookEnvelope): EventIdentifiers {
  const d = envelope.data;
  const isPixPayment = envelope.event.startsWith('PIX_PAYMENT') || envelope.event.startsWith('PIX_REFUND');
  const isClaim = envelope.event.includes('CLAIM');
  return {
    correlationId: d.correlationId,
    endToEndId: d.endToEndId ?? d.payment?.endToEndId,
    claimId: d.claimId ?? (isClaim ? d.id : undefined),
    ourNumber: d.ourNumber,
    paymentId: isPixPayment ? d.id : undefined,
    txid: d.txid,
  };
}

/** Parses a stored or received body. Throws ZodError / SyntaxError when it is not an envelope. */
export function parseWebhookEnvelope(json: string): WebhookEnvelope {
  return webhookEnvelopeSchema.parse(JSON.parse(json));
}
