/**
 * The config behind `sluice serve --demo`: the embedded simulated fleet (DESIGN §3) with a shared
 * GPU group, a path route for OCR and open auth on loopback. It goes through {@link parseConfig}
 * like any file, so the demo can never run on a config a file could not.
 */
import { parse } from "yaml";
import { type GatewayConfig, parseConfig } from "./schema.js";

/**
 * The demo config as YAML (shown in `docs/config.md`). The pod URLs are placeholders:
 * {@link demoConfig} replaces each model's pods with the simulators it started, keeping the
 * settings of the first pod listed here.
 */
export const DEMO_CONFIG_YAML = `\
# sluice serve --demo: three simulated models behind one gateway, open on loopback only.
listen: 127.0.0.1:8080
store: memory
admission: { max_concurrency: 64 }
models:
  - name: demo-chat
    max_concurrent_requests: 16
    queue_limit: 32
    queue_timeout_s: 10
    pods:
      - { url: "http://127.0.0.1:9101", max_inflight: 8, gpu_group: demo-gpu }
      - { url: "http://127.0.0.1:9102", max_inflight: 8, gpu_group: demo-gpu }
  - name: demo-embed
    pods:
      - { url: "http://127.0.0.1:9111", max_inflight: 16, gpu_group: demo-gpu }
  - name: demo-ocr
    adaptive: { floor: 1 }         # a 4-slot pod can still be halved twice
    pods:
      - { url: "http://127.0.0.1:9121", max_inflight: 4 }
routes:
  - { match: /ocr/, model: demo-ocr }
gpu_groups:
  demo-gpu: { max_inflight: 20 }   # chat (16) + embed (16) share one GPU that carries 20
`;

/** Pod base URLs of the simulated fleet, by model. */
export interface DemoFleet {
  readonly chat: readonly string[];
  readonly embed: readonly string[];
  readonly ocr: readonly string[];
}

const MODEL_OF: Readonly<Record<keyof DemoFleet, string>> = {
  chat: "demo-chat",
  embed: "demo-embed",
  ocr: "demo-ocr",
};

/**
 * The validated demo config for the given simulator URLs.
 *
 * @throws ConfigError when a URL is not an http(s) URL or a list is empty.
 */
export function demoConfig(fleet: DemoFleet, options: { listen?: string | number } = {}): GatewayConfig {
  const doc = parse(DEMO_CONFIG_YAML) as {
    listen: unknown;
    models: { name: string; pods: Record<string, unknown>[] }[];
  };
  for (const [kind, modelName] of Object.entries(MODEL_OF) as [keyof DemoFleet, string][]) {
    const model = doc.models.find((m) => m.name === modelName)!;
    const template = model.pods[0]!;
    model.pods = fleet[kind].map((url) => ({ ...template, url }));
  }
  if (options.listen !== undefined) doc.listen = options.listen;
  return parseConfig(doc, "demo config");
}
