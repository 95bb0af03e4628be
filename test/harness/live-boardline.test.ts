/**
 * The levers the example tests pull work as they say: the seeded channel mutes
 * with its host passphrase, Redis down answers 503 and up again 200 with the
 * channel intact, a cut ends an open watch, and the guess limit answers 429
 * with a Retry-After within its window.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { GUESS_LIMIT, GUESS_WINDOW_SECONDS, type LiveBoardline, startLiveBoardline } from "./live-boardline.js";

let live: LiveBoardline;
beforeAll(async () => {
  live = await startLiveBoardline();
});
afterAll(() => live?.stop());

const mute = (passphrase: string, token = live.tokens.user) =>
  fetch(`${live.url}/v1/channel/pstn/mute`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ uid: "pstn-1", passphrase, mute: true }),
  });

test("the seeded channel mutes; its variables are the ones the examples read", async () => {
  expect((await mute(live.hostPassphrase)).status).toBe(200);
  expect(Object.keys(live.env).sort()).toEqual([
    "BOARDLINE_ATTENDEE_PASSPHRASE",
    "BOARDLINE_CHANNEL",
    "BOARDLINE_GATEWAY_TOKEN",
    "BOARDLINE_HOST_PASSPHRASE",
    "BOARDLINE_TOKEN",
    "BOARDLINE_URL",
  ]);
});

test("Redis down answers 503; up again, the channel is still there", async () => {
  live.redisDown();
  expect((await mute(live.hostPassphrase)).status).toBe(503);
  await live.redisUp();
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = (await mute(live.hostPassphrase)).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  expect(status).toBe(200);
});

test("a cut ends an open watch", async () => {
  const res = await fetch(`${live.url}/v1/channel/pstn/events:watch`, {
    method: "POST",
    headers: { authorization: `Bearer ${live.tokens.gateway}`, "content-type": "application/json" },
    body: JSON.stringify({ channel_ids: [live.channel] }),
  });
  expect(res.status).toBe(200);
  const reader = res.body?.getReader();
  live.cutConnections();
  await expect(
    (async () => {
      for (;;) if ((await reader?.read())?.done) return "ended";
    })(),
  ).rejects.toThrow();
});

test("wrong passphrases past the limit answer 429 with a Retry-After within the window", async () => {
  const token = await live.token({ subject: "guesser" });
  for (let i = 0; i < GUESS_LIMIT; i++) expect((await mute("wrong-passphrase", token)).status).toBe(403);
  const refused = await mute(live.hostPassphrase, token);
  expect(refused.status).toBe(429);
  const after = Number(refused.headers.get("retry-after"));
  expect(after).toBeGreaterThanOrEqual(1);
  expect(after).toBeLessThanOrEqual(GUESS_WINDOW_SECONDS);
});
