/** The pure key claim rules (src/sandbox/claims-rules.ts): statuses, moves, who may cancel, keys and documents. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CANCELLATION_REASONS, CLAIM_TYPES, PARTICIPATION_FLOW_TYPES } from '../src/formats/claims.js';
import { cnpjFromSeed, cpfFromSeed } from '../src/formats/documents.js';
import { isGuid } from '../src/formats/ids.js';
import {
  CLAIM_STATUSES,
  canMoveClaim,
  claimTypeFor,
  DONOR_PARTICIPANTS,
  decideCancellation,
  donorParticipantFor,
  parseClaimStatus,
  parseEmailKey,
  parseHolderDocument,
  parsePhoneKey,
  spellClaimStatus,
  WHO_MAY_CANCEL,
} from '../src/sandbox/claims-rules.js';

const status = fc.constantFrom(...CLAIM_STATUSES);
const type = fc.constantFrom(...CLAIM_TYPES);
const side = fc.constantFrom(...PARTICIPATION_FLOW_TYPES);
const reason = fc.constantFrom(...CANCELLATION_REASONS);

describe('statuses', () => {
  it('reads both spellings of the open status and writes the configured one', () => {
    expect(parseClaimStatus('PENDIG')).toBe('PENDIG');
    expect(parseClaimStatus('PENDING')).toBe('PENDIG');
    expect(parseClaimStatus('pending')).toBeUndefined();
    expect(parseClaimStatus(3)).toBeUndefined();
    expect(spellClaimStatus('PENDIG', 'PENDING')).toBe('PENDING');
    expect(spellClaimStatus('PENDIG', 'PENDIG')).toBe('PENDIG');
    expect(spellClaimStatus('CONFIRMED', 'PENDING')).toBe('CONFIRMED');
  });

  it('moves only forward along the flow, never out of a final status', () => {
    expect(canMoveClaim('PENDIG', 'AWAITING_RESOLUTION')).toBe(true);
    expect(canMoveClaim('AWAITING_RESOLUTION', 'CONFIRMED')).toBe(true);
    expect(canMoveClaim('CONFIRMED', 'COMPLETED')).toBe(true);
    expect(canMoveClaim('PENDIG', 'COMPLETED')).toBe(false);
    expect(canMoveClaim('CONFIRMED', 'PENDIG')).toBe(false);
    fc.assert(
      fc.property(fc.constantFrom('CANCELED', 'COMPLETED' as const), status, (from, to) => {
        expect(canMoveClaim(from, to)).toBe(false);
      }),
    );
  });
});

describe('decideCancellation', () => {
  it('never allows a final claim, and allows an open one exactly by the table', () => {
    fc.assert(
      fc.property(status, type, side, side, reason, fc.boolean(), (st, ty, claimSide, sent, re, fromPending) => {
        const d = decideCancellation(
          { status: st, type: ty, participationFlowType: claimSide },
          { participationFlowType: sent, reason: re },
          { cancellableFromPending: fromPending },
        );
        const open = st === 'AWAITING_RESOLUTION' || st === 'CONFIRMED' || (st === 'PENDIG' && fromPending);
        const expected = open && claimSide === sent && WHO_MAY_CANCEL[re][ty][sent];
        expect(d.allowed).toBe(expected);
        if (!d.allowed) expect(d.message).toMatch(/reivindicação|participante|doador|reivindicador/);
      }),
    );
  });

  type Claim = Parameters<typeof decideCancellation>[0];
  type Request = Parameters<typeof decideCancellation>[1];
  const claimant: Request = { participationFlowType: 'CLAIMANT', reason: 'FRAUD' };
  it.each<{ claim: Claim; request: Request; says: string }>([
    {
      claim: { status: 'COMPLETED', type: 'PORTABILITY', participationFlowType: 'CLAIMANT' },
      request: claimant,
      says: 'concluída',
    },
    {
      claim: { status: 'CANCELED', type: 'PORTABILITY', participationFlowType: 'CLAIMANT' },
      request: claimant,
      says: 'já foi cancelada',
    },
    {
      claim: { status: 'PENDIG', type: 'PORTABILITY', participationFlowType: 'CLAIMANT' },
      request: claimant,
      says: 'pendente',
    },
    {
      claim: { status: 'CONFIRMED', type: 'OWNERSHIP', participationFlowType: 'DONOR' },
      request: { participationFlowType: 'DONOR', reason: 'USER_REQUESTED' },
      says: 'posse (OWNERSHIP)',
    },
    {
      claim: { status: 'CONFIRMED', type: 'PORTABILITY', participationFlowType: 'DONOR' },
      request: { participationFlowType: 'DONOR', reason: 'ACCOUNT_CLOSURE' },
      says: 'portabilidade (PORTABILITY)',
    },
  ])(
    'names the rule that refused: $claim.status $claim.type, $request.participationFlowType for $request.reason -> $says',
    ({ claim, request, says }) => {
      const d = decideCancellation(claim, request);
      expect(d.allowed ? '' : d.message).toContain(says);
    },
  );
});

describe('claim type and donor', () => {
  it('DOCUMENT is always PORTABILITY; EMAIL/PHONE is OWNERSHIP only for a known other holder', () => {
    expect(claimTypeFor('DOCUMENT', 'a', 'b')).toBe('PORTABILITY');
    expect(claimTypeFor('EMAIL', 'a', undefined)).toBe('PORTABILITY');
    expect(claimTypeFor('EMAIL', 'a', 'a')).toBe('PORTABILITY');
    expect(claimTypeFor('PHONE', 'a', 'b')).toBe('OWNERSHIP');
  });

  it('picks a stable donor from the list', () => {
    fc.assert(
      fc.property(fc.string(), (key) => {
        const d = donorParticipantFor(key);
        expect(DONOR_PARTICIPANTS).toContain(d);
        expect(donorParticipantFor(key)).toBe(d);
      }),
    );
  });
});

describe('keys and documents', () => {
  it('reads EMAIL keys lower-cased, at most 77 characters', () => {
    expect(parseEmailKey(' Ana.Silva@Example.COM ')).toBe('ana.silva@example.com');
    expect(parseEmailKey('no-at-sign')).toBeUndefined();
    const at77 = `${'a'.repeat(60)}@${'b'.repeat(12)}.com`;
    expect(at77).toHaveLength(77);
    expect(parseEmailKey(at77)).toBe(at77);
    expect(parseEmailKey(`${'a'.repeat(60)}@${'b'.repeat(13)}.com`)).toBeUndefined();
  });

  it('reads PHONE keys only in the +55 E.164 mobile form', () => {
    expect(parsePhoneKey('+5511987654321')).toBe('+5511987654321');
    for (const bad of ['5511987654321', '11987654321', '+55 11 98765-4321', '+551130001234', '+5511987654321 ']) {
      expect(parsePhoneKey(bad), bad).toBeUndefined();
    }
  });

  it('reads holder documents by type, masks allowed, check digits verified', () => {
    fc.assert(
      fc.property(fc.nat({ max: 999_999_999 }), (seed) => {
        const cpf = cpfFromSeed(seed);
        expect(parseHolderDocument(cpf, 'NATURAL')).toEqual({ document: cpf });
        expect('problem' in parseHolderDocument(cpf, 'LEGAL')).toBe(true);
        const cnpj = cnpjFromSeed(seed);
        expect(parseHolderDocument(cnpj, 'LEGAL')).toEqual({ document: cnpj });
        const broken = cnpj.slice(0, 13) + String((Number(cnpj[13]) + 1) % 10);
        expect('problem' in parseHolderDocument(broken, 'LEGAL')).toBe(true);
      }),
    );
    expect(parseHolderDocument('123.456.789-09', 'NATURAL')).toEqual({ document: '12345678909' });
    expect(parseHolderDocument('11.222.333/0001-81', 'LEGAL')).toEqual({ document: '11222333000181' });
    expect(parseHolderDocument('00000000000', 'NATURAL')).toHaveProperty('problem');
  });

  it('recognises GUIDs', () => {
    expect(isGuid('3F2B8C1E-9D4A-4F6B-8E2A-1C5D7E9F0A1B')).toBe(true);
    expect(isGuid('3f2b8c1e9d4a4f6b8e2a1c5d7e9f0a1b')).toBe(false);
    expect(isGuid('not-a-guid')).toBe(false);
  });
});
