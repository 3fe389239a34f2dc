/**
 * sluice's public surface. Everything a caller may import or catch is listed here by name
 * (no `export *` of internals).
 */

export type { BreakerOptions } from "./core/breaker.js";
export type { Clock } from "./core/clock.js";
export {
  BreakerOpenError,
  ConfigError,
  isBreakerOpenError,
  isConfigError,
  isKeyLimitError,
  isQueueFullError,
  isQueueTimeoutError,
  isQuotaPausedError,
  isRateLimitError,
  isSluiceError,
  KeyLimitError,
  QueueFullError,
  QueueTimeoutError,
  QuotaPausedError,
  RateLimitError,
  SluiceError,
  type SluiceErrorCode,
  StoreUnavailableError,
  TimeoutError,
} from "./core/errors.js";
export type { Event } from "./core/events.js";
export type { Lease, ReleaseOptions, Usage } from "./core/lease.js";
export type {
  AccountOptions,
  GovernorOptions,
  KeyOptions,
  LaneOptions,
  PodOptions,
  TenantOptions,
} from "./core/options.js";
export type { FailureInput, Outcome } from "./core/outcome.js";
export { classifyOutcome } from "./core/outcome.js";
export type { Priority } from "./core/priority.js";
export type { GrantEvent, RefusalEvent, ReleaseEvent, WidthEvent } from "./core/scheduler.js";
export type {
  AccountSnapshot,
  BucketSnapshot,
  GroupSnapshot,
  KeySnapshot,
  LaneSnapshot,
  PodSnapshot,
  Snapshot,
} from "./core/snapshot.js";
// The store contract the Governor's `store` option takes: the memory store by default, a
// `RedisStore` (sluice/redis) for a fleet; `isFleetStore` tells them apart.
export { type FleetStore, isFleetStore, type Store } from "./core/store.js";
export type { AcquireOptions, BreakerEvent } from "./governor/acquire-options.js";
export { currentPriority, withPriority } from "./governor/context.js";
export { Governor } from "./governor/governor.js";
export type { CallContext, StreamOptions } from "./governor/stream.js";
