// @ts-check
/**
 * The telemetry stream (`/api/telemetry/stream`, one snapshot a second) and an honest account of
 * it: `live` while snapshots arrive, `stale` when none came for a while, `down` when the
 * connection failed (with why, when the gateway says), and a reconnect with backoff (1, 2, 4, …
 * 10 s) that the page can also ask for at once.
 */

/** No snapshot for this long (the stream sends one a second) and the stream counts as stalled. */
const STALE_AFTER_MS = 3500;
const MAX_BACKOFF_MS = 10_000;

/**
 * @typedef {"connecting" | "live" | "stale" | "down"} StreamState
 * @typedef {{ state: StreamState, detail: string, retryAt: number | null, drops: number }} StreamStatus
 */

export class TelemetryStream {
  /** @type {EventSource | null} */
  #source = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #watchdog;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #retry;
  #failures = 0;
  #drops = 0;
  /** @type {StreamStatus} */
  status = { state: "connecting", detail: "", retryAt: null, drops: 0 };

  /**
   * @param {string} url
   * @param {(snapshot: any) => void} onSnapshot
   * @param {(status: StreamStatus) => void} onStatus
   */
  constructor(url, onSnapshot, onStatus) {
    this.url = url;
    this.onSnapshot = onSnapshot;
    this.onStatus = onStatus;
  }

  /** Opens the stream (again, at once, when it is down). */
  connect() {
    clearTimeout(this.#retry);
    this.#source?.close();
    this.#set("connecting", "");
    const source = new EventSource(this.url);
    this.#source = source;
    source.onmessage = (event) => {
      if (source !== this.#source) return;
      let snapshot;
      try {
        snapshot = JSON.parse(event.data);
      } catch {
        this.#fail("the stream sent something that is not a snapshot");
        return;
      }
      this.#failures = 0;
      this.#arm();
      if (this.status.state !== "live") this.#set("live", "");
      this.onSnapshot(snapshot);
    };
    // EventSource retries on its own only for some failures and says nothing about why: take over.
    source.onerror = () => {
      if (source === this.#source) this.#fail("the connection to the gateway was lost");
    };
    this.#arm();
  }

  #arm() {
    clearTimeout(this.#watchdog);
    this.#watchdog = setTimeout(() => {
      if (this.status.state === "live") {
        this.#set("stale", `no update for ${STALE_AFTER_MS / 1000} s`);
        this.#arm();
      } else this.#fail(`no update for ${((STALE_AFTER_MS * 2) / 1000).toFixed(0)} s`);
    }, STALE_AFTER_MS);
  }

  /** @param {string} why */
  #fail(why) {
    clearTimeout(this.#watchdog);
    this.#source?.close();
    this.#source = null;
    this.#failures++;
    this.#drops++;
    const delay = Math.min(1000 * 2 ** (this.#failures - 1), MAX_BACKOFF_MS);
    this.#set("down", why, Date.now() + delay);
    this.#retry = setTimeout(() => this.connect(), delay);
    // Ask the gateway why, when it answers at all: a 401 is not the same as a dead gateway.
    void diagnose().then((reason) => {
      if (reason && this.status.state === "down") this.#set("down", reason, this.status.retryAt);
    });
  }

  /**
   * @param {StreamState} state
   * @param {string} detail
   * @param {number | null} [retryAt]
   */
  #set(state, detail, retryAt = null) {
    this.status = { state, detail, retryAt, drops: this.#drops };
    this.onStatus(this.status);
  }
}

/** Why the stream failed, from a plain request to the snapshot route. @returns {Promise<string>} */
async function diagnose() {
  try {
    const res = await fetch("/api/telemetry/lanes", { cache: "no-store" });
    if (res.status === 401)
      return "the gateway asks for an admin key (admin routes are open on loopback only)";
    if (!res.ok) return `the gateway answered ${res.status}`;
    return "";
  } catch {
    return "the gateway is unreachable";
  }
}
