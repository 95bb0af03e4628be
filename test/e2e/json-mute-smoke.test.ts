import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { parseBody, postJson } from "../harness/http.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline();
});
afterAll(async () => {
  await bl.close();
});

test("a JSON mute is stored with its event", async () => {
  const res = await postJson(bl, ROUTES.mute, muteBody(bl, { mute: false }));
  expect(res.status).toBe(200);
  expect(parseBody(res)).toEqual({ uid: "u-1", mute: false });
  expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toEqual({ "u-1": false });
  const events = await bl.store.getMuteEvents(bl.world.project, bl.world.channel);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ uid: "u-1", mute: false, by: "tester" });
});
