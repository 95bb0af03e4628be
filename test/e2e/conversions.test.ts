/**
 * Conversions followed to their end: ConvertFile creates a task, the follower
 * polls it (projector API, the simulator converting in ~200 ms here) until it
 * ends, and GetConversion / CancelConversion answer it on every protocol.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { bearer, type ProtocolName, transport } from "./helpers-rpc.js";

let bl: Boardline;
let legacy: Boardline;
beforeAll(async () => {
  [bl, legacy] = await Promise.all([
    startBoardline({ store: "redis", conversionApi: "projector" }),
    startBoardline({ store: "memory", conversionApi: "legacy" }),
  ]);
});
afterAll(async () => {
  await Promise.all([bl?.close(), legacy?.close()]);
});

async function convert(at: Boardline, over: Record<string, unknown> = {}): Promise<string> {
  const res = await postJson(at, ROUTES.convert, convertBody(at, over));
  expect(res.status).toBe(200);
  return (JSON.parse(res.text) as { task_uuid: string }).task_uuid;
}

const getJson = async (at: Boardline, uuid: string, token?: string, method = "GET") => {
  const res = await fetch(`${at.url}/v1/whiteboard/fileconvert/${encodeURIComponent(uuid)}`, {
    method,
    headers: { authorization: `Bearer ${token ?? (await at.token())}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe("a static conversion is followed to Finished, with its pages", () => {
  let uuid: string;
  beforeAll(async () => {
    uuid = await convert(bl);
    await eventually(async () => (await getJson(bl, uuid)).body.status === "Finished", 10_000, "the task to finish");
  });

  test("JSON: GET /v1/whiteboard/fileconvert/{task_uuid}", async () => {
    const { status, body } = await getJson(bl, uuid);
    expect(status).toBe(200);
    expect(body).toMatchObject({ task_uuid: uuid, type: "static", status: "Finished", progress_percent: 100 });
    const pages = body.pages as Array<{ page: number; url: string; width: number; height: number }>;
    expect(pages.length).toBeGreaterThan(0);
    expect(body.page_count).toBe(pages.length);
    expect(pages.map((p) => p.page)).toEqual(pages.map((_, i) => i + 1));
    for (const p of pages) {
      expect(p.url).toMatch(/^https:\/\//);
      expect(p.width).toBeGreaterThan(0);
      expect(p.height).toBeGreaterThan(0);
    }
    expect(Date.parse(body.created_at as string)).toBeLessThanOrEqual(Date.parse(body.updated_at as string));
  });

  test.each<ProtocolName>(["connect h1 (json)", "connect h2 (binary)", "grpc-web h1", "grpc h2"])(
    "GetConversion over %s answers the same",
    async (protocol) => {
      const client = createClient(WhiteboardService, transport(bl, protocol));
      const answer = await client.getConversion({ taskUuid: uuid }, { headers: bearer(`Bearer ${await bl.token()}`) });
      expect(answer).toMatchObject({ taskUuid: uuid, status: "Finished", progressPercent: 100 });
      expect(answer.pages.length).toBe(answer.pageCount);
    },
  );

  test("the terminal state is announced once on the channel's whiteboard-events stream", async () => {
    const events = await bl.store.getWhiteboardEvents(bl.world.project, bl.world.channel, 100);
    const mine = events.filter((e) => e.taskUuid === uuid);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ status: "Finished", type: "static" });
  });

  test("another project's token gets 404, exactly like an unknown task", async () => {
    const other = await bl.token(bl.world.otherProject);
    const foreign = await getJson(bl, uuid, other);
    const unknown = await getJson(bl, "no-such-task", other);
    expect(foreign).toEqual(unknown);
    expect(foreign.status).toBe(404);
    expect((await getJson(bl, uuid, other, "DELETE")).status).toBe(404);
  });

  test("a malformed task uuid is 400/611", async () => {
    const { status, body } = await getJson(bl, "not a uuid!");
    expect(status).toBe(400);
    expect(body).toMatchObject({ error: { code: 611 } });
  });

  test("cancelling an ended task answers it unchanged", async () => {
    const { status, body } = await getJson(bl, uuid, undefined, "DELETE");
    expect(status).toBe(200);
    expect(body.status).toBe("Finished");
  });
});

test("a document the backend cannot convert ends in Fail with the backend's reason", async () => {
  const uuid = await convert(bl, { resource_url: "https://docs.example.com/fail.pptx" });
  await eventually(async () => (await getJson(bl, uuid)).body.status === "Fail", 10_000, "the task to fail");
  const { body } = await getJson(bl, uuid);
  expect(body.failed_reason).not.toBe("");
});

test("cancelling a projector task aborts it at the backend", async () => {
  const uuid = await convert(bl, { resource_url: "https://docs.example.com/slow.pptx" });
  const { status, body } = await getJson(bl, uuid, undefined, "DELETE");
  expect(status).toBe(200);
  expect(body.status).toBe("Abort");
  await eventually(async () => (await getJson(bl, uuid)).body.status === "Abort", 10_000, "the follower to record it");
});

test("a legacy task cannot be cancelled: 409 / FAILED_PRECONDITION", async () => {
  const uuid = await convert(legacy);
  const { status, body } = await getJson(legacy, uuid, undefined, "DELETE");
  expect(status).toBe(409);
  expect(body).toMatchObject({ error: { code: 409 } });
});

test("a legacy task is followed to Finished too", async () => {
  const uuid = await convert(legacy);
  await eventually(async () => (await getJson(legacy, uuid)).body.status === "Finished", 10_000, "the task to finish");
});
