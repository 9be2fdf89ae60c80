/**
 * The error bodies of the service (spec section 7), built in one place.
 *
 * Four shapes, and which routes use them:
 * - validation problem (RFC 9457 style, as ASP.NET writes it): `{type, title, status: 400, traceId, errors}` where
 *   `errors` maps a field path (`$.dueDate`, `endDate`) to messages. Charge creation, update, paginated query.
 * - not found: `{type, title: 'Not Found', status: 404, traceId}`. Unknown charge on query, update, void, print, pay,
 *   expire.
 * - Pix rule: `{errors: string[], errorMessage}`. Pix charge rules (amount > 0, additionalInfo length).
 * - claim: `{title, code, errors: string[]}`. Key claim cancellation.
 * Anything else the sandbox refuses (401, 409, ...) uses the problem shape with `detail`.
 *
 * Route handlers `throw new SandboxHttpError(...)` (or use the builders with `reply`); the server's error handler
 * sends it. A traceId is W3C trace-context shaped (`00-<32 hex>-<16 hex>-00`), as the service's samples are.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyReply } from 'fastify';

export const PROBLEM_TYPES = {
  400: 'https://tools.ietf.org/html/rfc9110#section-15.5.1',
  401: 'https://tools.ietf.org/html/rfc9110#section-15.5.2',
  403: 'https://tools.ietf.org/html/rfc9110#section-15.5.4',
  404: 'https://tools.ietf.org/html/rfc9110#section-15.5.5',
  409: 'https://tools.ietf.org/html/rfc9110#section-15.5.10',
  415: 'https://tools.ietf.org/html/rfc9110#section-15.5.16',
  422: 'https://tools.ietf.org/html/rfc9110#section-15.5.21',
  429: 'https://tools.ietf.org/html/rfc6585#section-4',
  500: 'https://tools.ietf.org/html/rfc9110#section-15.6.1',
  503: 'https://tools.ietf.org/html/rfc9110#section-15.6.4',
} as const satisfies Record<number, string>;

/** A fresh trace id: `00-<32 hex>-<16 hex>-00`. */
export function newTraceId(): string {
  return `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-00`;
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  traceId: string;
  detail?: string;
  errors?: Record<string, string[]>;
}

export interface PixRuleBody {
  errors: string[];
  errorMessage: string;
}

export interface ClaimErrorBody {
  title: string;
  code: string;
  errors: string[];
}

/** An error response: the status and the exact JSON body to send. Thrown by handlers, sent by the server. */
export class SandboxHttpError extends Error {
  readonly status: number;
  readonly body: unknown;
  readonly headers: Record<string, string>;

  constructor(status: number, body: unknown, headers: Record<string, string> = {}) {
    super(`sandbox answered ${status}`);
    this.name = 'SandboxHttpError';
    this.status = status;
    this.body = body;
    this.headers = headers;
  }
}

/** Generic problem body for a status (401, 409, 415, ...). */
export function problem(status: number, title: string, detail?: string): ProblemBody {
  const type = (PROBLEM_TYPES as Record<number, string>)[status] ?? 'about:blank';
  const body: ProblemBody = { type, title, status, traceId: newTraceId() };
  if (detail !== undefined) body.detail = detail;
  return body;
}

/** Validation problem (HTTP 400) with the field errors; paths like `$.dueDate` for body fields, `endDate` for query. */
export function validationProblem(errors: Record<string, string[]>): ProblemBody {
  return {
    type: PROBLEM_TYPES[400],
    title: 'One or more validation errors occurred.',
    status: 400,
    traceId: newTraceId(),
    errors,
  };
}

/** Not found (HTTP 404). */
export function notFoundProblem(): ProblemBody {
  return { type: PROBLEM_TYPES[404], title: 'Not Found', status: 404, traceId: newTraceId() };
}

/** Pix charge rule violation body (sent with HTTP 400). */
export function pixRuleBody(errors: string[]): PixRuleBody {
  return { errors, errorMessage: errors.join(' ') };
}

/** Key claim error body (title, code, errors); the HTTP status is the claims area's decision. */
export function claimErrorBody(title: string, code: string, errors: string[]): ClaimErrorBody {
  return { title, code, errors };
}

/** Shorthands that build the error to throw. */
export const httpErrors = {
  validation: (errors: Record<string, string[]>) => new SandboxHttpError(400, validationProblem(errors)),
  notFound: () => new SandboxHttpError(404, notFoundProblem()),
  pixRule: (errors: string[]) => new SandboxHttpError(400, pixRuleBody(errors)),
  claim: (status: number, title: string, code: string, errors: string[]) =>
    new SandboxHttpError(status, claimErrorBody(title, code, errors)),
  problem: (status: number, title: string, detail?: string) =>
    new SandboxHttpError(status, problem(status, title, detail)),
};

/** Sends an error response (used by the server's error handler and by hooks that answer early). */
export function sendHttpError(reply: FastifyReply, error: SandboxHttpError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type('application/json; charset=utf-8').send(JSON.stringify(error.body));
}
