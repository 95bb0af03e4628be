/**
 * ConversionTasks (src/services/conversion/tasks.ts) on the in-memory store
 * with a fake backend: a project reads, watches and cancels its own tasks; a
 * task of another project answers like an unknown one; a cancel reaches the
 * backend only for a projector task still under way, and writes nothing (the
 * follower records the outcome at its next poll).
 */
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { afterEach, describe, expect, it } from "vitest";
import {
  CancelConversionRequestSchema,
  GetConversionRequestSchema,
  WatchConversionRequestSchema,
} from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { ConversionTasks } from "../../../src/services/conversion/tasks.js";
import { ConversionWatchHub } from "../../../src/services/conversion/watch-hub.js";
import type { ConversionApi, ConversionStatus, ConversionTaskRecord } from "../../../src/services/ports.js";
import { WatchSlots } from "../../../src/services/watch-slots.js";
import { MemoryStore } from "../../../src/store/memory/store.js";
import { callerOf, storeContents } from "../store-contents.js";
import { FakeBackend } from "./fake-backend.js";

const NOW = 1_800_000_000_000;
const CREDENTIALS = { accessKey: "AK", secretKey: "SK" };
let hub: ConversionWatchHub | undefined;
afterEach(() => hub?.close());

function record(uuid: string, api: ConversionApi, status: ConversionStatus, project = "p"): ConversionTaskRecord {
  const at = NOW - 5_000;
  return {
    uuid,
    project,
    channel: "weekly",
    type: "static",
    api,
    status,
    percent: 40,
    pages: [],
    createdAt: at,
    updatedAt: at,
    by: "bob",
  };
}

async function world() {
  const store = new MemoryStore({ now: () => NOW });
  await store.setWhiteboard("p", { region: "in-mum", credentials: CREDENTIALS });
  for (const task of [
    record("running", "projector", "Converting"),
    record("finished", "projector", "Finished"),
    record("old-api", "legacy", "Converting"),
    record("theirs", "projector", "Converting", "q"),
  ]) {
    await store.conversions.recordConversion(task, NOW + 60_000);
  }
  const backend = new FakeBackend();
  const slots = new WatchSlots(10);
  hub = new ConversionWatchHub(store, { pollMs: 10, slots });
  const tasks = new ConversionTasks(store, backend, hub, () => NOW);
  const caller = callerOf("p");
  const get = (taskUuid: string) => tasks.getConversion(caller, create(GetConversionRequestSchema, { taskUuid }));
  const cancel = (taskUuid: string) =>
    tasks.cancelConversion(caller, create(CancelConversionRequestSchema, { taskUuid }));
  const watch = (taskUuid: string) =>
    tasks.watchConversion(caller, create(WatchConversionRequestSchema, { taskUuid }))[Symbol.asyncIterator]();
  return { store, backend, slots, get, cancel, watch };
}

describe("reading a task", () => {
  it("answers the project's own task as the API's Conversion", async () => {
    const { get } = await world();
    expect(await get("running")).toMatchObject({
      taskUuid: "running",
      type: "static",
      status: "Converting",
      progressPercent: 40,
      createdAt: timestampFromMs(NOW - 5_000),
    });
  });

  it.each(["theirs", "unknown"])(
    "answers %s as not_found, the same for another project's and an unknown",
    async (uuid) => {
      const { get } = await world();
      await expect(get(uuid)).rejects.toMatchObject({
        kind: "not_found",
        detail: "this project has no conversion task with that uuid",
      });
    },
  );
});

describe("cancelling a task", () => {
  it("asks the backend with the project's settings and answers the state it reports, writing nothing", async () => {
    const { store, backend, cancel } = await world();
    const before = storeContents(store);
    expect(await cancel("running")).toMatchObject({
      taskUuid: "running",
      status: "Abort",
      updatedAt: timestampFromMs(NOW),
    });
    expect(backend.cancelled).toEqual([
      { uuid: "running", type: "static", api: "projector", region: "in-mum", credentials: CREDENTIALS },
    ]);
    expect(storeContents(store)).toEqual(before);
  });

  it("answers a task that has ended unchanged, without asking the backend", async () => {
    const { backend, cancel } = await world();
    expect(await cancel("finished")).toMatchObject({ status: "Finished" });
    expect(backend.cancelled).toEqual([]);
  });

  it.each([
    ["a task of the legacy API", "old-api", "failed_precondition"],
    ["another project's task", "theirs", "not_found"],
    ["an unknown task", "unknown", "not_found"],
  ])("refuses %s without asking the backend", async (_, uuid, kind) => {
    const { store, backend, cancel } = await world();
    const before = storeContents(store);
    await expect(cancel(uuid)).rejects.toMatchObject({ kind });
    expect(backend.cancelled).toEqual([]);
    expect(storeContents(store)).toEqual(before);
  });

  it("refuses when the project's whiteboard is no longer set up", async () => {
    const { store, backend, cancel } = await world();
    await store.clearWhiteboard("p");
    await expect(cancel("running")).rejects.toMatchObject({ kind: "permission_denied" });
    expect(backend.cancelled).toEqual([]);
  });
});

describe("watching a task", () => {
  it("yields the task now, then each saved change, and ends with the task; its slot is given back", async () => {
    const { store, slots, watch } = await world();
    const changes = watch("running");
    expect((await changes.next()).value).toMatchObject({ status: "Converting", progressPercent: 40 });
    expect(slots.inUse).toBe(1);
    const claimed = await store.conversions.claimDueConversions(NOW + 60_000, 10, "f", 10_000);
    expect(claimed.map((c) => c.uuid)).toContain("running");
    const finished = { status: "Finished", percent: 100, pageCount: 2, pages: [] } as const;
    await store.conversions.saveConversionState("running", "f", finished, NOW + 1, undefined);
    expect((await changes.next()).value).toMatchObject({ status: "Finished", pageCount: 2 });
    expect(await changes.next()).toEqual({ done: true, value: undefined });
    expect(slots.inUse).toBe(0);
  });

  it("of another project's task is not_found, and takes no slot", async () => {
    const { slots, watch } = await world();
    await expect(watch("theirs").next()).rejects.toMatchObject({ kind: "not_found" });
    expect(slots.inUse).toBe(0);
  });
});
