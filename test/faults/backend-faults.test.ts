/**
 * The conversion backend is slow, down, or answers garbage: ConvertFile still
 * answers at once over JSON and gRPC (it only queues the request); the
 * request is submitted again until the backend takes it, each attempt cut off
 * at the configured time-out; and once the server is closed no socket or
 * timer of ours is left behind.
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect, test } from "vitest";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import type { SimulatorFault } from "../../src/demo/simulator/index.js";
import { startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { parseBody, postJson } from "../harness/http.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

/** CONVERSION_TIMEOUT_MS, the documented bound on a backend call. */
const TIMEOUT_MS = 300;
/**
 * The slow backend's delay: far past the time-out and the 2 s before a submission is tried again, so
 * a task submitted before it shows the time-out ended the first attempt (its late answer did not).
 */
const SLOW_BACKEND_MS = 5_000;

const handles = () => {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
};

const faults: SimulatorFault[] = [
  { kind: "slow", delayMs: SLOW_BACKEND_MS },
  { kind: "status", status: 503 },
  { kind: "status", status: 500 },
  { kind: "reset" },
  { kind: "garbage" },
  { kind: "status", status: 401 },
];

test("every backend fault leaves the caller's answer alone, and the request is submitted once the backend takes it", async () => {
  const before = handles();
  const bl = await startBoardline({ conversionTimeoutMs: TIMEOUT_MS });
  const w = bl.world;
  const grpc = createClient(WhiteboardService, createGrpcTransport({ baseUrl: bl.url }));
  try {
    for (const fault of faults) {
      const name = JSON.stringify(fault);
      const resource = `https://example.com/${fault.kind}-${"status" in fault ? fault.status : ""}.pdf`;
      // One failed attempt each: the JSON call's (project A) and the gRPC call's (project B, a queue of its own).
      bl.simulator.clearFaults();
      bl.simulator.setFault({ ...fault, times: 2, operation: "create" });

      let started = performance.now();
      const res = await postJson(
        bl,
        ROUTES.convert,
        { resource_url: resource, passphrase: w.hostPassphrase, conversion_type: "static" },
        { token: await bl.token() },
      );
      expect(res.status, name).toBe(200);
      expect(parseBody(res), name).toEqual({
        task_uuid: expect.stringMatching(/^[0-9a-f]{32}$/),
        status: "Queued",
        reused: false,
        queue_position: 1,
      });
      expect(performance.now() - started, name).toBeLessThan(SLOW_BACKEND_MS);

      started = performance.now();
      const answer = await grpc.convertFile(
        { resourceUrl: resource, passphrase: w.otherHostPassphrase, conversionType: "static" },
        { headers: { authorization: `Bearer ${await bl.token(w.otherProject)}` } },
      );
      expect(answer, name).toMatchObject({ status: "Queued", reused: false, queuePosition: 1 });
      expect(performance.now() - started, name).toBeLessThan(SLOW_BACKEND_MS);

      // Each was tried, failed, and was tried again 2 s later: the backend took it before the slow answer came.
      const uuids = [parseBody<{ task_uuid: string }>(res).task_uuid, answer.taskUuid];
      await eventually(
        async () => {
          const records = await Promise.all(uuids.map((u) => bl.store.conversions.getConversion(u)));
          return records.every((r) => r?.status !== "Queued");
        },
        SLOW_BACKEND_MS - 1_000,
        `the tasks to be submitted (${name})`,
      );
      const made = bl.simulator.creates().filter((c) => c.resource === resource);
      for (const uuid of uuids) {
        const record = await bl.store.conversions.getConversion(uuid);
        // Submitted (the follower may already have seen it converting), on its second attempt.
        expect(record?.attempts, name).toBe(2);
        expect(
          made.map((c) => c.uuid),
          name,
        ).toContain(record?.backendUuid);
      }
      // A slow answer comes after the backend made the task: that one is an orphan, the window docs/conversion-queue.md names.
      expect(made, name).toHaveLength(fault.kind === "slow" ? 4 : 2);
    }
  } finally {
    await bl.close();
  }
  // Give closed sockets a moment to report it, then compare with before the server existed.
  await sleep(200);
  const after = handles();
  for (const kind of ["TCPSocketWrap", "TCPServerWrap", "Timeout"]) {
    expect(after[kind] ?? 0, `${kind} left behind`).toBeLessThanOrEqual(before[kind] ?? 0);
  }
}, 60_000);
