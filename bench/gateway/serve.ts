/**
 * sluice's gateway in its own process for the gateway benchmark: load the config file, listen on
 * a free loopback port, report the URL over IPC. The same as `sluice serve --config FILE` (the
 * Gateway from src/, run through tsx), without the CLI's banner and signal-drain.
 *
 *   node --import tsx bench/gateway/serve.ts CONFIG_FILE
 *
 * SIGTERM closes the gateway and exits 0, so `--cpu-prof` writes its profile.
 */
import { loadConfigFile } from "../../src/config/load.js";
import { Gateway } from "../../src/gateway/gateway.js";
import type { ReadyMessage } from "./protocol.js";

const path = process.argv[2];
if (path === undefined) throw new Error("usage: serve.ts CONFIG_FILE");
const config = await loadConfigFile(path);
const gateway = new Gateway({ config });
const url = await gateway.listen(0, "127.0.0.1");
process.send?.({ type: "ready", urls: [url] } satisfies ReadyMessage);

let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  const hard = setTimeout(() => process.exit(0), 3000);
  void gateway.close().finally(() => {
    clearTimeout(hard);
    process.exit(0);
  });
};
process.on("SIGTERM", stop);
process.on("disconnect", stop);
