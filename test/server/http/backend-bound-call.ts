/**
 * A call that waits on the conversion backend, for the tests that need calls
 * in flight while a server shuts down: CancelConversion of a projector task
 * already submitted, which asks the backend while its caller waits
 * (ConvertFile only queues, and answers at once). Make the backend's cancel
 * slow (`operation: "cancel"`) to hold it there.
 */
import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import type { Boardline } from "../../harness/boardline.js";
import { eventually } from "../../harness/eventually.js";
import { JSON_HEADERS } from "../../harness/http.js";
import { h1 } from "../../harness/http-clients.js";
import { convertBody } from "../../harness/request-bodies.js";
import { ROUTES } from "../../harness/routes.js";

/**
 * A projector task (start `b` with `conversionApi: "projector"`) submitted to the backend and
 * under way there for a minute (the simulator converts a resource named "slow" slowly), so
 * boardline's record of it stays under way and cancelling it asks the backend. `ca`: the
 * certificate to trust, for a server on TLS.
 */
export async function submittedTask(b: Boardline, ca?: string): Promise<string> {
  const resource = `https://example.com/slow-${randomUUID()}.pdf`;
  const res = await h1(b.url, ROUTES.convert, {
    method: "POST",
    headers: { ...JSON_HEADERS, authorization: `Bearer ${await b.token()}` },
    body: JSON.stringify(convertBody(b, { resource_url: resource })),
    ...(ca === undefined ? {} : { ca }),
  });
  expect(res.status, res.body).toBe(200);
  const uuid = (JSON.parse(res.body) as { task_uuid: string }).task_uuid;
  await eventually(
    async () => (await b.store.conversions.getConversion(uuid))?.backendUuid !== undefined,
    3000,
    "the task to be submitted",
  );
  return uuid;
}

/** CancelConversion's JSON route for the task (DELETE). */
export const cancelPath = (uuid: string) => `${ROUTES.convert}/${uuid}`;

/** How many cancels reached the backend. */
export const cancelsAtBackend = (b: Boardline) => b.simulator.requests().filter((r) => r.method === "DELETE").length;
