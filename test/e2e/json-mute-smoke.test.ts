import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline();
});
afterAll(async () => {
  await bl.close();
});

test("a JSON mute is stored with its event", async () => {
  const res = await fetch(`${bl.url}/v1/channel/pstn/mute`, {
    method: "POST",
    headers: { authorization: `Bearer ${await bl.token()}`, "content-type": "application/json" },
    body: JSON.stringify({ uid: "u-1", passphrase: bl.world.hostPassphrase, mute: false }),
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ uid: "u-1", mute: false });
  expect(await bl.store.getMuteState(bl.world.project, bl.world.channel)).toEqual({ "u-1": false });
  const events = await bl.store.getMuteEvents(bl.world.project, bl.world.channel);
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ uid: "u-1", mute: false, by: "tester" });
});
