/**
 * A finished conversion is answered from boardline's own record for as long
 * as it keeps it (CONVERSION_RETENTION_DAYS), not from the backend, which
 * forgets a task a week after it ended: once the simulator answers "task not
 * found", GetConversion (JSON and gRPC) and WatchConversion still answer the
 * task Finished with the same pages.
 */
import { createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, expect, test } from "vitest";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { PROJECTOR_TASKS_PATH } from "../../src/demo/simulator/projector-routes.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody } from "../harness/request-bodies.js";
import { ROUTES } from "../harness/routes.js";
import { bearer, transport } from "./helpers/rpc.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "redis", conversionApi: "projector" });
});
afterAll(async () => {
  await bl?.close();
});

const getJson = async (uuid: string) => {
  const res = await fetch(`${bl.url}/v1/whiteboard/fileconvert/${encodeURIComponent(uuid)}`, {
    headers: { authorization: `Bearer ${await bl.token()}` },
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

test("a finished task is answered from the record after the backend has forgotten it", async () => {
  const created = await postJson(bl, ROUTES.convert, convertBody(bl));
  expect(created.status).toBe(200);
  const uuid = (JSON.parse(created.text) as { task_uuid: string }).task_uuid;
  await eventually(async () => (await getJson(uuid)).body.status === "Finished", 10_000, "the task to finish");
  const finished = (await getJson(uuid)).body;
  expect((finished.pages as unknown[]).length).toBeGreaterThan(0);

  bl.simulator.forgetTasks();
  const backend = await fetch(`${bl.simulator.url}${PROJECTOR_TASKS_PATH}/${uuid}`, {
    headers: { token: bl.world.sdkToken, region: "us-sv" },
  });
  expect(backend.status).toBe(404);
  expect(await backend.text()).toContain("task not found");

  expect(await getJson(uuid)).toEqual({ status: 200, body: finished });
  const client = createClient(WhiteboardService, transport(bl, "grpc h2"));
  const headers = bearer(`Bearer ${await bl.token()}`);
  const answer = await client.getConversion({ taskUuid: uuid }, { headers });
  expect(answer).toMatchObject({ taskUuid: uuid, status: "Finished", pageCount: finished.page_count });
  const watched = [];
  for await (const m of client.watchConversion({ taskUuid: uuid }, { headers })) watched.push(m.status);
  expect(watched).toEqual(["Finished"]);
});
