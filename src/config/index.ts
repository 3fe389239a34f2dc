/**
 * The gateway configuration: YAML or JSON → validated, normalized {@link GatewayConfig}, with its
 * warnings. Reference: `docs/config.md`.
 */

export { DEFAULTS } from "../core/defaults.js";
export { assertUpstreamKeys } from "./checks.js";
export { DEMO_CONFIG_YAML, type DemoFleet, demoConfig } from "./demo.js";
export { ConfigErrors } from "./issues.js";
export { loadConfigFile, loadConfigText, resolveConfigPath } from "./load.js";
export type {
  AccountConfig,
  AdaptiveConfig,
  AdminKeyConfig,
  AdmissionConfig,
  AdmissionMode,
  AuthConfig,
  BreakerConfig,
  ClientKeyConfig,
  ConfigWarning,
  GatewayConfig,
  GpuGroupConfig,
  LogLevel,
  ModelConfig,
  ParseOptions,
  PodConfig,
  RouteConfig,
  StoreConfig,
} from "./schema.js";
export { parseConfig } from "./schema.js";
export { parseDuration, parseSize } from "./units.js";
