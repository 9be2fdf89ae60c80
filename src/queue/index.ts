export type { QueueClock } from './clock.js';
export { AIMD_DECREASE_FACTOR, AIMD_INCREASE_FRACTION, PACING_BURST, WINDOW_GUARD_FRACTION } from './rate-limit.js';
export {
  type GroupRateLimit,
  type OutgoingRequest,
  type QueueTask,
  queueOptionsFromConfig,
  RequestQueue,
  type RequestQueueOptions,
  ROW_SLOTS_PER_CONNECTION,
} from './request-queue.js';
export {
  type SharedRateGate,
  SharedRateLimiter,
  type SharedRateOptions,
  type SharedRateSetting,
  sharedRateOptions,
} from './shared-rate.js';
