/**
 * A Redis outage is logged once when it starts and once when it ends — not
 * once per failed call with a stack — and every 503 is counted in
 * `boardline_calls_total`.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { capturingLogger } from "../harness/capturing-logger.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";

const FAILED_CALLS = 40;

let redis: RedisServerHandle;
let bl: Boardline;
const log = capturingLogger();
beforeAll(async () => {
  redis = await startRedisServer({ durable: true }); // the seeded records survive the restart
  bl = await startBoardline({ redisUrl: redis.url, logger: log.logger });
});
afterAll(async () => {
  await bl?.close();
  await redis?.stop();
});

const metric503 = async () => {
  const text = await (await fetch(`${bl.url}/metrics`)).text();
  const line = text.split("\n").find((l) => /^boardline_calls_total\{.*rpc="Mute".*code="503"/.test(l));
  return line === undefined ? 0 : Number(line.split(" ").pop());
};

test("an outage is two log lines, however many calls fail during it; the 503s are counted", async () => {
  const token = await bl.token();
  let answered503 = 0;
  const mute = async (uid: string) => {
    const res = await postJson(bl, ROUTES.mute, muteBody(bl, { uid, mute: true }), { token });
    if (res.status === 503) answered503++;
    return res;
  };
  expect((await mute("before")).status).toBe(200);
  const before = log.lines().length;

  await redis.stop();
  for (let i = 0; i < FAILED_CALLS; i++) expect((await mute(`down-${i}`)).status).toBe(503);
  await redis.restart();
  await eventually(async () => (await mute("after")).status === 200, 5_000, "a mute to succeed again");

  const during = log.lines().slice(before);
  const loud = during.filter((l) => typeof l.level === "number" && l.level >= 40);
  expect(loud.length).toBeGreaterThanOrEqual(1); // the outage is logged…
  expect(loud.length, JSON.stringify(loud.map((l) => l.msg))).toBeLessThanOrEqual(2); // …once (maybe twice), not per call
  expect(during.some((l) => l.msg === "Redis connection back")).toBe(true);
  const shown = during.filter((l) => typeof l.level === "number" && l.level >= 30); // what LOG_LEVEL=info shows
  expect(shown.filter((l) => JSON.stringify(l).includes('"stack"')).length).toBeLessThanOrEqual(2);
  expect(answered503).toBeGreaterThanOrEqual(FAILED_CALLS);
  expect(await metric503()).toBe(answered503);
});
