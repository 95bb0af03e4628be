/**
 * The watcher processes of bench/scenarios/watch-fanout.mjs, seen from the bench: `n`
 * child processes (bench/lib/watcher-process.mjs, on this process's CPU), the
 * watches of each open spread over them in turn (watch k to process k mod n),
 * their answers put back in the watches' order, and the arrival of a probe's
 * event at every watcher of its channel, whichever process holds it.
 */
import { fork } from "node:child_process";
import { cpuTicks } from "./processes.mjs";

export class WatcherProcesses {
  #children;
  #next = 0;
  #pending = new Map();
  /** uid → { waiting: processes still to answer, times, done } (or the answers that came first). */
  #arrivals = new Map();
  /** Per process: channel → how many of its watches watch it (of the watches open now). */
  /** @type {Map<string, number>[]} */
  #perChannel;

  constructor(n) {
    this.#children = Array.from({ length: n }, () => {
      const child = fork(new URL("./watcher-process.mjs", import.meta.url), [], { stdio: "inherit" });
      child.on("message", (m) => this.#onMessage(m));
      return child;
    });
    this.#perChannel = this.#children.map(() => new Map());
    process.once("exit", () => {
      for (const child of this.#children) child.kill("SIGKILL");
    });
  }

  get pids() {
    return this.#children.map((c) => c.pid);
  }

  /** CPU time of every watcher process so far, in clock ticks. */
  cpuTicks() {
    return this.#children.reduce((n, c) => n + cpuTicks(c.pid), 0);
  }

  #onMessage(m) {
    if (m.op === "arrived") {
      const a = this.#arrivals.get(m.uid) ?? { waiting: undefined, times: [], answers: 0 };
      this.#arrivals.set(m.uid, a);
      a.times.push(...m.times);
      a.answers++;
      if (a.waiting !== undefined && a.answers === a.waiting) a.done();
      return;
    }
    const p = this.#pending.get(m.id);
    this.#pending.delete(m.id);
    if (m.error !== undefined) p?.reject(new Error(`watcher process: ${m.error}`));
    else p?.resolve(m);
  }

  #ask(child, op, payload = {}) {
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      child.send({ op, id, ...payload });
    });
  }

  /**
   * Opens `watches` ([{ protocol, channel, after }]) on `target` (sseUrl, grpcUrl, watchJwt, waitGrpc),
   * spread over the processes; resolves with each process's { opened, failed, ms }.
   */
  open(target, watches) {
    /** @type {{ channel: string }[][]} */
    const shares = this.#children.map(() => []);
    watches.forEach((w, k) => {
      shares[k % shares.length]?.push(w);
    });
    shares.forEach((share, i) => {
      const perChannel = this.#perChannel[i];
      if (perChannel === undefined) return;
      for (const { channel } of share) perChannel.set(channel, (perChannel.get(channel) ?? 0) + 1);
    });
    const { sseUrl, grpcUrl, watchJwt: jwt, waitGrpc } = target;
    return Promise.all(
      this.#children.map((child, i) =>
        this.#ask(child, "open", { sseUrl, grpcUrl, jwt, waitGrpc, watches: shares[i] }),
      ),
    );
  }

  /**
   * Resolves with the receipt times of the event of `uid` (a mute of `channel`) at every watcher
   * of the channel, once all have it. Call it before the mute is sent.
   */
  arrival(uid, channel) {
    const a = this.#arrivals.get(uid) ?? { times: [], answers: 0 };
    a.waiting = this.#perChannel.filter((m) => m.has(channel)).length;
    this.#arrivals.set(uid, a);
    const arrived = new Promise((resolve) => {
      a.done = resolve;
    });
    if (a.answers === a.waiting) a.done();
    return arrived.then(() => {
      this.#arrivals.delete(uid);
      return a.times;
    });
  }

  /** Forgets a uid whose event did not reach every watcher in time. */
  forget(uid) {
    this.#arrivals.delete(uid);
  }

  /** Each open watch's event count, in the order the watches were given to `open`. */
  async counts() {
    const answers = await Promise.all(this.#children.map((c) => this.#ask(c, "counts")));
    const n = answers.reduce((s, a) => s + a.counts.length, 0);
    const counts = Array.from(
      { length: n },
      (_, k) => answers[k % answers.length].counts[Math.floor(k / answers.length)],
    );
    return { counts };
  }

  /**
   * What went wrong at the watchers since the last call: errors, events out of order, and why
   * watches were opened again ({ reason: count }).
   */
  async problems() {
    const answers = await Promise.all(this.#children.map((c) => this.#ask(c, "problems")));
    const reconnects = {};
    for (const a of answers) {
      for (const [why, n] of Object.entries(a.reconnects)) reconnects[why] = (reconnects[why] ?? 0) + n;
    }
    return {
      errors: answers.flatMap((a) => a.errors),
      outOfOrder: answers.reduce((s, a) => s + a.outOfOrder, 0),
      reconnects,
    };
  }

  /** Ends every watch. */
  async close() {
    await Promise.all(this.#children.map((c) => this.#ask(c, "close")));
    this.#perChannel = this.#children.map(() => new Map());
    this.#arrivals.clear();
  }

  stop() {
    for (const child of this.#children) child.disconnect();
  }
}
