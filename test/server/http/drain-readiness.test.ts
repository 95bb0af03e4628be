/**
 * What a load balancer sees of a draining instance (docs/deploy.md, "Running
 * several instances"): from the moment shutdown begins, `/readyz` on METRICS_PORT
 * answers 503 while a call already in flight still gets its full answer, and
 * the public port refuses new connections (its /readyz cannot be reached).
 * The call in flight is a CancelConversion waiting on a slow backend
 * (backend-bound-call.ts).
 */
import { afterEach, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../../harness/boardline.js";
import { eventually } from "../../harness/eventually.js";
import { h1 } from "../../harness/http-clients.js";
import { cancelPath, cancelsAtBackend, submittedTask } from "./backend-bound-call.js";

let bl: Boardline | undefined;
afterEach(async () => {
  await bl?.close();
  bl = undefined;
});

test("draining: /readyz on the metrics port is 503 while in-flight calls finish; the public port refuses", async () => {
  bl = await startBoardline({ store: "memory", conversionApi: "projector", metricsPort: 0 });
  const b = bl;
  const ops = `http://127.0.0.1:${b.server.metricsPort}`;
  expect((await h1(ops, "/readyz")).status).toBe(200);

  const uuid = await submittedTask(b);
  b.simulator.setFault({ kind: "slow", delayMs: 800, operation: "cancel" });
  const inFlight = h1(b.url, cancelPath(uuid), {
    method: "DELETE",
    headers: { authorization: `Bearer ${await b.token()}` },
  });
  await eventually(() => cancelsAtBackend(b) === 1, 3_000, "the call to reach the backend");
  const shutdown = b.server.shutdown(5_000);

  const draining = await h1(ops, "/readyz");
  expect(draining.status).toBe(503);
  expect(JSON.parse(draining.body)).toEqual({ status: "unavailable", reason: "the server is shutting down" });
  expect((await fetch(`${b.url}/readyz`).catch((e: unknown) => e)) instanceof Error).toBe(true);
  const answer = await inFlight;
  expect(answer.status).toBe(200);
  expect(JSON.parse(answer.body)).toMatchObject({ task_uuid: uuid, status: "Abort" });
  await shutdown;
});
