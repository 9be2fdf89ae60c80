/**
 * The service's enums of Pix key claims (service-interface.md 2.11, 3, 4.5, 7), shared by the bank client, the
 * `claims` and `claim-cancellations` batch kinds and the sandbox. The claim statuses are not here: each side spells
 * them its own way (the client also accepts the samples' PENDING; the sandbox stores the enum's PENDIG).
 */

/** `type` of a claim start: the kind of Pix key claimed. */
export const CLAIM_KEY_TYPES = ['DOCUMENT', 'EMAIL', 'PHONE'] as const;
export type ClaimKeyType = (typeof CLAIM_KEY_TYPES)[number];

/** PORTABILITY when the holder stays (the key changes participant), OWNERSHIP when the holder changes. */
export const CLAIM_TYPES = ['PORTABILITY', 'OWNERSHIP'] as const;
export type ClaimType = (typeof CLAIM_TYPES)[number];

/** The side of the claim a participant is on. */
export const PARTICIPATION_FLOW_TYPES = ['DONOR', 'CLAIMANT'] as const;
export type ParticipationFlowType = (typeof PARTICIPATION_FLOW_TYPES)[number];

/** `reason` of a claim cancellation. */
export const CANCELLATION_REASONS = ['USER_REQUESTED', 'ACCOUNT_CLOSURE', 'FRAUD'] as const;
export type CancellationReason = (typeof CANCELLATION_REASONS)[number];

/** `account.type` of the claiming account. */
export const ACCOUNT_TYPES = ['CURRENT', 'PAYMENT', 'SAVING', 'SALARY'] as const;
export type AccountType = (typeof ACCOUNT_TYPES)[number];

/** `account.holder.type`: NATURAL (a CPF) or LEGAL (a CNPJ). */
export const HOLDER_TYPES = ['NATURAL', 'LEGAL'] as const;
export type HolderType = (typeof HOLDER_TYPES)[number];
