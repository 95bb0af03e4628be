/**
 * Server-sent events honour backpressure (src/server/json/event-stream.ts): a
 * client that stops reading while 50 000 events are produced leaves them in
 * the watch's bounded queue, not in the socket's buffer — so the watch is
 * ended as documented (UNAVAILABLE once `maxQueue` events wait), the server
 * holds only what the socket and the queue bound, and other watchers are
 * served meanwhile.
 */
import net from "node:net";
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { openSse } from "../../harness/sse.js";

const WATCH_ROUTE = "/v1/channel/pstn/events:watch";
const EVENTS = 50_000;
const MAX_QUEUE = 2_000;
const STALLED = "stalled room";
const LIVELY = "lively room";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory", pstnWatch: { maxQueue: MAX_QUEUE } });
});
afterAll(async () => {
  await bl.close();
});

/** Opens an SSE watch of `channel` on a raw socket; resolves once the stream's headers are in. */
async function rawWatch(channel: string): Promise<{ socket: net.Socket; received: () => string }> {
  const body = JSON.stringify({ channel_ids: [channel] });
  const socket = net.connect({ host: "127.0.0.1", port: bl.port });
  socket.setNoDelay(true);
  const chunks: Buffer[] = [];
  socket.on("data", (c: Buffer) => chunks.push(c));
  const received = () => Buffer.concat(chunks).toString("utf8");
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  socket.write(
    `POST ${WATCH_ROUTE} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${await bl.gatewayToken()}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
  for (let i = 0; i < 200 && !received().includes("\r\n\r\n"); i++) await new Promise((r) => setTimeout(r, 10));
  expect(received()).toMatch(/^HTTP\/1\.1 200/);
  return { socket, received };
}

function mute(channel: string, uid: string) {
  return bl.store.setMute({ project: bl.world.project, channel, uid, mute: true, by: "test", at: Date.now() });
}

test("an SSE client that stops reading is ended after maxQueue waiting events, and nothing piles up in its socket", async () => {
  const stalled = await rawWatch(STALLED);
  stalled.socket.pause(); // reads nothing from now on
  const lively = await openSse(`${bl.url}${WATCH_ROUTE}`, {
    token: await bl.gatewayToken(),
    body: { channel_ids: [LIVELY] },
  });

  for (let i = 0; i < EVENTS; i += 500) {
    await Promise.all(Array.from({ length: 500 }, (_, j) => mute(STALLED, `u${i + j}`)));
    await new Promise((resolve) => setImmediate(resolve));
  }

  // Another watcher is served at once meanwhile.
  const sent = performance.now();
  await mute(LIVELY, "lively-1");
  const event = await lively.next();
  expect(event?.data).toMatchObject({ channel_id: LIVELY, uid: "lively-1", mute: true });
  expect(performance.now() - sent).toBeLessThan(1_000);
  lively.close();

  // The stalled client now reads what was kept for it: the events the socket held, then the end.
  const ended = new Promise<void>((resolve) => stalled.socket.once("end", () => resolve()));
  stalled.socket.resume();
  const late = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error("the stalled stream was never ended")), 15_000).unref(),
  );
  await Promise.race([ended, late]);
  const text = stalled.received();
  const delivered = text.match(/^data: \{/gm)?.length ?? 0;
  expect(text).toContain("event: error");
  expect(text).toMatch(/event: error\ndata: \{"error":\{"code":503/);
  // Without backpressure every one of the 50 000 would have waited in the server's socket buffer.
  expect(delivered).toBeLessThan(EVENTS / 2);
  stalled.socket.destroy();
}, 60_000);
