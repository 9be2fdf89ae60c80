/**
 * Webhooks (spec 4.6). Every operation sends the account id header (the spec requires it on registration; sending
 * it on all is harmless and lets a provider scope the list by account). The authorization value is registered as a
 * log secret as soon as it is seen, and is dropped from every record the client returns.
 */
import { registerSecret } from '../log.js';
import type { HttpTransport } from './http.js';
import { webhookListSchema, webhookSchema } from './schemas.js';
import type { RequestOptions, Webhook, WebhookInput } from './types.js';

function body(input: WebhookInput): Record<string, unknown> {
  registerSecret(input.authorization);
  const out: Record<string, unknown> = { eventType: input.eventType, url: input.url };
  if (input.authorizationScheme !== undefined) out.authorizationScheme = input.authorizationScheme;
  if (input.authorization !== undefined) out.authorization = input.authorization;
  return out;
}

export class WebhooksResource {
  readonly #http: HttpTransport;

  constructor(http: HttpTransport) {
    this.#http = http;
  }

  /** POST /baas/api/v1/webhooks. */
  create(input: WebhookInput, options: RequestOptions = {}): Promise<Webhook> {
    return this.#http.json(
      {
        method: 'POST',
        path: this.#http.path('webhooks'),
        withAccountId: true,
        body: body(input),
        signal: options.signal,
        task: options.task,
      },
      webhookSchema,
    );
  }

  /** GET /baas/api/v1/webhooks: the webhooks registered with this API key. */
  list(options: RequestOptions = {}): Promise<Webhook[]> {
    return this.#http.json(
      {
        method: 'GET',
        path: this.#http.path('webhooks'),
        withAccountId: true,
        signal: options.signal,
        task: options.task,
      },
      webhookListSchema,
    );
  }

  /** GET /baas/api/v1/webhooks/{id}. Unknown id: NotFoundError. */
  get(id: string, options: RequestOptions = {}): Promise<Webhook> {
    return this.#http.json(
      {
        method: 'GET',
        path: this.#http.path('webhook', id),
        withAccountId: true,
        signal: options.signal,
        task: options.task,
      },
      webhookSchema,
    );
  }

  /** PATCH /baas/api/v1/webhooks/{id} with the registration payload. */
  update(id: string, input: WebhookInput, options: RequestOptions = {}): Promise<Webhook> {
    return this.#http.json(
      {
        method: 'PATCH',
        path: this.#http.path('webhook', id),
        withAccountId: true,
        body: body(input),
        signal: options.signal,
        task: options.task,
      },
      webhookSchema,
    );
  }

  /** DELETE /baas/api/v1/webhooks/{id}. Unknown id: NotFoundError. */
  async delete(id: string, options: RequestOptions = {}): Promise<void> {
    await this.#http.send({
      method: 'DELETE',
      path: this.#http.path('webhook', id),
      withAccountId: true,
      signal: options.signal,
      task: options.task,
    });
  }
}
