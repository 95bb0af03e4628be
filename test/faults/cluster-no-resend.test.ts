/**
 * "A 503 means outcome unknown: a command in flight when the connection
 * dropped is never resent behind the caller's back" (docs/operations.md, "Reliability") —
 * on a Redis Cluster too, where ioredis would otherwise retry a command whose
 * node connection closed against the refreshed slot table.
 *
 * The master owning the mute's slot is paused for writes (CLIENT PAUSE WRITE),
 * so the mute script waits inside Redis, not yet run; then boardline's
 * connection to that master is killed (CLIENT KILL ID) and the pause lifted.
 * The write never ran. A client that resent it would run it now and answer as
 * if nothing happened; boardline's store must fail the call instead, and the
 * write must stay absent.
 */
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, test } from "vitest";
import { silentLogger } from "../../src/log.js";
import { keySchema } from "../../src/store/schema/keys.js";
import { createRedisStore, type RedisStore } from "../../src/store/redis/store.js";
import { eventually } from "../harness/eventually.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import { uniquePrefix } from "../harness/redis-url.js";
import { sleep } from "../harness/sleep.js";

let cluster: RedisClusterHandle;
let store: RedisStore;
const prefix = uniquePrefix("no-resend");
beforeAll(async () => {
  cluster = await startRedisCluster(3);
  store = createRedisStore({ mode: "cluster", nodes: cluster.seeds }, { keyPrefix: prefix, logger: silentLogger() });
  await store.waitUntilReady();
  await store.ping();
});
afterAll(async () => {
  await store?.close();
  await cluster?.stop();
});

test("a mute in flight when its master's connection drops fails, and is not run behind the caller's back", async () => {
  const [project, channel] = ["p", "no-resend"];
  const change = { project, channel, uid: "u", mute: true, by: "tester", at: Date.now() };
  const admin = await masterOf(keySchema(prefix).pstnMute(project, channel));
  try {
    await store.setMute({ ...change, uid: "warm-up" }); // the script is loaded, the connection up
    await admin.call("CLIENT", "PAUSE", "10000", "WRITE");
    const outcome = store.setMute(change).then(
      () => "answered 200",
      (e: unknown) => e,
    );
    // The script has reached the master and waits there, not run.
    let waiting: string | undefined;
    await eventually(
      async () => {
        waiting = scriptClientId(String(await admin.call("CLIENT", "LIST")));
        return waiting !== undefined;
      },
      3000,
      "the mute script waiting on the paused master",
    );
    await admin.call("CLIENT", "KILL", "ID", waiting ?? "");
    await admin.call("CLIENT", "UNPAUSE");

    expect(await outcome).toBeInstanceOf(Error);
    await sleep(500); // longer than any retry delay ioredis would use
    expect(await store.getMuteState(project, channel)).toEqual({ "warm-up": true });
    expect(await store.getMuteEvents(project, channel, 10)).toHaveLength(1);
  } finally {
    await admin.call("CLIENT", "UNPAUSE").catch(() => {});
    admin.disconnect();
  }
});

/** A connection to the master that serves `key`'s slot. */
async function masterOf(key: string): Promise<Redis> {
  for (const node of cluster.nodes) {
    const admin = new Redis(node.url, { maxRetriesPerRequest: 1 });
    const slot = Number(await admin.call("CLUSTER", "KEYSLOT", key));
    const ranges = (await admin.call("CLUSTER", "SLOTS")) as Array<[number, number, [string, number]]>;
    const owner = ranges.find(([from, to]) => slot >= from && slot <= to)?.[2][1];
    if (owner === node.port) return admin;
    admin.disconnect();
  }
  throw new Error(`no master serves ${key}`);
}

/** The id of the client whose current command is a script (EVALSHA or EVAL), if any. */
function scriptClientId(clientList: string): string | undefined {
  const line = clientList.split("\n").find((l) => / cmd=eval(sha)? /.test(l));
  return line === undefined ? undefined : /\bid=(\d+)/.exec(line)?.[1];
}
