/**
 * The conversion queue as a caller sees it, on a real server (Redis store,
 * then the in-memory one), over JSON and the RPC protocols. The project's
 * plan is one conversion a second here, so a request behind another stays
 * Queued for a moment: GetConversion answers its place and no backend uuid;
 * a watch sees Queued, then the backend's statuses; Cancel takes it out of
 * the queue and the backend never sees it; past CONVERSION_QUEUE_MAX the
 * answer is 429 CONVERSION_QUEUE_FULL with the queue's expected wait; an
 * identical request is reused unless `reuse` is false; the new metrics move.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { bearer, transport } from "./helpers/rpc.js";

const QUEUE_MAX = 3;

describe.each(["redis", "memory"] as const)("the conversion queue (%s store)", (storeKind) => {
  let bl: Boardline;
  let documents = 0;
  beforeAll(async () => {
    bl = await startBoardline({ store: storeKind, conversionApi: "projector", follow: { queueMax: QUEUE_MAX } });
    const settings = await bl.store.getWhiteboard(bl.world.project);
    if (settings === undefined) throw new Error("the seeded world has whiteboard settings");
    await bl.store.setWhiteboard(bl.world.project, { ...settings, conversionQps: 1 });
  });
  afterAll(async () => {
    await bl?.close();
  });

  const document = () => `https://docs.example.com/queued-${++documents}.pdf`;

  async function convert(over: Record<string, unknown> = {}) {
    const res = await postJson(bl, ROUTES.convert, convertBody(bl, { resource_url: document(), ...over }));
    return { status: res.status, headers: res.headers, body: JSON.parse(res.text) as Record<string, unknown> };
  }

  const get = async (uuid: string) => {
    const res = await fetch(`${bl.url}/v1/whiteboard/fileconvert/${uuid}`, {
      headers: { authorization: `Bearer ${await bl.token()}` },
    });
    return (await res.json()) as Record<string, unknown>;
  };

  const submitted = (resource: string) => bl.simulator.creates().some((c) => c.resource === resource);
  const settle = (uuids: string[]) =>
    eventually(
      async () => (await Promise.all(uuids.map(get))).every((c) => c.status !== "Queued"),
      10_000,
      "the queue to drain",
    );

  test("a request behind another waits Queued with its place and no backend uuid, then is submitted", async () => {
    const first = await convert();
    const second = await convert();
    expect(second).toMatchObject({ status: 200, body: { status: "Queued", reused: false } });
    const uuid = String(second.body.task_uuid);
    const queued = await get(uuid);
    expect(queued).toMatchObject({ task_uuid: uuid, status: "Queued", backend_task_uuid: "", queue_position: 1 });
    await settle([uuid]);
    const after = await get(uuid);
    expect(after.backend_task_uuid).toMatch(/^[0-9a-f]{32}$/);
    expect(after.backend_task_uuid).not.toBe(uuid);
    expect(after.queue_position).toBe(0);
    await settle([String(first.body.task_uuid)]);
  });

  test("a watch over gRPC sees Queued, then the task to Finished", async () => {
    await convert();
    const behind = await convert();
    const client = createClient(WhiteboardService, transport(bl, "grpc h2"));
    const seen: string[] = [];
    for await (const c of client.watchConversion(
      { taskUuid: String(behind.body.task_uuid) },
      { headers: bearer(`Bearer ${await bl.token()}`) },
    )) {
      seen.push(c.status);
    }
    expect(seen[0]).toBe("Queued");
    expect(seen.at(-1)).toBe("Finished");
  });

  test("Cancel takes a queued task out of its queue: Abort, and the backend never sees it", async () => {
    const ahead = await convert();
    const resource = document();
    const behind = await convert({ resource_url: resource });
    const uuid = String(behind.body.task_uuid);
    const res = await fetch(`${bl.url}/v1/whiteboard/fileconvert/${uuid}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${await bl.token()}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ task_uuid: uuid, status: "Abort", backend_task_uuid: "" });
    await settle([String(ahead.body.task_uuid)]);
    await new Promise((r) => setTimeout(r, 1_200));
    expect(submitted(resource)).toBe(false);
    expect((await get(uuid)).status).toBe("Abort");
  });

  test("past CONVERSION_QUEUE_MAX: 429 CONVERSION_QUEUE_FULL with the queue's wait, over JSON and gRPC", async () => {
    const accepted = [];
    for (let i = 0; i < QUEUE_MAX + 1; i++) accepted.push(await convert());
    const json = await convert();
    expect(json.status).toBe(429);
    expect(Number(json.headers.get("retry-after"))).toBeGreaterThanOrEqual(QUEUE_MAX);
    expect(json.body).toMatchObject({ error: { code: 429 } });
    const client = createClient(WhiteboardService, transport(bl, "grpc h2"));
    const refused = await client
      .convertFile(
        { resourceUrl: document(), passphrase: bl.world.hostPassphrase, conversionType: "static" },
        { headers: bearer(`Bearer ${await bl.token()}`) },
      )
      .then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
    expect(refused?.code).toBe(Code.ResourceExhausted);
    expect(refused?.message).toContain("conversion queue holds 3 requests, its limit");
    await settle(accepted.filter((a) => a.status === 200).map((a) => String(a.body.task_uuid)));
  }, 20_000);

  test("an identical request is reused over Connect; reuse false queues another", async () => {
    const resource = document();
    const first = await convert({ resource_url: resource });
    const client = createClient(WhiteboardService, transport(bl, "connect h2 (binary)"));
    const request = { resourceUrl: resource, passphrase: bl.world.attendeePassphrase, conversionType: "static" };
    const again = await client.convertFile(request, { headers: bearer(`Bearer ${await bl.token()}`) });
    expect(again).toMatchObject({ taskUuid: first.body.task_uuid, reused: true });
    const fresh = await client.convertFile(
      { ...request, reuse: false },
      { headers: bearer(`Bearer ${await bl.token()}`) },
    );
    expect(fresh.reused).toBe(false);
    expect(fresh.taskUuid).not.toBe(first.body.task_uuid);
    await settle([String(first.body.task_uuid), fresh.taskUuid]);
  });

  test("the queue's metrics move: its length as requests join, the wait, the submissions", async () => {
    const metrics = await (await fetch(`${bl.url}/metrics`)).text();
    const value = (series: string) => Number(new RegExp(`^${series} (\\S+)$`, "m").exec(metrics)?.[1] ?? Number.NaN);
    expect(value("boardline_conversion_queue_length_count")).toBeGreaterThanOrEqual(5);
    expect(value("boardline_conversion_queue_wait_seconds_count")).toBeGreaterThanOrEqual(5);
    expect(value('boardline_conversion_submissions_total{outcome="ok"}')).toBeGreaterThanOrEqual(5);
    expect(value("boardline_conversion_queue_wait_seconds_sum")).toBeGreaterThan(0.5);
  });
});
