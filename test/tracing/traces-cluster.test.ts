/**
 * Redis command spans on a Redis Cluster: the real process with tracing on,
 * its store on a 3-master Cluster. ioredis sends each command on the
 * connection of the node owning its slot; the span is made there, a child of
 * the call, and names that node.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { postJson } from "../harness/http.js";
import { type RedisClusterHandle, startRedisCluster } from "../harness/redis-topologies.js";
import { ROUTES } from "../harness/routes.js";
import { newTraceparent, startTracedService, type TracedService, traceOf } from "./traced-service.js";

let cluster: RedisClusterHandle;
let svc: TracedService;
beforeAll(async () => {
  cluster = await startRedisCluster(3);
  svc = await startTracedService(
    { mode: "cluster", nodes: cluster.seeds },
    { REDIS_CLUSTER_NODES: cluster.seeds.map((n) => `${n.host}:${n.port}`).join(",") },
  );
});
afterAll(async () => {
  await svc?.close();
  await cluster?.stop();
});

test("a JSON mute on a Cluster: its Redis commands are children of the call span, each naming its node", async () => {
  const tp = newTraceparent();
  const body = { uid: "u-cluster", passphrase: svc.world.hostA, mute: true };
  const answer = await postJson(svc, ROUTES.mute, body, {
    token: await svc.token(),
    headers: { traceparent: tp.header },
  });
  expect(answer.status).toBe(200);

  const spans = await traceOf(svc.receiver, tp.traceId, (s) => {
    const call = s.find((c) => c.name === "channel.v1.PstnService/Mute");
    return s.some((c) => c.parentSpanId === call?.spanId && (c.name === "EVAL" || c.name === "EVALSHA"));
  });
  const call = spans.find((s) => s.name === "channel.v1.PstnService/Mute");
  expect(call?.parentSpanId).toBe(tp.parentId);
  const redis = spans.filter((s) => s.parentSpanId === call?.spanId);
  expect(redis.map((s) => s.name)).toContain("HGETALL");
  const ports = new Set(cluster.nodes.map((n) => n.port));
  for (const s of redis) {
    expect(s.attributes["db.system.name"]).toBe("redis");
    expect(ports.has(Number(s.attributes["server.port"])), `${s.name} names a node of the Cluster`).toBe(true);
  }
});
