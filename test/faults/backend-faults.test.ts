/**
 * The conversion backend is slow, down, or answers garbage: each fault gets its
 * documented answer within the configured time-out, over JSON and gRPC, and
 * once the server is closed no socket or timer of ours is left behind.
 */
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { expect, test } from "vitest";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import type { SimulatorFault } from "../../src/demo/simulator/index.js";
import { startBoardline } from "../harness/boardline.js";
import { parseBody, postJson } from "../harness/http.js";
import { ROUTES } from "../harness/routes.js";
import { sleep } from "../harness/sleep.js";

/** CONVERSION_TIMEOUT_MS, the documented bound on a backend call. */
const TIMEOUT_MS = 300;
/**
 * The slow backend's delay: far past the time-out, so an answer before it shows the time-out ended
 * the call (not a guess about how fast this machine answers after the time-out).
 */
const SLOW_BACKEND_MS = 5_000;

const handles = () => {
  const counts: Record<string, number> = {};
  for (const r of process.getActiveResourcesInfo()) counts[r] = (counts[r] ?? 0) + 1;
  return counts;
};

const cases: Array<{ fault: SimulatorFault; http: number; code: number; grpc: Code }> = [
  { fault: { kind: "slow", delayMs: SLOW_BACKEND_MS }, http: 504, code: 504, grpc: Code.DeadlineExceeded },
  { fault: { kind: "status", status: 503 }, http: 503, code: 503, grpc: Code.Unavailable },
  { fault: { kind: "status", status: 500 }, http: 503, code: 503, grpc: Code.Unavailable },
  { fault: { kind: "reset" }, http: 503, code: 503, grpc: Code.Unavailable },
  { fault: { kind: "garbage" }, http: 500, code: 500, grpc: Code.Internal },
  { fault: { kind: "status", status: 401 }, http: 500, code: 500, grpc: Code.Internal },
];

test("every backend fault is answered as documented, in time, and leaves nothing behind", async () => {
  const before = handles();
  const bl = await startBoardline({ conversionTimeoutMs: TIMEOUT_MS });
  const token = await bl.token();
  const body = {
    resource_url: "https://example.com/deck.pdf",
    passphrase: bl.world.hostPassphrase,
    conversion_type: "static",
  };
  const grpc = createClient(WhiteboardService, createGrpcTransport({ baseUrl: bl.url }));
  try {
    for (const c of cases) {
      bl.simulator.clearFaults();
      bl.simulator.setFault(c.fault);
      let started = performance.now();
      const res = await postJson(bl, ROUTES.convert, body, { token });
      const elapsed = performance.now() - started;
      expect(res.status, JSON.stringify(c.fault)).toBe(c.http);
      expect(parseBody(res)).toEqual({ error: { code: c.code, message: expect.any(String) } });
      expect(elapsed, JSON.stringify(c.fault)).toBeLessThan(SLOW_BACKEND_MS);
      if (c.fault.kind === "slow") expect(elapsed).toBeGreaterThanOrEqual(TIMEOUT_MS - 5);

      started = performance.now();
      const err = await grpc
        .convertFile(
          { resourceUrl: body.resource_url, passphrase: body.passphrase, conversionType: "static" },
          { headers: { authorization: `Bearer ${token}` } },
        )
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(err?.code, JSON.stringify(c.fault)).toBe(c.grpc);
      expect(performance.now() - started).toBeLessThan(SLOW_BACKEND_MS);
    }
    // Nothing was recorded for a failed conversion.
    bl.simulator.clearFaults();
    const tasks = bl.simulator.tasks();
    for (const t of tasks) expect(await bl.store.conversions.getConversion(t.uuid)).toBeUndefined();
  } finally {
    await bl.close();
  }
  // Give closed sockets a moment to report it, then compare with before the server existed.
  await sleep(200);
  const after = handles();
  for (const kind of ["TCPSocketWrap", "TCPServerWrap", "Timeout"]) {
    expect(after[kind] ?? 0, `${kind} left behind`).toBeLessThanOrEqual(before[kind] ?? 0);
  }
}, 30_000);
