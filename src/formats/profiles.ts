/**
 * Provider profiles: the dialect the client speaks (header names, every path, which operations carry an
 * IdempotencyKey, the Pix QR payment's body). Shared by the client (src/bank) and the sandbox (src/sandbox), which
 * serves either dialect at its edge.
 *
 * - `interface`: shared/spec/service-interface.md, as written (the default).
 * - `delbank`: what the provider's official clients send (shared/spec/provider-delbank.md, the PHP SDK's source):
 *   `x-delbank-api-key` and `x-delfinance-account-id` on every request, charges under `/baas/v1/charges`, dynamic QR
 *   v2 with its city as `address`, the QR payment as a transfer (`POST /baas/api/v2/transfers`), the static QR body
 *   with `additionalInfo` and `source`, and no IdempotencyKey on the payment initialization, the dynamic QR and the static QR.
 *   docs/providers.md tells where each fact comes from.
 *
 * Every path and header can be overridden one by one (config `bank.paths.<operation>`, `bank.headers.<name>`).
 *
 * EXACTLY ONCE WITHOUT A KEY (what the keyless operations of a profile rely on instead; the steps that use them say
 * the same in their state machine comments, src/batches/*.ts):
 * - charges (both profiles): the correlationId is the natural key; an unknown outcome is looked up by
 *   GET charge/{correlationId} and created again only on 404.
 * - dynamic QR (both): the same, by GET dynamicQrGet/{correlationId}.
 * - static QR (delbank only; `interface` sends the key): looked up by GET staticQrGet/{correlationId}, created again
 *   only on 404 (`qrCodes.recoverStatic`).
 * - payment initialization (delbank only): moves no money; a resend hands out a new endToEndId and the first one is
 *   simply never used. The payment itself (the transfer) carries its IdempotencyKey in both profiles, and the
 *   single-use endToEndId is a second guard.
 *
 * THE PIX QR PAYMENT AFTER AN UNKNOWN OUTCOME (src/batches/pix-payments.ts, step `pay`): looked up first by the row's
 * endToEndId (GET pixPaymentGet/{endToEndId}). Where that cannot tell, it is resent with its key only when the profile
 * says the bank answers a repeated key with the first payment (`pixPaymentKeyReplayed`, config
 * `bank.pixPaymentKeyReplayed`): remessa's reading of the interface (docs/service-gaps.md, "Idempotency"), not known
 * of the provider's transfers (its clients send a key; nothing says what a repeat gets), so `false` in `delbank`: the
 * row then stays `uncertain` for a person.
 */

/** The profiles remessa knows. */
export const BANK_PROFILES = ['interface', 'delbank'] as const;
export type BankProfileName = (typeof BANK_PROFILES)[number];

/**
 * Every operation with its own path. A `{name}` segment is replaced by the encoded value (correlationId, id, ...).
 * Names are the config keys of `bank.paths`.
 */
export const BANK_OPERATIONS = [
  'charges',
  'charge',
  'chargeVoid',
  'chargePdf',
  'chargeStagingPay',
  'chargeStagingExpire',
  'billLookup',
  'billPayment',
  'billPaymentGet',
  'pixPaymentInitialization',
  'pixPayment',
  'pixPaymentGet',
  'dynamicQr',
  'dynamicQrGet',
  'staticQr',
  'staticQrGet',
  'claims',
  'claimsSearch',
  'claimCancel',
  'webhooks',
  'webhook',
] as const;
export type BankOperation = (typeof BANK_OPERATIONS)[number];

/** Operations whose request carries the caller's IdempotencyKey in at least one profile. */
export type KeyedOperation =
  | 'billPayment'
  | 'pixPaymentInitialization'
  | 'pixPayment'
  | 'staticQr'
  | 'claims'
  | 'claimsSearch'
  | 'claimCancel';

export interface BankProfileHeaders {
  /** Header that carries the API key. */
  apiKey: string;
  /** Header that carries the account id. */
  accountId: string;
  /** Header that carries the idempotency key. */
  idempotencyKey: string;
}

export interface BankProfile {
  name: BankProfileName;
  headers: BankProfileHeaders;
  /** 'webhooks': the account id only on webhook operations (the spec); 'all': on every request (the SDKs). */
  accountIdOn: 'webhooks' | 'all';
  paths: Readonly<Record<BankOperation, string>>;
  /** Keyed operations whose request carries NO IdempotencyKey in this profile. */
  keyless: ReadonlySet<KeyedOperation>;
  /** Body of the Pix QR payment: the spec's fields, or the SDK's transfer (type "Pix", saveFavorite, tags...). */
  pixPaymentBody: 'interface' | 'transfer';
  /**
   * Dynamic QR `expiresIn` as a JSON number, left out when the row gives none (spec), or a string of digits, "86400"
   * when the row gives none (the SDK's default).
   */
  dynamicQrExpiresIn: 'number' | 'string';
  /**
   * Body of the static QR creation: the spec's (`type`, `description`, the payer's message as `additionalInformation`)
   * or the SDK's (the message as `additionalInfo`, `source: "QR_CODE_API"`). Both keep `type` and the internal
   * `description`, which the SDK's request does not have (docs/providers.md, "What is uncertain").
   */
  staticQrBody: 'interface' | 'sdk';
  /**
   * Where the dynamic QR's city goes: the spec's `city: {name, zipCode}`, or the SDK's `address: {cityName, zipCode}`
   * (its AddressDTO also has uf, state and street, which remessa's rows do not carry).
   */
  dynamicQrCity: 'city' | 'address';
  /**
   * Whether the bank answers a Pix QR payment sent again with the same IdempotencyKey with the first payment (never a
   * second one). Decides whether a payment of unknown outcome that the lookup by endToEndId cannot find out about is
   * resent (true) or left `uncertain` (false). See the top of this file.
   */
  pixPaymentKeyReplayed: boolean;
}

const INTERFACE_PATHS: Record<BankOperation, string> = {
  charges: '/v1/charges',
  charge: '/v1/charges/{correlationId}',
  chargeVoid: '/v1/charges/{correlationId}/void',
  chargePdf: '/v1/charges/{correlationId}/stream',
  chargeStagingPay: '/v1/charges/{correlationId}/pay',
  chargeStagingExpire: '/v1/charges/{correlationId}/expire',
  billLookup: '/baas/api/v1/bill-payments/{identifier}',
  billPayment: '/baas/api/v1/bill-payments',
  // Not in the spec (docs/service-gaps.md "The retorno"): a payment by id, served by the sandbox; a setting.
  billPaymentGet: '/baas/api/v1/bill-payments/payments/{id}',
  pixPaymentInitialization: '/baas/api/v2/pix/qrcode/payment-initialization',
  // Not shown in the spec (docs/service-gaps.md): the sandbox's choice, a setting.
  pixPayment: '/baas/api/v2/pix/qrcode/payment',
  pixPaymentGet: '/baas/api/v2/pix/qrcode/payment/{id}',
  dynamicQr: '/baas/api/v1/pix/qrcode/dynamic',
  dynamicQrGet: '/baas/api/v1/pix/qrcode/dynamic/{id}',
  staticQr: '/baas/api/v2/pix/qrcode/static',
  staticQrGet: '/baas/api/v2/pix/qrcode/static/{id}',
  claims: '/indirect-pix/api/v1/dict/claims',
  claimsSearch: '/indirect-pix/api/v1/dict/claims/search',
  claimCancel: '/indirect-pix/api/v1/dict/claims/{claimId}/cancel',
  webhooks: '/baas/api/v1/webhooks',
  webhook: '/baas/api/v1/webhooks/{id}',
};

const DELBANK_PATHS: Record<BankOperation, string> = {
  ...INTERFACE_PATHS,
  charges: '/baas/v1/charges',
  charge: '/baas/v1/charges/{correlationId}',
  chargeVoid: '/baas/v1/charges/{correlationId}/void',
  chargePdf: '/baas/v1/charges/{correlationId}/stream',
  chargeStagingPay: '/baas/v1/charges/{correlationId}/pay',
  chargeStagingExpire: '/baas/v1/charges/{correlationId}/expire',
  pixPayment: '/baas/api/v2/transfers',
  pixPaymentGet: '/baas/api/v2/transfers/{id}',
  dynamicQr: '/baas/api/v2/pix/qrcode/dynamic',
  dynamicQrGet: '/baas/api/v2/pix/qrcode/dynamic/{id}',
};

export const BANK_PROFILE_DEFINITIONS: Readonly<Record<BankProfileName, BankProfile>> = {
  interface: {
    name: 'interface',
    headers: { apiKey: 'x-service-api-key', accountId: 'x-service-account-id', idempotencyKey: 'IdempotencyKey' },
    accountIdOn: 'webhooks',
    paths: INTERFACE_PATHS,
    keyless: new Set(),
    pixPaymentBody: 'interface',
    dynamicQrExpiresIn: 'number',
    staticQrBody: 'interface',
    dynamicQrCity: 'city',
    pixPaymentKeyReplayed: true,
  },
  delbank: {
    name: 'delbank',
    headers: {
      apiKey: 'x-delbank-api-key',
      accountId: 'x-delfinance-account-id',
      idempotencyKey: 'IdempotencyKey',
    },
    accountIdOn: 'all',
    paths: DELBANK_PATHS,
    keyless: new Set<KeyedOperation>(['pixPaymentInitialization', 'staticQr']),
    pixPaymentBody: 'transfer',
    dynamicQrExpiresIn: 'string',
    staticQrBody: 'sdk',
    dynamicQrCity: 'address',
    pixPaymentKeyReplayed: false,
  },
};

export interface BankProfileOverrides {
  /** Header names, one by one. */
  headers?: Partial<BankProfileHeaders> | undefined;
  /** Paths, one by one (each starts with '/'; `{name}` segments are filled in). */
  paths?: Partial<Record<BankOperation, string>> | undefined;
  /** `BankProfile.pixPaymentKeyReplayed`, when the user knows better than the profile. */
  pixPaymentKeyReplayed?: boolean | undefined;
}

/** The profile with the overrides applied. Throws a TypeError naming the bad override ("Expected X, got Y"). */
export function resolveBankProfile(name: BankProfileName, overrides: BankProfileOverrides = {}): BankProfile {
  const base = BANK_PROFILE_DEFINITIONS[name];
  if (!base) {
    throw new TypeError(`bank profile: expected one of ${BANK_PROFILES.join(', ')}, got ${JSON.stringify(name)}`);
  }
  const paths: Record<BankOperation, string> = { ...base.paths };
  for (const [op, value] of Object.entries(overrides.paths ?? {})) {
    if (value === undefined) continue;
    if (!(BANK_OPERATIONS as readonly string[]).includes(op)) {
      throw new TypeError(`bank path "${op}": expected one of ${BANK_OPERATIONS.join(', ')}`);
    }
    if (!value.startsWith('/')) {
      throw new TypeError(`bank path "${op}": expected a path starting with "/", got ${JSON.stringify(value)}`);
    }
    paths[op as BankOperation] = value;
  }
  const headers = { ...base.headers };
  for (const [h, value] of Object.entries(overrides.headers ?? {})) {
    if (value !== undefined) headers[h as keyof BankProfileHeaders] = value;
  }
  return {
    ...base,
    headers,
    paths,
    pixPaymentKeyReplayed: overrides.pixPaymentKeyReplayed ?? base.pixPaymentKeyReplayed,
  };
}

/**
 * Fills the `{...}` segments of a path template, in order, with encoded values (positional, so an override may name
 * its segments as it likes). Encoded, since a correlation id could hold '/', '?' or '%'. A missing value is a
 * programming error.
 */
export function fillPath(template: string, ...values: string[]): string {
  let i = 0;
  return template.replace(/\{[^}/]*\}/g, (segment) => {
    const value = values[i++];
    if (value === undefined) throw new TypeError(`path ${template}: expected a value for ${segment}, got nothing`);
    return encodeURIComponent(value);
  });
}
