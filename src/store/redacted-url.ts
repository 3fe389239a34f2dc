/**
 * Fleet store URLs as they may be shown: one rule for every URL form (one server, Sentinel,
 * Cluster), the one `redis-connection.ts` applies to its own errors.
 */
export { redactStoreUrl as redactedUrl } from "./redis-connection.js";
