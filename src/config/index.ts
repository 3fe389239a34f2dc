/**
 * The gateway configuration (DESIGN §3.4): YAML or JSON → validated, normalized
 * {@link GatewayConfig}. Reference: `docs/config.md`.
 */
export { DEMO_CONFIG_YAML, type DemoFleet, demoConfig } from "./demo.js";
export { ConfigErrors } from "./issues.js";
export { loadConfigFile, loadConfigText, resolveConfigPath } from "./load.js";
export { DEFAULTS } from "./raw.js";
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
  FleetConfig,
  GatewayConfig,
  GpuGroupConfig,
  LogLevel,
  ModelConfig,
  OnStoreError,
  ParseOptions,
  PodConfig,
  RouteConfig,
  StoreConfig,
} from "./schema.js";
export { parseConfig } from "./schema.js";
export { parseDuration, parseSize } from "./units.js";
