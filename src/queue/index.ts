export {
  type GroupRateLimit,
  queueOptionsFromConfig,
  RequestQueue,
  type RequestQueueOptions,
} from './request-queue.js';
