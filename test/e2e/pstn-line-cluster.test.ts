/**
 * The phone line end to end (helpers/line-suite.ts) on a real Redis Cluster of
 * three masters: each report and command is one script on the channel's slot,
 * the sweep's list is a slot of its own.
 */
import { afterAll, beforeAll, describe } from "vitest";
import { startBoardline } from "../harness/boardline.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import { lineSuite } from "./helpers/line-suite.js";

let cluster: RedisClusterHandle;
beforeAll(async () => {
  cluster = await startRedisCluster(3);
});
afterAll(async () => {
  await cluster?.stop();
});

describe("on a Redis Cluster", () =>
  lineSuite((o) => startBoardline({ ...o, connection: { mode: "cluster", nodes: cluster.seeds } })));
