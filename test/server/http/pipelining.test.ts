/**
 * HTTP/1.1 pipelining behind a refused request: once the server has answered
 * 413 with `Connection: close`, nothing else on that connection may run
 * (RFC 9112 §9.6) — a mute pipelined behind the refused body must not reach
 * the store, whether the refused body was chunked or had a Content-Length.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { parseResponses, raw } from "../../harness/http-clients.js";
import { ROUTES } from "../../harness/routes.js";

const MAX_BODY = 65_536; // MAX_BODY_BYTES' default

let bl: Boardline;
let token: string;
beforeAll(async () => {
  bl = await startBoardline({ store: "redis", maxBodyBytes: MAX_BODY });
  token = await bl.token();
});
afterAll(async () => {
  await bl.close();
});

function muteRequest(uid: string): string {
  const body = JSON.stringify({ uid, passphrase: bl.world.hostPassphrase, mute: true });
  return (
    `POST ${ROUTES.mute} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

const oversize = JSON.stringify({ uid: "big", passphrase: "p", mute: true, pad: "x".repeat(MAX_BODY) });
const head = () =>
  `POST ${ROUTES.mute} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\n`;

const refusedBodies: Array<[string, () => string]> = [
  [
    "chunked",
    () =>
      `${head()}Transfer-Encoding: chunked\r\n\r\n` +
      `${Buffer.byteLength(oversize).toString(16)}\r\n${oversize}\r\n0\r\n\r\n`,
  ],
  ["Content-Length", () => `${head()}Content-Length: ${Buffer.byteLength(oversize)}\r\n\r\n${oversize}`],
];

test.each(refusedBodies)(
  "a mute pipelined behind a 413 (%s body) is neither run nor answered",
  async (kind, refused) => {
    const uid = `pipelined-${kind}`;
    for (let round = 0; round < 5; round++) {
      const conn = await raw(bl.port);
      conn.socket.write(refused() + muteRequest(uid));
      await conn.closed;
      const answers = parseResponses(conn.received());
      expect(answers.map((a) => a.status)).toEqual([413]);
      expect(answers[0]?.headers.connection).toBe("close");
    }
    // The pipelined mute never reached the store.
    const state = await bl.store.getMuteState(bl.world.project, bl.world.channel);
    expect(state[uid]).toBeUndefined();
  },
);

/** Writes `text` in pieces of `piece` bytes, a loop turn or two apart; the last piece carries `tail` too. */
async function writeInPieces(socket: import("node:net").Socket, text: string, piece: number, tail: string) {
  const bytes = Buffer.from(text, "latin1");
  for (let at = 0; at < bytes.length; at += piece) {
    if (socket.destroyed) return;
    const last = at + piece >= bytes.length;
    const chunk = bytes.subarray(at, at + piece);
    socket.write(last ? Buffer.concat([chunk, Buffer.from(tail, "latin1")]) : chunk);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}

// The refused body arrives in many TCP segments, and its last bytes share a write with the mute behind
// it: the 413 is answered before that segment comes. Whatever the segmentation, the mute must not run.
const bigOversize = JSON.stringify({ uid: "big", passphrase: "p", mute: true, pad: "x".repeat(MAX_BODY * 40) });
const bigRefused: Array<[string, () => string]> = [
  [
    "chunked",
    () =>
      `${head()}Transfer-Encoding: chunked\r\n\r\n` +
      `${Buffer.byteLength(bigOversize).toString(16)}\r\n${bigOversize}\r\n0\r\n\r\n`,
  ],
  ["Content-Length", () => `${head()}Content-Length: ${Buffer.byteLength(bigOversize)}\r\n\r\n${bigOversize}`],
];
const pieceSizes = [97, 1_000, 4_096, 16_384];

test.each(bigRefused)(
  "a mute in the same segment as the end of a refused %s body, delivered in pieces, never runs",
  async (kind, refused) => {
    const uids: string[] = [];
    await Promise.all(
      pieceSizes.flatMap((piece) =>
        [0, 1, 2].map(async (round) => {
          const uid = `segmented-${kind}-${piece}-${round}`;
          uids.push(uid);
          const conn = await raw(bl.port);
          await writeInPieces(conn.socket, refused(), piece, muteRequest(uid));
          await conn.closed;
          expect(parseResponses(conn.received()).map((a) => a.status)).toEqual([413]);
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 100)); // a mute that ran late would land by now
    const state = await bl.store.getMuteState(bl.world.project, bl.world.channel);
    expect(uids.filter((uid) => state[uid] !== undefined)).toEqual([]);
  },
);

test("well-formed pipelined requests all run, one after another, and are answered in order", async () => {
  const conn = await raw(bl.port);
  const uids = ["p-1", "p-2", "p-3"];
  conn.socket.write(`${uids.map(muteRequest).join("")}GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  await conn.closed;
  const answers = parseResponses(conn.received());
  expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
  expect(answers.slice(0, 3).map((a) => JSON.parse(a.body).uid)).toEqual(uids);
  const state = await bl.store.getMuteState(bl.world.project, bl.world.channel);
  expect(uids.map((u) => state[u])).toEqual([true, true, true]);
});
