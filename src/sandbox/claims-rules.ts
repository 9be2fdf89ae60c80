/**
 * Key claim rules of the sandbox (spec 4.5, 2.11, 3, 7; brazilian-formats.md section 6), as pure functions.
 *
 * A claim moves a Pix key to the claimant's account: PORTABILITY when the holder stays the same (the key only changes
 * participant), OWNERSHIP when the holder changes. The sandbox's party is either the CLAIMANT (it started the claim)
 * or the DONOR (another participant claims a key held here; only the admin route makes such claims).
 *
 * Statuses and the moves the sandbox allows (the spec gives only start and cancel; the rest follows the DICT flow of
 * brazilian-formats.md section 6):
 *
 *     start --> PENDIG --admin--> AWAITING_RESOLUTION --admin--> CONFIRMED --admin--> COMPLETED
 *                 :                      |                          |
 *                 :(setting)          cancel                      cancel
 *                 v                      v                          v
 *              CANCELED <----------------+--------------------------+
 *
 * What must hold: COMPLETED and CANCELED are final (nothing moves a claim out of them, not even a second cancel);
 * a cancel is allowed only by the who-may-cancel table for the claim's type and the canceller's side; a claim
 * is cancelled at most once (the route records the ledger effect in the same transaction as the status change).
 *
 * PENDIG is the spelling of the spec's status enum; the spec's transition table and samples say PENDING. The sandbox
 * stores PENDIG, answers with the spelling of the `claimPendingSpelling` setting, and accepts both on input.
 */
import { getPixKeyInfo } from '@brazilian-utils/brazilian-utils/get-pix-key-info';
import { isValidEmail } from '@brazilian-utils/brazilian-utils/is-valid-email';
import type {
  CancellationReason,
  ClaimKeyType,
  ClaimType,
  HolderType,
  ParticipationFlowType,
} from '../formats/claims.js';
import { isValidCnpj, isValidCpf } from '../formats/documents.js';

/** Claim statuses, as stored (PENDIG spelled as in the spec's enum). */
export const CLAIM_STATUSES = ['PENDIG', 'AWAITING_RESOLUTION', 'CONFIRMED', 'CANCELED', 'COMPLETED'] as const;
export type ClaimStatus = (typeof CLAIM_STATUSES)[number];

/** How the open status is spelled on the wire (the enum's PENDIG, or the samples' PENDING). */
export type PendingSpelling = 'PENDIG' | 'PENDING';

/** Resolution period of a claim: the deadline is 7 days after the start (brazilian-formats.md section 6). */
export const CLAIM_RESOLUTION_PERIOD_MS = 7 * 24 * 60 * 60 * 1000;

/** Statuses in which a claim is still open (one open claim per key at a time). */
export const OPEN_CLAIM_STATUSES: readonly ClaimStatus[] = ['PENDIG', 'AWAITING_RESOLUTION', 'CONFIRMED'];

/** Final statuses: nothing moves a claim out of them. */
export const FINAL_CLAIM_STATUSES: readonly ClaimStatus[] = ['CANCELED', 'COMPLETED'];

/**
 * Who may cancel, by reason and by (claim type, side): brazilian-formats.md section 6.
 * Columns: ownership donor / ownership claimant / portability donor / portability claimant.
 */
export const WHO_MAY_CANCEL: Readonly<
  Record<CancellationReason, Readonly<Record<ClaimType, Readonly<Record<ParticipationFlowType, boolean>>>>>
> = {
  USER_REQUESTED: { OWNERSHIP: { DONOR: false, CLAIMANT: true }, PORTABILITY: { DONOR: true, CLAIMANT: true } },
  ACCOUNT_CLOSURE: { OWNERSHIP: { DONOR: false, CLAIMANT: true }, PORTABILITY: { DONOR: false, CLAIMANT: true } },
  FRAUD: { OWNERSHIP: { DONOR: true, CLAIMANT: true }, PORTABILITY: { DONOR: true, CLAIMANT: true } },
};

/** The moves of the diagram above, other than cancel (cancel is decided by {@link decideCancellation}). */
const NEXT_STATUS: Readonly<Record<ClaimStatus, readonly ClaimStatus[]>> = {
  PENDIG: ['AWAITING_RESOLUTION'],
  AWAITING_RESOLUTION: ['CONFIRMED'],
  CONFIRMED: ['COMPLETED'],
  CANCELED: [],
  COMPLETED: [],
};

/** Reads a status from the wire: the enum's spelling, PENDING (the samples' spelling) for PENDIG; else undefined. */
export function parseClaimStatus(text: unknown): ClaimStatus | undefined {
  if (text === 'PENDING') return 'PENDIG';
  return typeof text === 'string' && (CLAIM_STATUSES as readonly string[]).includes(text)
    ? (text as ClaimStatus)
    : undefined;
}

/** Writes a status for the wire, with the configured spelling of the open status. */
export function spellClaimStatus(status: ClaimStatus, pendingSpelling: PendingSpelling): string {
  return status === 'PENDIG' ? pendingSpelling : status;
}

/** Whether the admin route may move a claim from `from` to `to` without forcing (cancel excluded). */
export function canMoveClaim(from: ClaimStatus, to: ClaimStatus): boolean {
  return NEXT_STATUS[from].includes(to);
}

export interface CancellationContext {
  status: ClaimStatus;
  type: ClaimType;
  /** The sandbox party's side in the claim. */
  participationFlowType: ParticipationFlowType;
}

export interface CancellationRequest {
  /** The side the canceller says it is on (request body). */
  participationFlowType: ParticipationFlowType;
  reason: CancellationReason;
}

export type CancellationDecision = { allowed: true } | { allowed: false; message: string };

const TYPE_PT: Record<ClaimType, string> = { PORTABILITY: 'portabilidade', OWNERSHIP: 'posse' };
const SIDE_PT: Record<ParticipationFlowType, string> = { DONOR: 'doador', CLAIMANT: 'reivindicador' };

/**
 * Whether a cancel may go through. Refused (with the Portuguese message the service's errors carry) when the claim
 * is final, still PENDIG (unless `cancellableFromPending`), the canceller is not on the side of the claim it says,
 * or the who-may-cancel table forbids the reason for that type and side.
 */
export function decideCancellation(
  claim: CancellationContext,
  request: CancellationRequest,
  options: { cancellableFromPending: boolean } = { cancellableFromPending: false },
): CancellationDecision {
  if (claim.status === 'COMPLETED') {
    return { allowed: false, message: 'A reivindicação já foi concluída (COMPLETED) e não pode ser cancelada.' };
  }
  if (claim.status === 'CANCELED') {
    return { allowed: false, message: 'A reivindicação já foi cancelada (CANCELED).' };
  }
  if (claim.status === 'PENDIG' && !options.cancellableFromPending) {
    return {
      allowed: false,
      message: 'A reivindicação ainda está pendente (PENDIG) e só pode ser cancelada após AWAITING_RESOLUTION.',
    };
  }
  if (claim.participationFlowType !== request.participationFlowType) {
    return {
      allowed: false,
      message: `O participante não é ${SIDE_PT[request.participationFlowType]} (${request.participationFlowType}) desta reivindicação; é ${SIDE_PT[claim.participationFlowType]} (${claim.participationFlowType}).`,
    };
  }
  if (!WHO_MAY_CANCEL[request.reason][claim.type][request.participationFlowType]) {
    return {
      allowed: false,
      message: `O ${SIDE_PT[request.participationFlowType]} de uma reivindicação de ${TYPE_PT[claim.type]} (${claim.type}) não pode cancelá-la pelo motivo ${request.reason}.`,
    };
  }
  return { allowed: true };
}

/**
 * The type of a new claim. A DOCUMENT key (CPF/CNPJ) can only belong to its own holder: always PORTABILITY.
 * An EMAIL or PHONE key is OWNERSHIP when the sandbox knows it belongs to another holder (`currentHolderDocument`:
 * the claimant holder of the key's last COMPLETED claim), PORTABILITY otherwise (an unknown key is taken to be the
 * same holder's key at another participant). The admin route can still change the type.
 */
export function claimTypeFor(
  keyType: ClaimKeyType,
  holderDocument: string,
  currentHolderDocument: string | undefined,
): ClaimType {
  if (keyType === 'DOCUMENT') return 'PORTABILITY';
  if (currentHolderDocument !== undefined && currentHolderDocument !== holderDocument) return 'OWNERSHIP';
  return 'PORTABILITY';
}

/** A participant (name and ISPB). */
export interface Participant {
  name: string;
  ispb: string;
}

/** Participants the sandbox names as donors; the choice depends only on the key, so it is stable. */
export const DONOR_PARTICIPANTS: readonly Participant[] = [
  { name: 'BCO DO BRASIL S.A.', ispb: '00000000' },
  { name: 'ITAÚ UNIBANCO S.A.', ispb: '60701190' },
  { name: 'BCO BRADESCO S.A.', ispb: '60746948' },
  { name: 'CAIXA ECONOMICA FEDERAL', ispb: '00360305' },
  { name: 'NU PAGAMENTOS - IP', ispb: '18236120' },
  { name: 'BCO SANTANDER (BRASIL) S.A.', ispb: '90400888' },
];

/** The donor participant of a key: a fixed function of the key text (FNV-1a over its UTF-16 code units). */
export function donorParticipantFor(key: string): Participant {
  let hash = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    hash ^= key.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return DONOR_PARTICIPANTS[hash % DONOR_PARTICIPANTS.length]!;
}

/** Longest e-mail key the DICT registers. */
export const EMAIL_KEY_MAX_LENGTH = 77;

/**
 * Reads an EMAIL key: a valid address of at most 77 characters, compared lower-cased (the DICT's canonical form).
 * Returns the canonical key, or undefined when invalid.
 */
export function parseEmailKey(text: string): string | undefined {
  const trimmed = text.trim();
  if (trimmed.length === 0 || trimmed.length > EMAIL_KEY_MAX_LENGTH || !isValidEmail(trimmed)) return undefined;
  return trimmed.toLowerCase();
}

/**
 * Reads a PHONE key: a Brazilian mobile number written in the DICT's E.164 form, `+55` + DDD + 9 digits
 * (e.g. `+5511987654321`). Masks and a missing `+55` are refused: a key is registered in its canonical form.
 */
export function parsePhoneKey(text: string): string | undefined {
  if (!/^\+55\d{11}$/.test(text)) return undefined;
  const info = getPixKeyInfo(text);
  return info?.type === 'phone' && info.value === text ? text : undefined;
}

/**
 * Reads a holder document: a CPF (11 digits) for a NATURAL holder, a CNPJ (14 characters, the alphanumeric form
 * included) for a LEGAL one, check digits verified. The usual masks (`.`, `-`, `/`) are removed first.
 * Returns `{ document }` (canonical: unmasked, upper-case) or `{ problem }` in Portuguese, which never repeats the
 * document (personal data) beyond its length.
 */
export function parseHolderDocument(text: string, holderType: HolderType): { document: string } | { problem: string } {
  const document = text.replace(/[.\-/\s]/g, '').toUpperCase();
  if (holderType === 'NATURAL') {
    if (!/^\d{11}$/.test(document)) {
      return {
        problem: `O CPF do titular (account.holder.document) deve ter 11 dígitos; recebidos ${document.length}.`,
      };
    }
    if (!isValidCpf(document)) {
      return { problem: 'O CPF do titular (account.holder.document) tem dígitos verificadores inválidos.' };
    }
    return { document };
  }
  if (!/^[0-9A-Z]{12}\d{2}$/.test(document)) {
    return {
      problem: `O CNPJ do titular (account.holder.document) deve ter 14 caracteres (os 2 últimos dígitos); recebidos ${document.length}.`,
    };
  }
  if (!isValidCnpj(document)) {
    return { problem: 'O CNPJ do titular (account.holder.document) tem dígitos verificadores inválidos.' };
  }
  return { document };
}
