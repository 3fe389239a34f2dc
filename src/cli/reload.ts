/**
 * `sluice serve --config FILE` on SIGHUP: read FILE again and apply it to the running gateway in
 * place (`Gateway.reload`), as HAProxy and Envoy reload. An invalid file (or one that changes what
 * only a restart can: `listen`, `store`) keeps the old config and says why on stderr, naming the
 * key; the process never exits on SIGHUP (Node's default for it is to exit, code 129).
 */
import { loadConfigFile } from "../config/load.js";
import { isSluiceError } from "../core/errors.js";
import type { Gateway } from "../gateway/gateway.js";

/**
 * Reloads `path` into `gateway` on every SIGHUP, one reload at a time (a signal that arrives
 * during one runs after it, so the file's last state wins). With no file (`--demo`) a SIGHUP
 * only says there is nothing to reload. Returns the function that stops reloading (for the
 * drain): later SIGHUPs are still caught, so one arriving while the gateway drains cannot kill it.
 */
export function reloadOnSighup(
  gateway: Gateway,
  path: string | undefined,
  write: (line: string) => void = (line) => process.stderr.write(`${line}\n`),
): () => void {
  let queue = Promise.resolve();
  let stopped = false;
  const onSighup = () => {
    if (stopped) write("sluice: SIGHUP: draining; the config is not reloaded");
    else queue = queue.then(() => reload(gateway, path, write));
  };
  process.on("SIGHUP", onSighup);
  return () => {
    stopped = true;
  };
}

/** One reload: never throws; says what happened. */
export async function reload(
  gateway: Gateway,
  path: string | undefined,
  write: (line: string) => void,
): Promise<void> {
  if (path === undefined) {
    write("sluice: SIGHUP: nothing to reload (no --config file); the config is unchanged");
    return;
  }
  try {
    const config = await loadConfigFile(path, { env: process.env });
    gateway.reload(config);
    write(`sluice: SIGHUP: reloaded ${path} (models: ${config.models.map((m) => m.name).join(", ")})`);
    for (const warning of config.warnings) write(`  warning:   ${warning}`);
  } catch (error) {
    const why = isSluiceError(error) ? error.message : String((error as Error)?.stack ?? error);
    write(`sluice: SIGHUP: ${path} not reloaded, the running config is unchanged:\n${why}`);
  }
}
