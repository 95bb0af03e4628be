/**
 * Authenticated before any work: a caller without a valid credential is
 * answered from its request's headers alone — no body read, no Redis command.
 * Real servers on loopback, real clients that announce a body and never send
 * it (a raw socket for HTTP/1.1, node:http2 for HTTP/2 and gRPC): only a
 * server that answers before reading can answer at all. The Redis commands
 * are counted from outside, by the Redis server's own `INFO commandstats`,
 * on a redis-server of this file's own (the shared one serves other files).
 */
import { createHmac, randomBytes } from "node:crypto";
import http2 from "node:http2";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { h2connect, parseResponses, raw } from "../harness/http-clients.js";
import { postJson } from "../harness/http.js";
import { type RedisServerHandle, startRedisServer } from "../harness/redis-server.js";
import { muteBody } from "../harness/request-bodies.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";

/** Every answer here must come well within this, though the announced body never does. */
const ANSWER_WITHIN_MS = 1_000;
const SECRET = new Uint8Array(randomBytes(32));
/** No poll and no look for due tasks while the test counts: the follower's schedule is a minute apart. */
const MINUTE = { firstPollMs: 60_000, maxPollMs: 60_000, tickMs: 60_000 };
const HOOK_PATH = "/v1/whiteboard/conversion-webhook/";
/** The token's fault is in the message (src/auth/jwt.ts); the shape and the code are the contract's. */
const UNAUTHENTICATED_JSON = { error: { code: 401, message: expect.any(String) } };
const BAD_SIG_JSON = { error: { code: 401, message: "the webhook signature is missing or wrong" } };
const BAD_TOKENS: readonly (string | undefined)[] = [undefined, "Bearer not-a-jwt", "Basic dXNlcjpwYXNz"];

let redisServer: RedisServerHandle;
let bl: Boardline;
let redis: Redis;

beforeAll(async () => {
  redisServer = await startRedisServer();
  bl = await startBoardline({
    redisUrl: redisServer.url,
    conversionApi: "projector",
    follow: MINUTE,
    webhooks: { secret: SECRET },
  });
  redis = new Redis(redisServer.url);
}, 30_000);
afterAll(async () => {
  redis?.disconnect();
  await bl?.close();
  await redisServer?.stop();
});

/** Commands the Redis server ran, by name, but for the INFO this count is read by. */
async function commandCounts(): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const m of (await redis.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (m[1] !== "info") counts.set(m[1] as string, Number(m[2]));
  }
  return counts;
}

/** The commands Redis ran while `act` did: a name for each, as many times as it ran. */
async function redisCommandsDuring(act: () => Promise<void>): Promise<string[]> {
  const before = await commandCounts();
  await act();
  const after = await commandCounts();
  return [...after].flatMap(([name, n]) => Array<string>(n - (before.get(name) ?? 0)).fill(name));
}

function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** HTTP/1.1: the head alone, announcing `length` body bytes that never come; the first answer, and whether the connection closed. */
async function headOnlyH1(target: string, headers: string[], length: number) {
  const conn = await raw(bl.port);
  const head = [`POST ${target} HTTP/1.1`, "Host: x", ...headers, `Content-Length: ${length}`, "", ""].join("\r\n");
  conn.socket.write(head);
  await within(ANSWER_WITHIN_MS, `POST ${target}`, conn.closed);
  const answers = parseResponses(conn.received());
  expect(answers, conn.received()).toHaveLength(1);
  return answers[0] as (typeof answers)[number];
}

/** HTTP/2: request headers with the stream left open and no DATA; the response headers, and the stream's end. */
async function headOnlyH2(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders) {
  const stream = session.request({ ":method": "POST", ...headers }, { endStream: false });
  stream.on("error", () => {});
  const closed = new Promise<number>((resolve) => stream.once("close", () => resolve(stream.rstCode ?? 0)));
  const response = await within(
    ANSWER_WITHIN_MS,
    String(headers[":path"]),
    new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once("response", resolve)),
  );
  const chunks: Buffer[] = [];
  stream.on("data", (c: Buffer) => chunks.push(c));
  const rstCode = await within(ANSWER_WITHIN_MS, "the stream to close", closed);
  return { response, body: Buffer.concat(chunks).toString("utf8"), rstCode };
}

const authHeader = (token: string | undefined) => (token === undefined ? [] : [`Authorization: ${token}`]);

describe("a JSON route answers a bad token before reading the body", () => {
  it.each(BAD_TOKENS)("HTTP/1.1, %s: 401 within 1 s with 60 000 bytes announced, connection closed", async (token) => {
    const commands = await redisCommandsDuring(async () => {
      const res = await headOnlyH1(ROUTES.mute, [...authHeader(token), "Content-Type: application/json"], 60_000);
      expect(res.status).toBe(401);
      expect(JSON.parse(res.body)).toEqual(UNAUTHENTICATED_JSON);
      expect(res.headers["www-authenticate"]).toBe('Bearer realm="boardline"');
      expect(res.headers.connection).toBe("close");
    });
    expect(commands).toEqual([]);
  });

  it("HTTP/2: 401 within 1 s, the unread stream reset without error, the session still serving", async () => {
    const session = await h2connect(bl.url);
    try {
      const commands = await redisCommandsDuring(async () => {
        for (const token of BAD_TOKENS) {
          const { response, body, rstCode } = await headOnlyH2(session, {
            ":path": ROUTES.mute,
            "content-type": "application/json",
            "content-length": "60000",
            ...(token === undefined ? {} : { authorization: token }),
          });
          expect(response[":status"], token).toBe(401);
          expect(JSON.parse(body), token).toEqual(UNAUTHENTICATED_JSON);
          expect(rstCode, token).toBe(http2.constants.NGHTTP2_NO_ERROR);
        }
      });
      expect(commands).toEqual([]);
      const ok = await headOnlyH2Json(session, await bl.token());
      expect(ok).toBe(200);
    } finally {
      session.destroy();
    }
  });
});

/** A whole JSON mute over the session, with a valid token: its status. */
function headOnlyH2Json(session: http2.ClientHttp2Session, token: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ":method": "POST",
      ":path": ROUTES.mute,
      "content-type": "application/json",
      authorization: `Bearer ${token}`,
    });
    stream.once("response", (h) => resolve(Number(h[":status"])));
    stream.on("error", reject);
    stream.resume();
    stream.end(JSON.stringify(muteBody(bl)));
  });
}

describe("the gRPC fast path answers a bad token before any DATA", () => {
  it("HEADERS with a bad or missing token and no DATA: UNAUTHENTICATED within 1 s, the stream reset", async () => {
    const session = await h2connect(bl.url);
    try {
      const commands = await redisCommandsDuring(async () => {
        for (const token of BAD_TOKENS) {
          const { response, rstCode } = await headOnlyH2(session, {
            ":path": RPC_PATHS.mute,
            "content-type": "application/grpc",
            te: "trailers",
            ...(token === undefined ? {} : { authorization: token }),
          });
          expect(response[":status"], token).toBe(200);
          expect(response["grpc-status"], token).toBe("16");
          expect(response["grpc-message"], token).toEqual(expect.any(String));
          expect(response["grpc-status-details-bin"], token).toBeDefined();
          expect(rstCode, token).toBe(http2.constants.NGHTTP2_NO_ERROR);
        }
      });
      expect(commands).toEqual([]);
    } finally {
      session.destroy();
    }
  });
});

describe("the conversion webhook checks its signature before reading the body", () => {
  const id = randomBytes(16).toString("base64url");
  const sig = createHmac("sha256", SECRET).update(id).digest("base64url");

  it.each([
    ["no sig", `${HOOK_PATH}${id}`, []],
    ["a wrong sig", `${HOOK_PATH}${id}?sig=${"A".repeat(43)}`, []],
    ["a wrong header sig", `${HOOK_PATH}${id}`, [`X-Boardline-Signature: ${"A".repeat(43)}`]],
    ["a wrong header sig beside a right query sig", `${HOOK_PATH}${id}?sig=${sig}`, ["X-Boardline-Signature: x"]],
  ])("%s: 401 within 1 s with 200 000 bytes announced, connection closed", async (_name, target, headers) => {
    const commands = await redisCommandsDuring(async () => {
      const res = await headOnlyH1(target, headers, 200_000);
      expect(res.status).toBe(401);
      expect(JSON.parse(res.body)).toEqual(BAD_SIG_JSON);
      expect(res.headers.connection).toBe("close");
    });
    expect(commands).toEqual([]);
  });

  it("the signature in X-Boardline-Signature is taken like the query's", async () => {
    const res = await fetch(`${bl.url}${HOOK_PATH}${id}`, {
      method: "POST",
      headers: { "x-boardline-signature": sig },
      body: "{}",
    });
    expect(res.status).toBe(204);
  });
});

describe("the count sees this server's calls", () => {
  it("a mute with a valid token runs Redis commands", async () => {
    const token = await bl.token();
    const commands = await redisCommandsDuring(async () => {
      expect((await postJson(bl, ROUTES.mute, muteBody(bl), { token })).status).toBe(200);
    });
    expect(commands.length).toBeGreaterThan(0);
  });
});
