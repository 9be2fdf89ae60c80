/**
 * Registering remessa's receiver with the bank (spec 4.6: one registration per event type, with the account id
 * header), used by `remessa webhooks register|list|update|delete` (./commands.ts) and by the daemon with the embedded
 * sandbox (which registers its own receiver at each start).
 *
 * What must hold: registering is idempotent: a type already registered for the url is updated in place (PATCH),
 * never registered twice (two registrations would deliver every event twice: harmless, since the receiver drops
 * duplicates by id, but wasteful). The authorization value goes only in the request body to the bank; the client
 * registers it as a log secret and drops it from what the bank answers, so nothing shown or logged carries it.
 */
import type { BankClient } from '../bank/client.js';
import type { Webhook, WebhookEventType } from '../bank/types.js';
import type { AuthorizationScheme } from '../formats/webhook-authorization.js';
import type { RegistrableEventType } from './events.js';

export interface RegistrationTarget {
  /** The receiver's url as the bank reaches it. */
  url: string;
  authorizationScheme: AuthorizationScheme;
  authorization: string;
  events: readonly RegistrableEventType[];
}

export interface RegistrationChange {
  action: 'created' | 'updated' | 'deleted';
  webhook: Webhook;
}

function input(target: RegistrationTarget, eventType: RegistrableEventType) {
  return {
    // CHARGE_EXPIRED is the sandbox's; the client's type lists the spec's 14.
    eventType: eventType as WebhookEventType,
    url: target.url,
    authorizationScheme: target.authorizationScheme,
    authorization: target.authorization,
  };
}

/**
 * Makes the bank deliver `target.events` to `target.url`: per type, updates the registration of that type with the
 * url (or, with `adoptAnyUrl`, any registration of that type: the embedded sandbox's receiver moves port at each
 * start), creates one when none exists, and deletes further registrations of the type that `adoptAnyUrl` owns.
 */
export async function ensureRegistered(
  client: BankClient,
  target: RegistrationTarget,
  options: { adoptAnyUrl?: boolean; signal?: AbortSignal } = {},
): Promise<RegistrationChange[]> {
  const existing = await client.webhooks.list({ signal: options.signal });
  const changes: RegistrationChange[] = [];
  for (const type of target.events) {
    const same = existing.filter((w) => w.eventType === type && (options.adoptAnyUrl || w.url === target.url));
    const [first, ...others] = same;
    if (first) {
      const webhook = await client.webhooks.update(first.id, input(target, type), { signal: options.signal });
      changes.push({ action: 'updated', webhook });
    } else {
      const webhook = await client.webhooks.create(input(target, type), { signal: options.signal });
      changes.push({ action: 'created', webhook });
    }
    for (const extra of others) {
      await client.webhooks.delete(extra.id, { signal: options.signal });
      changes.push({ action: 'deleted', webhook: extra });
    }
  }
  return changes;
}
