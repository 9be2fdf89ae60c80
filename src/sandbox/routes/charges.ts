/** Charges routes (spec 4.1). Filled in next; see src/sandbox/server.ts for the module shape. */
import type { FastifyInstance } from 'fastify';
import type { SandboxContext } from '../server.js';

export function registerChargeRoutes(_app: FastifyInstance, _ctx: SandboxContext): void {}
