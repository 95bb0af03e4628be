/**
 * The series an on-call reads, moved through a real server on a real Redis:
 * watches (open, opened, ended, delivery delay), conversions (the backend's
 * answers, the time to Finished), attacks (wrong passphrases, the guessing
 * limit's refusals, refused tokens by reason) and the process (build, ready).
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { JwtAuthenticator, mintToken } from "../../../src/auth/jwt.js";
import { MissLimitGuard } from "../../../src/services/passphrase-guard.js";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { eventually } from "../../harness/eventually.js";
import { parseBody, postJson } from "../../harness/http.js";
import { readSeries, scrape, seriesValue } from "../../harness/metrics-scrape.js";
import { convertBody, muteBody } from "../../harness/request-bodies.js";
import { ROUTES } from "../../harness/routes.js";
import { openSse } from "../../harness/sse.js";

const WATCH_ROUTE = "/v1/channel/pstn/events:watch";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({
    conversionApi: "projector",
    guard: (store) => new MissLimitGuard(store, { attempts: 2, windowSeconds: 60 }),
  });
});
afterAll(async () => {
  await bl.close();
});

const series = (name: string, labels: Record<string, string> = {}) => readSeries(bl.url, name, labels);

describe("watches", () => {
  test("a mute-event watch is counted open, opened and ended; its event's delay is observed", async () => {
    const labels = { kind: "pstn_events", protocol: "json" };
    const [open, opened, ended, delayed] = [
      await series("boardline_watches_open", labels),
      await series("boardline_watches_opened_total", labels),
      await series("boardline_watches_ended_total", labels),
      await series("boardline_watch_delivery_delay_seconds_count", { kind: "pstn_events" }),
    ];
    const watch = await openSse(`${bl.url}${WATCH_ROUTE}`, {
      token: await bl.gatewayToken(),
      body: { channel_ids: [bl.world.channel] },
    });
    expect(watch.status).toBe(200);
    expect(await series("boardline_watches_open", labels)).toBe(open + 1);
    expect(await series("boardline_watches_opened_total", labels)).toBe(opened + 1);
    expect((await postJson(bl, ROUTES.mute, muteBody(bl))).status).toBe(200);
    expect((await watch.next())?.data).toMatchObject({ uid: "u-1" });
    expect(await series("boardline_watch_delivery_delay_seconds_count", { kind: "pstn_events" })).toBe(delayed + 1);
    watch.close();
    await eventually(async () => (await series("boardline_watches_ended_total", labels)) === ended + 1);
    expect(await series("boardline_watches_open", labels)).toBe(open);
  });

  test("a conversion watch ends with its task; the changes after its first message are delayed, not the first", async () => {
    const labels = { kind: "conversion", protocol: "json" };
    const ended = await series("boardline_watches_ended_total", labels);
    const delayed = await series("boardline_watch_delivery_delay_seconds_count", { kind: "conversion" });
    const uuid = parseBody<{ task_uuid: string }>(await postJson(bl, ROUTES.convert, convertBody(bl))).task_uuid;
    const res = await fetch(`${bl.url}/v1/whiteboard/fileconvert/${uuid}/watch`, {
      headers: { authorization: `Bearer ${await bl.token()}` },
    });
    const messages = (await res.text()).split("\n").filter((l) => l.startsWith("data:"));
    expect(messages.at(-1)).toContain('"status":"Finished"');
    await eventually(async () => (await series("boardline_watches_ended_total", labels)) === ended + 1);
    const grew = (await series("boardline_watch_delivery_delay_seconds_count", { kind: "conversion" })) - delayed;
    expect(grew).toBe(messages.length - 1);
  });
});

describe("conversions", () => {
  test("the backend's answers are counted by operation and outcome; a Finished task's time since acceptance", async () => {
    const finished = "boardline_conversion_time_to_finished_seconds_count";
    const before = await scrape(bl.url);
    const res = await postJson(bl, ROUTES.convert, convertBody(bl, { resource_url: "https://example.com/t.pdf" }));
    const uuid = parseBody<{ task_uuid: string }>(res).task_uuid;
    await eventually(async () => (await bl.store.conversions.getConversion(uuid))?.status === "Finished", 10_000);
    // Counted once the follower's save has returned (after the record turned Finished).
    await eventually(async () => (await series(finished)) > seriesValue(before, finished), 2_000, "Finished counted");
    const after = await scrape(bl.url);
    const grew = (name: string, labels: Record<string, string> = {}) =>
      seriesValue(after, name, labels) - seriesValue(before, name, labels);
    const answers = "boardline_conversion_backend_answers_total";
    expect(grew(answers, { operation: "create", outcome: "ok" })).toBe(1);
    expect(grew(answers, { operation: "query", outcome: "ok" })).toBeGreaterThanOrEqual(1);
    expect(grew(answers, { outcome: "error" })).toBe(0);
  });

  test("a cancel the backend answers is counted", async () => {
    const res = await postJson(bl, ROUTES.convert, convertBody(bl, { resource_url: "https://example.com/c.pdf" }));
    const uuid = parseBody<{ task_uuid: string }>(res).task_uuid;
    const cancels = () => series("boardline_conversion_backend_answers_total", { operation: "cancel" });
    const before = await cancels();
    await eventually(async () => (await bl.store.conversions.getConversion(uuid))?.backendUuid !== undefined, 5_000);
    const cancelled = await postJson(bl, `${ROUTES.convert}/${uuid}`, undefined, { method: "DELETE" });
    expect(cancelled.status).toBe(200);
    expect(await cancels()).toBe(before + 1);
  });
});

describe("attacks", () => {
  test("wrong passphrases are counted, and the calls the guessing limit refuses", async () => {
    const token = await bl.token(bl.world.project, "guesser");
    const misses = await series("boardline_passphrase_misses_total");
    const refusals = await series("boardline_guess_limit_refusals_total");
    const wrong = () => postJson(bl, ROUTES.mute, muteBody(bl, { passphrase: "not the passphrase" }), { token });
    expect((await wrong()).status).toBe(403);
    expect((await wrong()).status).toBe(403);
    expect((await wrong()).status).toBe(429);
    expect(await series("boardline_passphrase_misses_total")).toBe(misses + 2);
    expect(await series("boardline_guess_limit_refusals_total")).toBe(refusals + 1);
  });

  test("refused tokens are counted by reason", async () => {
    const { secret, world } = bl;
    const reason = (r: string) => series("boardline_token_refusals_total", { reason: r });
    const cases: Array<[string, () => Promise<string>, string]> = [
      ["expired", () => mintToken({ secret, project: world.project, subject: "t", ttlSeconds: -600 }), ROUTES.mute],
      [
        "bad_signature",
        () => mintToken({ secret: new Uint8Array(32), project: world.project, subject: "t", ttlSeconds: 60 }),
        ROUTES.mute,
      ],
      ["malformed", async () => "not.a.jwt", ROUTES.mute],
      ["missing_scope", () => bl.token(), WATCH_ROUTE],
    ];
    for (const [why, token, route] of cases) {
      const before = await reason(why);
      const res = await postJson(bl, route, route === WATCH_ROUTE ? { channel_ids: ["c"] } : muteBody(bl), {
        token: await token(),
      });
      expect([401, 403]).toContain(res.status);
      expect(await reason(why), why).toBe(before + 1);
    }
  });
});

describe("tokens refused by the issuer and audience a deployment requires", () => {
  const secret = new Uint8Array(32).fill(7);
  let strict: Boardline;
  beforeAll(async () => {
    strict = await startBoardline({
      store: "memory",
      secret,
      authenticator: new JwtAuthenticator({
        key: { kind: "secret", secret },
        algorithms: ["HS256"],
        projectClaim: "project_id",
        issuer: "meetings",
        audience: "boardline",
      }),
    });
  });
  afterAll(async () => {
    await strict?.close();
  });

  test.each([
    ["wrong_audience", { issuer: "meetings", audience: "someone-else" }],
    ["other", { issuer: "someone-else", audience: "boardline" }],
  ])("%s is counted", async (why, claims) => {
    const before = await readSeries(strict.url, "boardline_token_refusals_total", { reason: why });
    const token = await mintToken({ secret, project: strict.world.project, subject: "t", ttlSeconds: 60, ...claims });
    expect((await postJson(strict, ROUTES.mute, muteBody(strict), { token })).status).toBe(401);
    expect(await readSeries(strict.url, "boardline_token_refusals_total", { reason: why })).toBe(before + 1);
  });
});

describe("the process", () => {
  test("build_info names the version and Node; ready says what /readyz says", async () => {
    const text = await scrape(bl.url);
    const build = { version: "1.0.0", revision: "unknown", node: process.version };
    expect(seriesValue(text, "boardline_build_info", build)).toBe(1);
    expect(seriesValue(text, "boardline_ready")).toBe(1);
    bl.server.unready();
    expect(await series("boardline_ready")).toBe(0);
  });
});
