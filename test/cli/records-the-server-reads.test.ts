/**
 * The operator CLI, as operators run it: the built `node dist/src/cli/main.js` as a
 * child process against the test Redis. What it writes must be what a real
 * boardline server (same Redis, same key prefix, same JWT secret) reads.
 */
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { ensureBuilt, ROOT } from "../harness/build-dist.js";
import { eventually } from "../harness/eventually.js";
import { redisUrl, uniquePrefix } from "../harness/redis-url.js";
import { rawRedis } from "../harness/redis-state.js";
import { spawnTied } from "../harness/tied-spawn.js";
import { baseEnv, CLI, cliRunner, JWT, oneLine } from "./run-cli.js";

let bl: Boardline;
let prefix: string;
const jwtSecret = randomBytes(32).toString("hex");
const project = `cli-proj-${randomBytes(4).toString("hex")}`;
const channel = "weekly sync";
const { cli, ok } = cliRunner(() => ({ prefix, jwtSecret }));

async function post(path: string, token: string, body: object): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${bl.url}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

const mute = (token: string, passphrase: string, uid = "pstn-42", on = true) =>
  post("/v1/channel/pstn/mute", token, { uid, passphrase, mute: on });
/** A ConvertFile of a document of its own (an identical request would reuse an earlier task). */
const convert = (token: string, passphrase: string, resource = newDocument()) =>
  post("/v1/whiteboard/fileconvert", token, { resource_url: resource, passphrase, conversion_type: "static" });
const newDocument = () => `https://example.com/deck-${randomBytes(6).toString("hex")}.pdf`;

/** The request that created the task of `resource` at the backend, once the server's submitter has sent it. */
async function creationOf(resource: string) {
  const creation = () =>
    bl.simulator.requests().find((r) => r.method === "POST" && JSON.stringify(r.body).includes(resource));
  await eventually(() => creation() !== undefined, 10_000, "the submitter to create the task");
  return creation();
}

beforeAll(async () => {
  await ensureBuilt();
  prefix = uniquePrefix("cli");
  // A server that knows nothing but what the CLI writes (no seeded world), with the CLI's secret.
  // The follower waits a minute before its first poll: the tests read records as they were written.
  bl = await startBoardline({
    prefix,
    secret: new TextEncoder().encode(jwtSecret),
    seed: false,
    follow: { firstPollMs: 60_000 },
  });
}, 120_000);

afterAll(async () => {
  await bl?.close();
});

describe("records the CLI writes are what the server reads", () => {
  let token: string;
  let host: string;
  let attendee: string;

  test("token mint prints only a token, and the server accepts it", async () => {
    const out = await ok(["token", "mint", "--project", project, "--subject", "op-7", "--ttl", "10m"]);
    expect(out.endsWith("\n")).toBe(true);
    token = out.trimEnd();
    expect(token).toMatch(JWT);
    // Valid token, unknown passphrase: past authentication (403, not 401).
    expect((await mute(token, "no such passphrase")).status).toBe(403);
  });

  test("channel create --generate prints strong passphrases once; the host one mutes", async () => {
    const out = JSON.parse(await ok(["channel", "create", project, channel, "--generate", "--json"])) as Record<
      string,
      unknown
    >;
    expect(out).toMatchObject({ project, channel, roles: ["host", "attendee"] });
    host = String(out.host_passphrase);
    attendee = String(out.attendee_passphrase);
    // The domain's generator (CreateChannel's): 28 characters in groups of four, 140 bits.
    expect(host).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){6}$/);
    expect(attendee).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){6}$/);
    expect(attendee).not.toBe(host);

    expect(await mute(token, host)).toEqual({ status: 200, body: { uid: "pstn-42", mute: true } });
    // The attendee passphrase opens the channel but cannot mute.
    expect((await mute(token, attendee)).status).toBe(403);
  });

  test("mute show prints the state per uid and the last events", async () => {
    expect((await mute(token, host, "pstn-7", false)).status).toBe(200);
    const human = await ok(["mute", "show", project, channel, "--events", "5"]);
    expect(human).toMatch(/pstn-42\s+muted/);
    expect(human).toMatch(/pstn-7\s+unmuted/);
    expect(human).toContain("by op-7");
    expect(human).toContain("Last 2 events");

    const json = JSON.parse(await ok(["mute", "show", project, channel, "--events", "1", "--json"])) as {
      mute: Record<string, boolean>;
      events: Array<Record<string, unknown>>;
    };
    expect(json.mute).toEqual({ "pstn-42": true, "pstn-7": false });
    expect(json.events).toHaveLength(1);
    expect(json.events[0]).toMatchObject({ uid: "pstn-7", mute: false, by: "op-7" });
    expect(Number.isNaN(Date.parse(String(json.events[0]?.at)))).toBe(false);
  });

  test("token mint --scope pstn.gateway reads the channel by id (without the scope: 403); mute state agrees", async () => {
    const minted = JSON.parse(
      await ok(["token", "mint", "--project", project, "--subject", "gw", "--scope", "pstn.gateway", "--json"]),
    ) as { token: string; scopes: string[] };
    expect(minted.scopes).toEqual(["pstn.gateway"]);
    const byId = await post("/v1/channel/pstn/state", minted.token, { channel_id: channel });
    expect(byId.status).toBe(200);
    const state = byId.body as { channel_id: string; as_of_event_id: string; participants: unknown[] };
    expect(state).toMatchObject({
      channel_id: channel,
      participants: [
        { uid: "pstn-42", mute: true, updated_by: "op-7" },
        { uid: "pstn-7", mute: false, updated_by: "op-7" },
      ],
    });
    expect(state.as_of_event_id).toMatch(/^\d+-\d+$/);
    // The token minted without --scope: channel ids are not for it, its passphrases are.
    expect((await post("/v1/channel/pstn/state", token, { channel_id: channel })).status).toBe(403);
    expect((await post("/v1/channel/pstn/state", token, { passphrase: attendee })).body).toEqual(state);

    const cliState = JSON.parse(await ok(["mute", "state", project, channel, "--json"])) as typeof state;
    expect(cliState.as_of_event_id).toBe(state.as_of_event_id);
    // The same instants (the API may print fewer fractional digits).
    // The fields the CLI prints (the API adds each participant's line).
    const instants = (ps: unknown[]) =>
      (ps as Array<Record<string, unknown>>).map((p) => ({
        uid: p.uid,
        mute: p.mute,
        updated_by: p.updated_by,
        updated_at: Date.parse(String(p.updated_at)),
      }));
    expect(instants(cliState.participants)).toEqual(instants(state.participants));
    const human = await ok(["mute", "state", project, channel]);
    expect(human).toContain(`as of event ${state.as_of_event_id}`);
    expect(human).toMatch(/pstn-42\s+muted\s+\S+Z\s+by op-7/);
  });

  test("mute watch prints a line per mute event as it happens, until Ctrl-C (SIGINT: exit 0)", async () => {
    const child = spawnTied(process.execPath, [CLI, "mute", "watch", project, channel], {
      cwd: ROOT,
      env: baseEnv({ prefix, jwtSecret }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      // The line on stderr comes once the watch is established: every mute after it is printed.
      await eventually(() => stderr.includes("watching channel"), 10_000, "the watch to start");
      expect((await mute(token, host, "pstn-w1", true)).status).toBe(200);
      expect((await mute(token, host, "pstn-w2", false)).status).toBe(200);
      await eventually(() => stdout.trim().split("\n").length >= 2, 10_000, "two lines");
      const lines = stdout.trim().split("\n");
      expect(lines[0]).toMatch(/ {2}pstn-w1 {2}muted {2}by op-7 {2}\(\d+-\d+\)$/);
      expect(lines[1]).toMatch(/ {2}pstn-w2 {2}unmuted {2}by op-7 /);
      child.kill("SIGINT");
      expect(await closed).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
    const [first] = /\((\d+-\d+)\)/.exec(stdout.split("\n")[0] ?? "")?.slice(1) ?? [];
    // --after: from an event on, as JSON lines (a watch that then waits: stopped by the test).
    const resumed = spawnTied(
      process.execPath,
      [CLI, "mute", "watch", project, channel, "--after", first ?? "", "--json"],
      {
        cwd: ROOT,
        env: baseEnv({ prefix, jwtSecret }),
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let json = "";
    resumed.stdout.setEncoding("utf8").on("data", (d: string) => (json += d));
    try {
      await eventually(() => json.includes("\n"), 10_000, "the event after it");
      expect(JSON.parse(json.split("\n")[0] ?? "")).toMatchObject({ uid: "pstn-w2", mute: false, by: "op-7" });
    } finally {
      resumed.kill("SIGINT");
    }
  });

  test("passphrases from the environment are used and never echoed", async () => {
    const given = `env host ${randomBytes(6).toString("hex")}`;
    const out = await ok(["channel", "create", project, "second"], { env: { BOARDLINE_HOST_PASSPHRASE: given } });
    expect(out).toContain("host passphrase set");
    expect(out).not.toContain(given);
    expect((await mute(token, given)).status).toBe(200);
    // A passphrase cannot open two channels: exit 1, one line that names no channel (CreateChannel's answer).
    const clash = await cli(["channel", "create", project, "third"], { env: { BOARDLINE_HOST_PASSPHRASE: given } });
    expect(clash.code).toBe(1);
    expect(oneLine(clash.stderr)).toBe(
      "boardline: --host-passphrase: the chosen passphrase cannot be used: choose another (or leave it out to get a generated one)",
    );
    // An existing channel is refused (it used to get its passphrases replaced): `channel rotate` does that.
    const again = await cli(["channel", "create", project, "second", "--generate"]);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toBe("boardline: the project already has a channel second");
    // A weak chosen passphrase is a usage error naming the flag.
    const weak = await cli(["channel", "create", project, "fourth", "--host-passphrase", "hunter2"]);
    expect(weak.code).toBe(2);
    expect(oneLine(weak.stderr)).toBe(
      "boardline: error: --host-passphrase: must be at least 16 characters (see --help)",
    );
  });

  test("channel rotate: a generated passphrase printed once; the old one stops working", async () => {
    const old = `rotate old ${randomBytes(6).toString("hex")}`;
    await ok(["channel", "create", project, "rotating"], { env: { BOARDLINE_HOST_PASSPHRASE: old } });
    expect((await mute(token, old)).status).toBe(200);
    const out = JSON.parse(await ok(["channel", "rotate", project, "rotating", "--role", "host", "--json"])) as {
      passphrase: string;
    };
    expect(out).toMatchObject({ project, channel: "rotating", role: "host" });
    expect(out.passphrase).toMatch(/^[a-z2-9]{4}(-[a-z2-9]{4}){6}$/);
    expect((await mute(token, out.passphrase)).status).toBe(200);
    await eventually(async () => (await mute(token, old)).status === 403, 10_000, "the old passphrase to stop");
    // A chosen one is not echoed; a host-only channel has no attendee passphrase to rotate.
    const chosen = `rotate new ${randomBytes(6).toString("hex")}`;
    const human = await ok(["channel", "rotate", project, "rotating", "--role", "host", "--passphrase", chosen]);
    expect(human).not.toContain(chosen);
    const none = await cli(["channel", "rotate", project, "rotating", "--role", "attendee"]);
    expect(none.code).toBe(1);
    expect(oneLine(none.stderr)).toBe("boardline: the channel has no attendee passphrase to rotate");
    const unknown = await cli(["channel", "rotate", project, "no-such", "--role", "host"]);
    expect(oneLine(unknown.stderr)).toBe(
      `boardline: channel no-such of project ${project} not found (nothing rotated)`,
    );
  });

  test("channel show and list: through GetChannel and ListChannels, never a passphrase", async () => {
    const shown = JSON.parse(await ok(["channel", "show", project, "rotating", "--json"])) as Record<string, unknown>;
    expect(shown).toMatchObject({
      project,
      channel: "rotating",
      created_by: "cli",
      expire_time: null,
      roles: ["host"],
      participants_with_mute_state: 1,
      newest_whiteboard_event_id: "0-0",
    });
    expect(Number.isNaN(Date.parse(String(shown.created_at)))).toBe(false);
    expect(await ok(["channel", "show", project, "rotating"])).toMatch(/created\s+\S+Z by cli/);
    const page = JSON.parse(await ok(["channel", "list", project, "--page-size", "1", "--json"])) as {
      channels: Array<{ channel: string }>;
      next_page_token: string;
    };
    expect(page.channels.map((c) => c.channel)).toEqual(["rotating"]);
    expect(page.next_page_token).not.toBe("");
    const rest = JSON.parse(
      await ok([
        "channel",
        "list",
        project,
        "--page-size",
        "1",
        "--page-token",
        page.next_page_token,
        "--all",
        "--json",
      ]),
    ) as typeof page;
    expect(rest).toEqual({
      project,
      channels: [expect.objectContaining({ channel: "second" }), expect.objectContaining({ channel: "weekly sync" })],
      next_page_token: "",
    });
    expect(await ok(["channel", "list", project, "--page-size", "1"])).toContain("more: --page-token ");
  });

  test("channel create honours --expire-time, else CHANNEL_DEFAULT_TTL_HOURS", async () => {
    const at = new Date(Date.now() + 3_600_000).toISOString().replace(/\.\d+Z$/, "Z");
    const explicit = JSON.parse(
      await ok(["channel", "create", project, "timed", "--generate", "--expire-time", at, "--json"]),
    ) as Record<string, unknown>;
    expect(Date.parse(String(explicit.expire_time))).toBe(Date.parse(at));
    const before = Date.now();
    const byDefault = JSON.parse(
      await ok(["channel", "create", project, "default-ttl", "--generate", "--json"], {
        env: { CHANNEL_DEFAULT_TTL_HOURS: "2" },
      }),
    ) as Record<string, unknown>;
    const expires = Date.parse(String(byDefault.expire_time));
    expect(expires).toBeGreaterThanOrEqual(before + 2 * 3_600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 2 * 3_600_000 + 1000);
    const bad = await cli(["channel", "create", project, "x", "--generate"], {
      env: { CHANNEL_DEFAULT_TTL_HOURS: "0" },
    });
    expect(bad.code).toBe(1);
    expect(oneLine(bad.stderr)).toMatch(/^boardline: invalid configuration: CHANNEL_DEFAULT_TTL_HOURS /);
    for (const id of ["timed", "default-ttl"]) await ok(["channel", "delete", project, id]);
  });

  test("channel reindex lists a channel another writer wrote; doctor finds nothing left to repair", async () => {
    const passphrase = `direct writer ${randomBytes(6).toString("hex")}`;
    const sha = createHash("sha256").update(passphrase).digest("hex");
    const redis = rawRedis({ redisUrl: redisUrl() });
    try {
      await redis.hset(`${prefix}pass:{${sha}}`, { project, channel: "direct", role: "host" });
    } finally {
      redis.disconnect();
    }
    expect((await mute(token, passphrase)).status).toBe(200);
    const unlisted = await cli(["channel", "show", project, "direct"]);
    expect(oneLine(unlisted.stderr)).toBe(
      `boardline: channel direct of project ${project} not found (nothing to show)`,
    );
    const report = JSON.parse(await ok(["channel", "reindex", "--batch", "100", "--pause-ms", "0", "--json"])) as {
      indexed: number;
    };
    expect(report).toMatchObject({ complete: true });
    expect(report.indexed).toBeGreaterThanOrEqual(1);
    expect(JSON.parse(await ok(["channel", "show", project, "direct", "--json"]))).toMatchObject({
      channel: "direct",
      created_at: null,
      roles: ["host"],
    });
    const doctor = JSON.parse(await ok(["channel", "doctor", "--project", project, "--json"])) as Record<
      string,
      unknown
    >;
    expect(doctor).toMatchObject({ project, findings: [] });
    expect(await ok(["channel", "doctor", "--project", project])).toContain("nothing to repair");
    await ok(["channel", "delete", project, "direct"]);
    expect((await mute(token, passphrase)).status).toBe(403);
  });

  test("whiteboard set with the secret key on stdin and a conversion QPS: fileconvert works", async () => {
    // No whiteboard yet: 403.
    expect((await convert(token, attendee)).status).toBe(403);
    const out = await ok(
      [
        ...["whiteboard", "set", project, "--region", "in-mum", "--conversion-qps", "4"],
        ...["--access-key", bl.world.accessKey, "--secret-key-stdin"],
      ],
      { input: `${bl.world.secretKey}\n` },
    );
    expect(out).toContain("region in-mum");
    expect(out).toContain("conversion QPS 4");
    expect(out).not.toContain(bl.world.secretKey);

    const resource = newDocument();
    const res = await convert(token, attendee, resource);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: "Queued", reused: false, queue_position: 1 });
    const { task_uuid } = res.body as { task_uuid: string };
    // The submitter creates the task at the backend with the settings the CLI wrote.
    const seen = await creationOf(resource);
    expect(seen?.headers.region).toBe("in-mum");
    expect(seen?.headers.token).toMatch(/^NETLESSSDK_/);

    // The record as the submitter left it: the backend's first status, its uuid, one attempt.
    const show = async () =>
      JSON.parse(await ok(["conversion", "show", task_uuid, "--json"])) as Record<string, unknown>;
    await eventually(async () => (await show()).status === "Waiting", 5_000, "the submission to be recorded");
    const shown = await show();
    expect(shown).toMatchObject({ task_uuid, project, channel, type: "static", status: "Waiting", by: "op-7" });
    expect(shown).toMatchObject({ api: "legacy", progress_percent: 0, page_count: null, pages: [] });
    expect(shown).toMatchObject({ backend_task_uuid: expect.stringMatching(/^[0-9a-f]{32}$/), attempts: 1 });
    expect(shown.backend_task_uuid).not.toBe(task_uuid);
    expect(Date.parse(String(shown.updated_at))).toBeGreaterThanOrEqual(Date.parse(String(shown.created_at)));
    const plain = await ok(["conversion", "show", task_uuid]);
    expect(plain).toMatch(/status\s+Waiting, 0 %/);
    expect(plain).toMatch(new RegExp(`backend uuid\\s+${String(shown.backend_task_uuid)}\n`));
    expect(plain).toMatch(/submissions begun\s+1\n/);
    expect(plain).toMatch(/pages\s+not known yet/);
    // GetWhiteboardSettings' answer: the kind of credential, set when and by whom (the access key no longer).
    expect(JSON.parse(await ok(["whiteboard", "show", project, "--json"]))).toEqual({
      project,
      region: "in-mum",
      credentials: "access_key",
      conversion_qps: 4,
      updated_at: expect.stringMatching(/Z$/),
      updated_by: "cli",
    });
  });

  test("whiteboard set with an SDK token from the environment replaces the key pair and the QPS", async () => {
    const set = await ok(["whiteboard", "set", project, "--region", "sg", "--json"], {
      env: { BOARDLINE_SDK_TOKEN: bl.world.sdkToken },
    });
    expect(JSON.parse(set)).toEqual({ project, region: "sg", credentials: "sdk_token", conversion_qps: 1 });
    const resource = newDocument();
    expect((await convert(token, host, resource)).status).toBe(200);
    const seen = await creationOf(resource);
    expect(seen?.headers.token).toBe(bl.world.sdkToken);
    expect(seen?.headers.region).toBe("sg");
    const shown = await ok(["whiteboard", "show", project]);
    expect(shown).toContain("region sg, SDK token, conversion QPS 1");
    expect(shown).not.toContain(bl.world.sdkToken);
  });

  test("whiteboard clear: fileconvert answers 403", async () => {
    await ok(["whiteboard", "clear", project]);
    expect((await convert(token, attendee)).status).toBe(403);
    const show = await cli(["whiteboard", "show", project]);
    expect(show.code).toBe(1);
    expect(oneLine(show.stderr)).toContain("no usable whiteboard settings");
  });

  test("conversion watch prints every change of a task until it ends", async () => {
    // A task of a channel of its own, whose follower the test plays on the same store.
    const uuid = `watch-${Date.now()}`;
    const now = Date.now();
    await bl.store.conversions.recordConversion(
      {
        uuid,
        project,
        channel: "watch-room",
        type: "static",
        api: "projector",
        status: "Waiting",
        percent: 0,
        pages: [],
        createdAt: now,
        updatedAt: now,
        by: "op-7",
      },
      now + 120_000,
    );
    // The task changes once the CLI has printed its state now (a loaded machine starts it slowly).
    let printedFirst = () => {};
    const first = new Promise<void>((resolve) => {
      printedFirst = resolve;
    });
    const watching = cli(["conversion", "watch", uuid, "--json"], {
      onStdout: (soFar) => soFar.includes("\n") && printedFirst(),
    });
    await first;
    expect(
      (await bl.store.conversions.claimDueConversions(now + 120_000, 1000, "test-follower", 10_000)).map((t) => t.uuid),
    ).toContain(uuid);
    const done = {
      status: "Finished",
      percent: 100,
      pageCount: 1,
      pages: [{ page: 1, url: "https://cdn.example/1.png", width: 8, height: 6 }],
    } as const;
    expect(await bl.store.conversions.saveConversionState(uuid, "test-follower", done, now + 1, undefined)).toBe(
      "changed",
    );
    const watched = await watching;
    expect(watched.code).toBe(0);
    const lines = watched.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { status: string; page_count: number | null });
    expect(lines.map((l) => l.status)).toEqual(["Waiting", "Finished"]);
    expect(lines.at(-1)?.page_count).toBe(1);
    expect((await cli(["conversion", "watch", "no-such-task"])).code).toBe(1);
  });

  test("channel delete: the passphrases stop working", async () => {
    // DeleteChannel answers no key count: passphrases, mute state and meta, both event streams go.
    const out = JSON.parse(await ok(["channel", "delete", project, channel, "--json"]));
    expect(out).toEqual({ project, channel, deleted: true });
    expect((await mute(token, host)).status).toBe(403);
    expect(JSON.parse(await ok(["mute", "show", project, channel, "--json"]))).toMatchObject({ mute: {}, events: [] });

    const again = await cli(["channel", "delete", project, channel]);
    expect(again.code).toBe(1);
    expect(oneLine(again.stderr)).toBe(
      `boardline: channel ${channel} of project ${project} not found (nothing deleted)`,
    );
    expect((await cli(["channel", "delete", project, channel, "--if-exists"])).code).toBe(0);
  });

  test("conversion show of an unknown task exits 1", async () => {
    const r = await cli(["conversion", "show", "00000000-0000-4000-8000-000000000000"]);
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toContain("no record of conversion task");
  });
});
