/**
 * `boardline_calls_total` counts every call exactly once, whichever layer
 * answered it: the pipeline (success, validation, auth, service errors) or
 * connect-es itself, for a body it could not decode after the caller was
 * authenticated (Connect, gRPC-Web, and gRPC with the JSON codec, which the
 * fast path leaves to connect-es).
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { closeSession, h1, h2, h2connect } from "../../harness/http-clients.js";
import { eventually } from "../../harness/eventually.js";
import { postJson } from "../../harness/http.js";
import { convertBody } from "../../harness/request-bodies.js";
import { ROUTES, RPC_PATHS } from "../../harness/routes.js";
import { sleep } from "../../harness/sleep.js";

let bl: Boardline;
let token: string;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory" });
  token = await bl.token();
});
afterAll(async () => {
  await bl.close();
});

/** The counter's value for Mute over `protocol` with `code` (0 when the series does not exist). */
async function calls(protocol: string, code: string): Promise<number> {
  const text = (await h1(bl.url, "/metrics")).body;
  const line = text
    .split("\n")
    .find(
      (l) =>
        l.startsWith("boardline_calls_total{") &&
        l.includes('rpc="Mute"') &&
        l.includes(`protocol="${protocol}"`) &&
        l.includes(`code="${code}"`),
    );
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

/**
 * Runs `send`, then returns by how much each named series grew. (A call is
 * counted when its response closes on the server, which can be a moment after
 * the client has it: read until something moved, for at most half a second.)
 */
async function growth(series: ReadonlyArray<[string, string]>, send: () => Promise<unknown>): Promise<number[]> {
  const read = () => Promise.all(series.map(([p, c]) => calls(p, c)));
  const before = await read();
  await send();
  const deadline = Date.now() + 500;
  for (;;) {
    const grew = (await read()).map((n, i) => n - (before[i] ?? 0));
    if (grew.some((n) => n !== 0) || Date.now() > deadline) return grew;
    await sleep(20);
  }
}

const auth = () => ({ authorization: `Bearer ${token}` });
const GARBAGE = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]);

test("Connect: a body that does not decode is counted once, as 611", async () => {
  const grew = await growth(
    [
      ["connect", "611"],
      ["connect", "500"],
    ],
    async () => {
      const res = await h1(bl.url, RPC_PATHS.mute, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/proto" },
        body: GARBAGE,
      });
      expect(res.status).toBe(400);
    },
  );
  expect(grew).toEqual([1, 0]);
});

test("Connect JSON: a body that is not JSON is counted once, as 611", async () => {
  const grew = await growth([["connect", "611"]], async () => {
    const res = await h1(bl.url, RPC_PATHS.mute, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/json" },
      body: "{nope",
    });
    expect(res.status).toBe(400);
  });
  expect(grew).toEqual([1]);
});

test("gRPC-Web: a message that does not decode is counted once, as 611", async () => {
  const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, GARBAGE.length]), GARBAGE]);
  const grew = await growth([["grpc-web", "611"]], async () => {
    const res = await h1(bl.url, RPC_PATHS.mute, {
      method: "POST",
      headers: { ...auth(), "content-type": "application/grpc-web+proto" },
      body: frame,
    });
    expect(res.status).toBe(200);
  });
  expect(grew).toEqual([1]);
});

test("gRPC with the JSON codec (connect-es, not the fast path): counted once, as 611", async () => {
  const json = Buffer.from("{nope");
  const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, json.length]), json]);
  const session = await h2connect(bl.url);
  try {
    const grew = await growth([["grpc", "611"]], async () => {
      const res = await h2(session, RPC_PATHS.mute, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/grpc+json", te: "trailers" },
        body: frame,
      });
      expect(res.status).toBe(200);
    });
    expect(grew).toEqual([1]);
  } finally {
    await closeSession(session);
  }
});

test("calls the pipeline already counted are not counted again", async () => {
  const grew = await growth(
    [
      ["connect", "ok"],
      ["connect", "401"],
      ["connect", "611"],
    ],
    async () => {
      // Success: counted by the pipeline.
      const ok = await h1(bl.url, RPC_PATHS.mute, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/json" },
        body: JSON.stringify({ uid: "m1", passphrase: bl.world.hostPassphrase, mute: true }),
      });
      expect(ok.status).toBe(200);
      // No token, undecodable body: refused at the gate, counted there, body never read.
      const anon = await h1(bl.url, RPC_PATHS.mute, {
        method: "POST",
        headers: { "content-type": "application/proto" },
        body: GARBAGE,
      });
      expect(anon.status).toBe(401);
      // Decodes but breaks a proto rule: counted by the pipeline's validation.
      const invalid = await h1(bl.url, RPC_PATHS.mute, {
        method: "POST",
        headers: { ...auth(), "content-type": "application/json" },
        body: JSON.stringify({ uid: "", passphrase: bl.world.hostPassphrase, mute: true }),
      });
      expect(invalid.status).toBe(400);
    },
  );
  expect(grew).toEqual([1, 1, 1]);
});

test("every conversion poll the follower makes is counted, with how late it began", async () => {
  const polls = async () => {
    const line = (await h1(bl.url, "/metrics")).body
      .split("\n")
      .find((l) => l.startsWith("boardline_conversion_poll_lateness_seconds_count"));
    return Number(line?.slice(line.lastIndexOf(" ") + 1) ?? Number.NaN);
  };
  const before = await polls();
  expect(before).toBeGreaterThanOrEqual(0);
  const res = await postJson(bl, ROUTES.convert, convertBody(bl), { token });
  expect(res.status).toBe(200);
  // The harness's follower polls a new task 100 ms after its creation, then every 200 ms at most.
  await eventually(async () => (await polls()) >= before + 2, 5_000, "two polls counted");
});
