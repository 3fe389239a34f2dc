/** The simulator's public surface, for the gateway's demo, the load runner and tests. */
export { type AnswerOptions, expectedAnswer } from "./answer.js";
export {
  DEMO_BASE_PORT,
  DEMO_FLEET,
  demoFleet,
  demoFleetUrls,
  type FleetPod,
  type FleetSpec,
  type SimFleet,
  startFleet,
} from "./fleet.js";
export { type MachineMember, SimMachine, type SimMachineOptions } from "./machine.js";
export {
  renderMetrics,
  renderSimMetrics,
  SIM_METRICS,
  type SimMetricValues,
  type SimOwnMetricValues,
  VLLM_METRICS,
} from "./metrics.js";
export { contentKey, SIM_CREATED_S, simEmbedding, simText, simTokens, type Usage } from "./openai.js";
export {
  type ResolvedSimOptions,
  resolveSimOptions,
  SIM_DEFAULTS,
  type SimOptions,
  type SimOverflow,
  type SimProfile,
} from "./options.js";
export { isSimProfileName, SIM_PROFILES, type SimProfileName } from "./profiles.js";
export { AUTH_HISTORY, type SimServer, type SimStats, startSim } from "./server.js";
