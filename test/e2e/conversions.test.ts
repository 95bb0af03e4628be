/**
 * Conversions followed to their end: ConvertFile queues a task, the submitter
 * hands it to the backend, the follower polls it (projector API, the
 * simulator converting in ~200 ms here) until it ends, and GetConversion /
 * CancelConversion answer it on every protocol.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { bearer, type ProtocolName, transport } from "./helpers/rpc.js";

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

let documents = 0;

/** A new task: each of another document, so none is an identical request's (which would be reused). */
async function convert(at: Boardline, over: Record<string, unknown> = {}): Promise<string> {
  documents++;
  const url = `https://docs.example.com/deck-${documents}.pptx`;
  const res = await postJson(at, ROUTES.convert, convertBody(at, { resource_url: url, ...over }));
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
    // Saved first, announced right after (another Redis slot, so a separate command).
    const announced = async () =>
      (await bl.store.getWhiteboardEvents(bl.world.project, bl.world.channel, 100)).filter((e) => e.taskUuid === uuid);
    await eventually(async () => (await announced()).length > 0, 5_000, "the end to be announced");
    const mine = await announced();
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

/** Reads a server-sent event stream to its end: each event's name (default "message") and data. */
async function readEvents(res: Response): Promise<Array<{ event: string; data: unknown }>> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((block) => block.split("\n").some((l) => l.startsWith("data: ")))
    .map((block) => {
      const lines = block.split("\n");
      const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
      const data = JSON.parse(lines.find((l) => l.startsWith("data: "))?.slice(6) ?? "null") as unknown;
      return { event, data };
    });
}

const watchUrl = (at: Boardline, uuid: string) => `${at.url}/v1/whiteboard/fileconvert/${uuid}/watch`;

describe("WatchConversion: the state now, then every change, ending after the terminal state", () => {
  test("JSON: server-sent events, one data line per state, ending with Finished", async () => {
    const uuid = await convert(bl);
    const res = await fetch(watchUrl(bl, uuid), { headers: { authorization: `Bearer ${await bl.token()}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events = await readEvents(res);
    const statuses = events.map((e) => (e.data as { status: string }).status);
    expect(events.every((e) => e.event === "message")).toBe(true);
    expect(statuses.at(-1)).toBe("Finished");
    // Queued while the watch opened before the submission (test/e2e/conversion-queue.test.ts holds it queued).
    expect(statuses.slice(0, -1).every((s) => ["Queued", "Waiting", "Converting"].includes(s))).toBe(true);
    const last = events.at(-1)?.data as { task_uuid: string; pages: unknown[] };
    expect(last.task_uuid).toBe(uuid);
    expect(last.pages.length).toBeGreaterThan(0);
  });

  test.each<ProtocolName>(["connect h1 (json)", "connect h2 (binary)", "grpc-web h1", "grpc h2"])(
    "over %s (server streaming)",
    async (protocol) => {
      const uuid = await convert(bl);
      const client = createClient(WhiteboardService, transport(bl, protocol));
      const seen: string[] = [];
      for await (const c of client.watchConversion(
        { taskUuid: uuid },
        { headers: bearer(`Bearer ${await bl.token()}`) },
      )) {
        seen.push(c.status);
      }
      expect(seen.at(-1)).toBe("Finished");
      expect(seen.length).toBeGreaterThanOrEqual(1);
    },
  );

  test("an ended task: one event, then the end", async () => {
    const uuid = await convert(bl);
    await eventually(async () => (await getJson(bl, uuid)).body.status === "Finished", 10_000, "the task to finish");
    const res = await fetch(watchUrl(bl, uuid), { headers: { authorization: `Bearer ${await bl.token()}` } });
    const events = await readEvents(res);
    expect(events.map((e) => (e.data as { status: string }).status)).toEqual(["Finished"]);
  });

  test("another project's task: 404 before any event, like an unknown one", async () => {
    const uuid = await convert(bl);
    const other = await bl.token(bl.world.otherProject);
    const res = await fetch(watchUrl(bl, uuid), { headers: { authorization: `Bearer ${other}` } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: 404 } });
  });

  test("past MAX_WATCHES: 429 with Retry-After; a watch ended frees its place", async () => {
    const limited = await startBoardline({ store: "memory", conversionApi: "projector", maxWatches: 1 });
    try {
      const token = await limited.token();
      const slow = await convert(limited, { resource_url: "https://docs.example.com/slow.pptx" });
      const open = new AbortController();
      const first = await fetch(watchUrl(limited, slow), {
        headers: { authorization: `Bearer ${token}` },
        signal: open.signal,
      });
      expect(first.status).toBe(200);
      const second = await fetch(watchUrl(limited, slow), { headers: { authorization: `Bearer ${token}` } });
      expect(second.status).toBe(429);
      // Jittered, so that refused watchers do not all come back at once (docs/api.md: 1–3 s).
      expect(["1", "2", "3"]).toContain(second.headers.get("retry-after"));
      open.abort();
      await eventually(
        async () =>
          (await fetch(watchUrl(limited, "unknown-task"), { headers: { authorization: `Bearer ${token}` } })).status ===
          404,
        5_000,
        "the place to be free again",
      );
    } finally {
      await limited.close();
    }
  });

  test("shutdown ends open watches at once: gRPC UNAVAILABLE, SSE closes", async () => {
    const stopping = await startBoardline({ store: "memory", conversionApi: "projector" });
    const token = await stopping.token();
    const slow = await convert(stopping, { resource_url: "https://docs.example.com/slow.pptx" });
    const sse = await fetch(watchUrl(stopping, slow), { headers: { authorization: `Bearer ${token}` } });
    const client = createClient(WhiteboardService, transport(stopping, "grpc h2"));
    const grpcWatch = (async () => {
      try {
        for await (const _ of client.watchConversion({ taskUuid: slow }, { headers: bearer(`Bearer ${token}`) })) {
          // the current state first; then nothing until shutdown
        }
        return "ended";
      } catch (e) {
        return (e as { code?: number }).code;
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = performance.now();
    await stopping.close(); // graceful shutdown with a grace period of 1 s
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(await grpcWatch).toBe(14); // UNAVAILABLE
    const events = await readEvents(sse);
    expect(events.at(-1)?.event).toBe("error");
    expect(events.at(-1)?.data).toMatchObject({ error: { code: 503 } });
  });
});
