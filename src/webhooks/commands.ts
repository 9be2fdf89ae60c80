/**
 * `remessa webhooks register|list|update|delete`: what the bank delivers to remessa's receiver (spec 4.6).
 *
 * - register [--events A,B]: makes the bank deliver each chosen type (default `webhooks.events`, else the types that
 *   matter to remessa, ./events.ts) to `webhooks.receiver.publicUrl` with the configured scheme and authorization;
 *   a type already registered for that url is updated in place, never registered twice (./registration.ts).
 * - list: every registration of the API key; `*` marks those pointing at the public url.
 * - update [--events A,B | --id ID...]: sends the current url, scheme and authorization again (rotating the value,
 *   or moving registrations given by id to a new public url); without --id, the chosen types' registrations for the
 *   public url.
 * - delete [--events A,B | --id ID...]: removes the given registrations, or the chosen types' for the public url.
 *
 * What must hold: the authorization value comes only from the credential (REMESSA_WEBHOOK_AUTHORIZATION,
 * `webhooks.receiver.authorizationFile`, systemd credential `remessa-webhook-authorization`), never from the command
 * line, and is never printed: the client drops it from every answer, and the value is a registered log secret.
 * With the embedded sandbox these commands do not apply: the daemon registers its receiver there itself.
 */
import { BankClient } from '../bank/client.js';
import type { Webhook } from '../bank/types.js';
import type { Config } from '../config.js';
import { ConfigError } from '../errors.js';
import { EXIT_OK } from '../exit-codes.js';
import type { Logger } from '../log.js';
import { runnerOptionsFromConfig } from '../runner/options.js';
import { registerAuthorizationSecrets } from './authorization.js';
import { DEFAULT_EVENT_TYPES, REGISTRABLE_EVENT_TYPES, type RegistrableEventType } from './events.js';
import { ensureRegistered, type RegistrationChange } from './registration.js';

export type WebhooksAction = 'register' | 'list' | 'update' | 'delete';

export interface WebhooksCommandOptions {
  /** `--events A,B`: event types; absent = `webhooks.events`, else the defaults. */
  events?: readonly RegistrableEventType[] | undefined;
  /** `--id ID` (repeatable): registrations to update or delete. */
  ids?: readonly string[] | undefined;
  out?: NodeJS.WritableStream;
}

/** Parses `--events A,B`: "Expected event types among ..., got X" otherwise. */
export function parseEventTypes(value: string): RegistrableEventType[] {
  const types = value
    .split(',')
    .map((t) => t.trim().toUpperCase())
    .filter((t) => t !== '');
  const unknown = types.filter((t) => !(REGISTRABLE_EVENT_TYPES as readonly string[]).includes(t));
  if (types.length === 0 || unknown.length > 0) {
    throw new ConfigError(
      `--events: Expected event types among ${REGISTRABLE_EVENT_TYPES.join(', ')}, got "${unknown.join(',') || value}"`,
      { code: 'ARGUMENT_INVALID' },
    );
  }
  return [...new Set(types)] as RegistrableEventType[];
}

function table(webhooks: ReadonlyArray<Webhook & { mark?: string }>): string {
  const rows = [
    ['', 'ID', 'EVENT', 'URL', 'SCHEME'],
    ...webhooks.map((w) => [w.mark ?? '', w.id, w.eventType, w.url, w.authorizationScheme ?? '-']),
  ];
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return `${rows
    .map((r) =>
      r
        .map((c, i) => c.padEnd(widths[i]!))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}

function changesTable(changes: readonly RegistrationChange[]): string {
  return table(changes.map((c) => ({ ...c.webhook, mark: c.action })));
}

export async function runWebhooksCommand(
  action: WebhooksAction,
  config: Config,
  log: Logger,
  options: WebhooksCommandOptions = {},
): Promise<number> {
  const out = options.out ?? process.stdout;
  if (config.embedded) {
    throw new ConfigError(
      'webhooks: the bank is the embedded sandbox: the daemon registers its receiver there itself at each start; set bank.url to manage the registrations of a bank',
      { code: 'CONFIG_EMBEDDED_WEBHOOKS' },
    );
  }
  const receiver = config.webhooks.receiver;
  const publicUrl = receiver.publicUrl;
  const events = options.events ?? config.webhooks.events ?? DEFAULT_EVENT_TYPES;
  const needsTarget = action === 'register' || action === 'update';
  if ((needsTarget || (action === 'delete' && !options.ids?.length)) && !publicUrl) {
    throw new ConfigError(
      `webhooks ${action}: Expected webhooks.receiver.publicUrl (the url at which the bank reaches the receiver), got none`,
      { code: 'CONFIG_MISSING_SETTING' },
    );
  }
  const authorization = config.webhookAuthorization;
  if (needsTarget && authorization === undefined) {
    throw new ConfigError(
      `webhooks ${action}: no authorization value: set REMESSA_WEBHOOK_AUTHORIZATION, webhooks.receiver.authorizationFile or the systemd credential remessa-webhook-authorization`,
      { code: 'CONFIG_MISSING_SECRET' },
    );
  }
  if (authorization !== undefined) registerAuthorizationSecrets(receiver.authorizationScheme, authorization);
  const bank = runnerOptionsFromConfig(config, log).bank;
  if (bank.embedded) throw new Error('unreachable: embedded handled above');
  const client = new BankClient({ ...bank.client, logger: log.child({ component: 'bank' }) });
  try {
    if (action === 'list') {
      const all = await client.webhooks.list();
      out.write(table(all.map((w) => ({ ...w, mark: w.url === publicUrl ? '*' : '' }))));
      out.write(`${all.length} registration(s)${publicUrl ? `; * = ${publicUrl}` : ''}\n`);
      return EXIT_OK;
    }
    if (action === 'register') {
      const changes = await ensureRegistered(client, {
        url: publicUrl!,
        authorizationScheme: receiver.authorizationScheme,
        authorization: authorization!,
        events,
      });
      out.write(changesTable(changes));
      log.info({ url: publicUrl, events }, 'webhooks registered');
      return EXIT_OK;
    }
    const all = await client.webhooks.list();
    const chosen = options.ids?.length
      ? options.ids.map((id) => {
          const found = all.find((w) => w.id === id);
          if (!found) {
            throw new ConfigError(
              `--id: Expected the id of a registration (see "remessa webhooks list"), got "${id}"`,
              {
                code: 'ARGUMENT_INVALID',
              },
            );
          }
          return found;
        })
      : all.filter((w) => w.url === publicUrl && (events as readonly string[]).includes(w.eventType));
    const changes: RegistrationChange[] = [];
    for (const w of chosen) {
      if (action === 'update') {
        const webhook = await client.webhooks.update(w.id, {
          eventType: w.eventType as never,
          url: publicUrl!,
          authorizationScheme: receiver.authorizationScheme,
          authorization: authorization!,
        });
        changes.push({ action: 'updated', webhook });
      } else {
        await client.webhooks.delete(w.id);
        changes.push({ action: 'deleted', webhook: w });
      }
    }
    out.write(changes.length ? changesTable(changes) : `nothing to ${action}\n`);
    return EXIT_OK;
  } finally {
    await client.close();
  }
}
