/**
 * The success paths of both operations over every protocol on the one port —
 * the JSON routes (fetch over HTTP/1.1, and HTTP/2), Connect (HTTP/1.1 and HTTP/2, binary and JSON),
 * gRPC-Web and gRPC — each checked where it lands: the Redis records (raw
 * reads, documented key names), a conversion's record both as ConvertFile
 * queued it and as the submitter handed it to the backend, and the request
 * the conversion backend saw. Also the inputs the JSON routes must accept:
 * boundary values, unknown fields, lowerCamelCase names.
 */
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson, postJsonH2 } from "../harness/http.js";
import { conversionKey, eventsKey, muteKey, rawRedis } from "../harness/redis-state.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { clients, convertRequest, muteRequest, PROTOCOLS, type ProtocolName, transport } from "./helpers/rpc.js";

const SEVEN_DAYS = 7 * 24 * 60 * 60;

let bl: Boardline;
let redis: Redis;
beforeAll(async () => {
  // The follower waits a minute before its first poll: these tests read the record as the submitter left it.
  bl = await startBoardline({ follow: { firstPollMs: 60_000 } });
  redis = rawRedis(bl);
});
afterAll(async () => {
  redis?.disconnect();
  await bl?.close();
});

type Protocol = "json" | "json h2" | ProtocolName;
const ALL: readonly Protocol[] = ["json", "json h2", ...PROTOCOLS];

let counter = 0;
const unique = (label: string) => `${label}-${++counter}`;

/** One mute over `protocol`; returns the answer as plain JSON-ish values. */
async function mute(
  protocol: Protocol,
  body: Record<string, unknown>,
  token: string,
): Promise<{ uid: string; mute: boolean }> {
  if (protocol === "json" || protocol === "json h2") {
    const res = await (protocol === "json" ? postJson : postJsonH2)(bl, ROUTES.mute, body, { token });
    expect(res.status, res.text).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^application\/json/);
    const json = JSON.parse(res.text) as Record<string, unknown>;
    // Exactly the documented keys, `mute: false` included.
    expect(Object.keys(json).sort()).toEqual(["mute", "uid"]);
    return json as { uid: string; mute: boolean };
  }
  const { pstn } = clients(transport(bl, protocol));
  const res = await pstn.mute(muteRequest(body), { headers: { authorization: `Bearer ${token}` } });
  // Explicit presence: the reply always carries the state, false included.
  expect(res.mute, "mute is present in the reply").toBeTypeOf("boolean");
  return { uid: res.uid, mute: res.mute === true };
}

interface ConvertAnswer {
  task_uuid: string;
  status: string;
  reused: boolean;
  queue_position: number;
}

/** One ConvertFile over `protocol`; returns the answer in its JSON spelling. */
async function convert(protocol: Protocol, body: Record<string, unknown>, token: string): Promise<ConvertAnswer> {
  if (protocol === "json" || protocol === "json h2") {
    const res = await (protocol === "json" ? postJson : postJsonH2)(bl, ROUTES.convert, body, { token });
    expect(res.status, res.text).toBe(200);
    const json = JSON.parse(res.text) as Record<string, unknown>;
    // Exactly the documented keys, `reused: false` included.
    expect(Object.keys(json).sort()).toEqual(["queue_position", "reused", "status", "task_uuid"]);
    return json as unknown as ConvertAnswer;
  }
  const { whiteboard } = clients(transport(bl, protocol));
  const res = await whiteboard.convertFile(convertRequest(body), { headers: { authorization: `Bearer ${token}` } });
  return { task_uuid: res.taskUuid, status: res.status, reused: res.reused, queue_position: res.queuePosition };
}

/** The answer to a request no identical one came before, in an empty queue. */
const QUEUED_FIRST = {
  task_uuid: expect.stringMatching(/^[0-9a-f]{32}$/),
  status: "Queued",
  reused: false,
  queue_position: 1,
};

/** The backend requests that carried `resource`, once the submitter has sent one (it submits after the answer). */
async function sentWith(resource: string) {
  const carrying = () =>
    bl.simulator.requests().filter((r) => (r.body as { resource?: string } | undefined)?.resource === resource);
  await eventually(() => carrying().length > 0, 5_000, `the backend request for ${resource}`);
  return carrying();
}

/**
 * Waits for the project's queue to be empty: a task leaves it only after its submission is recorded,
 * so the next test's request is again the first in its queue.
 */
async function drained(project: string): Promise<void> {
  const queue = `${bl.prefix}proj:{${project}}:conv-queue`;
  await eventually(async () => (await redis.zcard(queue)) === 0, 5_000, "the queue to drain");
}

/**
 * The task's record once its submission is complete: the backend's uuid recorded, the task due for
 * its first poll and out of its project's queue (the last step).
 */
async function submittedRecord(uuid: string, project: string): Promise<Record<string, string>> {
  await eventually(
    async () => (await redis.hget(conversionKey(bl, uuid), "backend_uuid")) !== null,
    5_000,
    "the submission to be recorded",
  );
  await drained(project);
  return redis.hgetall(conversionKey(bl, uuid));
}

/** Checks the mute hash field and the newest stream entry of the world channel. */
async function expectMuteStored(uid: string, muted: boolean, by: string, from: number, to: number) {
  expect(await redis.hget(muteKey(bl), uid)).toBe(muted ? "1" : "0");
  const [entry] = await redis.xrevrange(eventsKey(bl), "+", "-", "COUNT", 1);
  expect(entry).toBeDefined();
  const [, flat] = entry as [string, string[]];
  const fields: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i] as string] = flat[i + 1] as string;
  expect(Object.keys(fields).sort()).toEqual(["at", "by", "mute", "uid"]);
  expect(fields).toMatchObject({ uid, mute: muted ? "1" : "0", by });
  const at = Number(fields["at"]);
  expect(at).toBeGreaterThanOrEqual(from);
  expect(at).toBeLessThanOrEqual(to);
}

describe.each(ALL)("%s", (protocol) => {
  test("mute, then unmute: the answer, the hash field and one stream entry each", async () => {
    const uid = unique(`uid ${protocol}`);
    const by = unique("host");
    const token = await bl.token(bl.world.project, by);
    const eventsBefore = await redis.xlen(eventsKey(bl));

    let t0 = Date.now();
    expect(await mute(protocol, muteBody(bl, { uid, mute: true }), token)).toEqual({ uid, mute: true });
    await expectMuteStored(uid, true, by, t0, Date.now());

    t0 = Date.now();
    expect(await mute(protocol, muteBody(bl, { uid, mute: false }), token)).toEqual({ uid, mute: false });
    await expectMuteStored(uid, false, by, t0, Date.now());
    expect(await redis.xlen(eventsKey(bl))).toBe(eventsBefore + 2);
    // The admin view agrees with the raw one.
    expect((await bl.store.getMuteState(bl.world.project, bl.world.channel))[uid]).toBe(false);
  });

  test("convert (access/secret key project, with a scale): the record as queued, as submitted, its TTL, the backend request", async () => {
    const by = unique("presenter");
    const token = await bl.token(bl.world.project, by);
    const resource = `https://docs.example.com/${unique("deck")}.pptx?x=1&y=2`;
    // The backend answers late, so the record is read before the submission is recorded.
    bl.simulator.setFault({ kind: "slow", delayMs: 800, times: 1, operation: "create" });
    const t0 = Date.now();
    const answer = await convert(protocol, convertBody(bl, { resource_url: resource, conversion_scale: 1.5 }), token);
    const t1 = Date.now();
    expect(answer).toEqual(QUEUED_FIRST);
    const key = conversionKey(bl, answer.task_uuid);

    // As accepted: Queued, the request kept with it (its URL sealed), not yet due for a poll.
    const queued = await redis.hgetall(key);
    // The submitter may already be asking the backend: it marks the attempt first.
    const marks = ["attempts", "submitting_at"];
    expect(
      Object.keys(queued)
        .filter((k) => !marks.includes(k))
        .sort(),
    ).toEqual([
      "api",
      "by",
      "channel",
      "created_at",
      "pages",
      "percent",
      "project",
      "resource",
      "reuse_key",
      "scale",
      "status",
      "type",
      "updated_at",
    ]);
    expect(queued).toMatchObject({
      project: bl.world.project,
      channel: bl.world.channel,
      type: "static",
      status: "Queued",
      by,
      percent: "0",
      pages: "[]",
      scale: "1.5",
    });
    expect(queued.attempts ?? "1").toBe("1");
    expect(queued.reuse_key).toMatch(/^[0-9a-f]{64}$/);
    // A signed URL is a credential: sealed at rest.
    expect(queued.resource).not.toContain("docs.example.com");
    expect(Number(queued.created_at)).toBeGreaterThanOrEqual(t0);
    expect(Number(queued.created_at)).toBeLessThanOrEqual(t1);
    expect(queued.updated_at).toBe(queued.created_at);
    expect(await redis.zscore(`${bl.prefix}conv-due`, answer.task_uuid)).toBeNull();
    let ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(SEVEN_DAYS - 60);
    expect(ttl).toBeLessThanOrEqual(SEVEN_DAYS);

    // As submitted: the backend's uuid and first status, the request dropped.
    const record = await submittedRecord(answer.task_uuid, bl.world.project);
    expect(Object.keys(record).sort()).toEqual([
      "api",
      "attempts",
      "backend_uuid",
      "by",
      "channel",
      "created_at",
      "pages",
      "percent",
      "project",
      "reuse_key",
      "scale",
      "status",
      "submitted_at",
      "type",
      "updated_at",
    ]);
    expect(record).toMatchObject({
      project: bl.world.project,
      channel: bl.world.channel,
      type: "static",
      status: "Waiting",
      by,
      api: "legacy",
      percent: "0",
      pages: "[]",
      attempts: "1",
      created_at: queued.created_at,
    });
    expect(record.updated_at).toBe(record.submitted_at);
    expect(Number(record.submitted_at)).toBeGreaterThanOrEqual(Number(record.created_at));
    // Due for its first poll CONVERSION_POLL_FIRST_MS (here 60 s) after its submission.
    const due = await redis.zscore(`${bl.prefix}conv-due`, answer.task_uuid);
    expect(Number(due)).toBe(Number(record.submitted_at) + 60_000);
    ttl = await redis.ttl(key);
    expect(ttl).toBeGreaterThan(SEVEN_DAYS - 60);
    expect(ttl).toBeLessThanOrEqual(SEVEN_DAYS);

    const sent = await sentWith(resource);
    expect(sent).toHaveLength(1);
    const [req] = sent;
    expect(req?.method).toBe("POST");
    expect(req?.path).toBe("/v5/services/conversion/tasks");
    expect(req?.headers["token"]).toMatch(/^NETLESSSDK_[A-Za-z0-9_-]+$/);
    expect(req?.headers["region"]).toBe("us-sv");
    expect(req?.headers["content-type"]).toMatch(/^application\/json/);
    expect(req?.body).toEqual({ resource, type: "static", scale: 1.5, preview: false });
    // The backend knows the task by its own uuid, which the record keeps beside ours.
    expect(record.backend_uuid).not.toBe(answer.task_uuid);
    expect(bl.simulator.creates().find((c) => c.resource === resource)?.uuid).toBe(record.backend_uuid);
  });

  test("convert (SDK token project, dynamic, no scale): scale is not sent", async () => {
    const token = await bl.token(bl.world.otherProject, "other-host");
    const resource = `http://files.example.org/${unique("doc")}.pdf`;
    const answer = await convert(
      protocol,
      convertBody(bl, { resource_url: resource, passphrase: bl.world.otherHostPassphrase, conversion_type: "dynamic" }),
      token,
    );
    expect(answer).toEqual(QUEUED_FIRST);
    const record = await submittedRecord(answer.task_uuid, bl.world.otherProject);
    expect(record).toMatchObject({
      project: bl.world.otherProject,
      channel: bl.world.otherChannel,
      type: "dynamic",
      by: "other-host",
      status: "Waiting",
    });
    expect(record).not.toHaveProperty("scale");
    const [req] = await sentWith(resource);
    expect(req?.headers["token"]).toBe(bl.world.sdkToken);
    expect(req?.headers["region"]).toBe("sg");
    expect(req?.body).toEqual({ resource, type: "dynamic", preview: false });
  });
});

describe("JSON routes: inputs that must be accepted", () => {
  test.each<[string, Record<string, unknown>, Record<string, unknown>]>([
    ["conversion_scale exactly 0.1", { conversion_scale: 0.1 }, { scale: 0.1 }],
    ["conversion_scale exactly 3", { conversion_scale: 3 }, { scale: 3 }],
    ["conversion_scale as a JSON string", { conversion_scale: "2.5" }, { scale: 2.5 }],
    ["conversion_scale absent", {}, {}],
    ["an attendee passphrase", { passphrase: "attendee" }, {}],
    ["a URL of 2048 characters", { resource_url: "long" }, {}],
    ["an upper-case scheme", { resource_url: "HTTPS://Docs.Example.com/A.PDF" }, {}],
    ["unknown fields (ignored)", { extra: { nested: [1, 2] }, preview: true, scale: 9, resourceURL: 3 }, {}],
    [
      "lowerCamelCase names",
      {
        resource_url: undefined,
        conversion_type: undefined,
        resourceUrl: "https://a.example/x.pptx",
        conversionType: "static",
        conversionScale: 0.5,
      },
      { resource: "https://a.example/x.pptx", type: "static", scale: 0.5 },
    ],
  ])("fileconvert: %s", async (name, over, expected) => {
    // A URL of its own, unless the case is about the URL: an identical earlier request would be reused, not sent.
    const body = convertBody(bl, { resource_url: `https://docs.example.com/${unique("input")}.pptx`, ...over });
    if (body["passphrase"] === "attendee") body["passphrase"] = bl.world.attendeePassphrase;
    if (body["resource_url"] === "long") body["resource_url"] = `https://docs.example.com/${"a".repeat(2048 - 25)}`;
    const res = await postJson(bl, ROUTES.convert, body);
    expect(res.status, `${name}: ${res.text}`).toBe(200);
    expect(JSON.parse(res.text)).toEqual(QUEUED_FIRST);
    const resource = (body["resource_url"] ?? body["resourceUrl"]) as string;
    const [req] = await sentWith(resource);
    const sent = req?.body as Record<string, unknown>;
    expect(sent["preview"]).toBe(false);
    expect(sent).toMatchObject(expected);
    if (!("scale" in expected)) expect(sent).not.toHaveProperty("scale");
    const { task_uuid } = JSON.parse(res.text) as { task_uuid: string };
    expect(await bl.store.conversions.getConversion(task_uuid)).toMatchObject({
      project: bl.world.project,
      channel: bl.world.channel,
    });
    await drained(bl.world.project);
  });

  test.each<[string, Record<string, unknown>]>([
    ["a uid of 255 characters", { uid: "u".repeat(255) }],
    ["a uid of 255 non-BMP characters", { uid: "😀".repeat(255) }],
    ["a uid with spaces, quotes and non-ASCII", { uid: ` "Zoë" + 1 (555) 0100 ` }],
    ["unknown fields (ignored)", { uid: "unknown-fields", extra: 1, mute_all: true, Mute: false }],
    ["mute: false", { uid: "unmuted", mute: false }],
  ])("mute: %s", async (_name, over) => {
    const body = muteBody(bl, over);
    const res = await postJson(bl, ROUTES.mute, body);
    expect(res.status, res.text).toBe(200);
    expect(JSON.parse(res.text)).toEqual({ uid: body["uid"], mute: body["mute"] });
    expect(await redis.hget(muteKey(bl), body["uid"] as string)).toBe(body["mute"] ? "1" : "0");
  });

  test("mute: a host passphrase of 256 characters", async () => {
    const passphrase = "ü".repeat(256);
    await bl.store.createChannel({ project: bl.world.project, channel: "long-pass", hostPassphrase: passphrase });
    const res = await postJson(bl, ROUTES.mute, { uid: "x", passphrase, mute: true });
    expect(res.status, res.text).toBe(200);
    expect(await redis.hget(muteKey(bl, bl.world.project, "long-pass"), "x")).toBe("1");
  });

  test("a query string on the route is ignored", async () => {
    const res = await postJson(bl, `${ROUTES.mute}?x=1`, muteBody(bl, { uid: "with-query" }));
    expect(res.status, res.text).toBe(200);
  });
});
