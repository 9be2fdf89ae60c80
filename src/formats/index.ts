/** Brazilian formats shared by the pipeline and the sandbox. Import from here. */
export * from './arrecadacao.js';
export * from './bill-identifier.js';
export * from './bills.js';
export * from './boleto.js';
export * from './brcode.js';
export * from './charges.js';
export * from './check-digits.js';
export * from './claims.js';
export * from './dates.js';
export * from './digits.js';
export * from './documents.js';
export * from './errors.js';
export * from './events.js';
export * from './ids.js';
export * from './money.js';
export * from './pix.js';
