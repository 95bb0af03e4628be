/**
 * Redis goes away while a conversion is being followed: the follower's polls
 * fail quietly meanwhile, it picks the task up again once Redis is back, and
 * the task's end is recorded and announced exactly once.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

let redis: RedisServerHandle;
let bl: Boardline;
beforeAll(async () => {
  redis = await startRedisServer({ durable: true }); // what Redis acknowledged survives the kill
  bl = await startBoardline({ redisUrl: redis.url, conversionApi: "projector" });
});
afterAll(async () => {
  await bl?.close();
  await redis?.stop();
});

test("a Redis outage during a follow loses nothing and announces the end once", async () => {
  const res = await postJson(bl, ROUTES.convert, convertBody(bl));
  expect(res.status).toBe(200);
  const { task_uuid: uuid } = JSON.parse(res.text) as { task_uuid: string };

  redis.kill(); // the task is recorded and due; its follower now fails every poll
  await sleep(1_500);
  await redis.restart();

  const status = () =>
    bl.store.conversions.getConversion(uuid).then(
      (r) => r?.status,
      () => "the store is not back yet",
    );
  await eventually(async () => (await status()) === "Finished", 15_000, "the task to finish");
  // Saved first, announced right after (separate commands: another slot).
  const announced = async () =>
    (await bl.store.getWhiteboardEvents(bl.world.project, bl.world.channel, 100)).filter((e) => e.taskUuid === uuid);
  await eventually(async () => (await announced()).length > 0, 5_000, "the end to be announced");
  await sleep(500); // a few more follower ticks: nothing announces it again
  expect(await announced()).toHaveLength(1);
  const changes = await bl.store.conversions.readConversionChanges(uuid, "0", 100);
  expect(changes.filter((c) => c.status === "Finished")).toHaveLength(1);
}, 40_000);
