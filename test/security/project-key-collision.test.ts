/**
 * A channel's Redis keys are named `{<project>/<channel>}`, and channel ids may
 * hold `/`: project `pa` with channel `x/y` and project `pa/x` with channel `y`
 * would be the same keys. So a token whose project holds `/` (or a brace, or a
 * control character, or nothing) is refused before any key is named, on every
 * route that reads or writes by project and channel; and a channel id with a
 * brace or a control character is refused on every route that takes one. From
 * outside, against a real server on the test Redis.
 */
import { ConnectError, Code, createClient } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { PSTN_GATEWAY_SCOPE } from "../../src/services/ports.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { postJson } from "../harness/http.js";
import { ROUTES } from "../harness/routes.js";
import { openSse } from "../harness/sse.js";
import { ADMIN_PROTOCOLS, adminToken, callAdmin } from "../e2e/helpers/channel-admin.js";
import { expectError } from "../e2e/helpers/contract.js";
import { readState, STATE_PROTOCOLS, scopedToken } from "../e2e/helpers/pstn-state.js";
import { WATCH_ROUTE } from "../e2e/helpers/pstn-watch.js";
import { transport } from "../e2e/helpers/rpc.js";

const PROJECT = "pa";
const CHANNEL = "x/y";
/** The project and channel whose keys would be PROJECT's CHANNEL's. */
const LOOKALIKE = { project: "pa/x", channel: "y" };
const UID = "secret-caller";

let bl: Boardline;
let hostPassphrase: string;

beforeAll(async () => {
  bl = await startBoardline({ store: "redis" });
  const created = await callAdmin(bl, "json", "createChannel", { channel_id: CHANNEL }, await adminToken(bl, PROJECT));
  expect(created.ok, JSON.stringify(created)).toBe(true);
  hostPassphrase = String(created.ok && created.body["host_passphrase"]);
  const muted = await postJson(
    bl,
    ROUTES.mute,
    { uid: UID, passphrase: hostPassphrase, mute: true },
    { token: await bl.token(PROJECT, "host") },
  );
  expect(muted.status, muted.text).toBe(200);
});
afterAll(async () => {
  await bl?.close();
});

const gateway = (project: string) => scopedToken(bl, project, "gateway", [PSTN_GATEWAY_SCOPE]);

describe("project pa's channel x/y, and tokens of project pa/x", () => {
  test("the control: pa's gateway reads x/y and sees the participant", async () => {
    const answer = await readState(bl, "json", { channel_id: CHANNEL }, await gateway(PROJECT));
    expect(answer).toMatchObject({ ok: true, state: { participants: [{ uid: UID, mute: true }] } });
  });

  for (const protocol of STATE_PROTOCOLS) {
    test(`GetPstnState of channel y over ${protocol}: 401, no participant`, async () => {
      const answer = await readState(bl, protocol, { channel_id: LOOKALIKE.channel }, await gateway(LOOKALIKE.project));
      expect(answer).toMatchObject({ ok: false, code: 401 });
      expect(JSON.stringify(answer)).not.toContain(UID);
    });
  }

  test("WatchPstnEvents of channel y as server-sent events: 401 before the stream starts", async () => {
    const sse = await openSse(`${bl.url}${WATCH_ROUTE}`, {
      token: await gateway(LOOKALIKE.project),
      body: { channel_ids: [LOOKALIKE.channel], after: "0-0" },
    });
    try {
      expect(sse.status).toBe(401);
      expect(sse.body).toMatchObject({ error: { code: 401 } });
      expect(await sse.next()).toBeUndefined();
    } finally {
      sse.close();
    }
  });

  test("WatchPstnEvents of channel y over gRPC: UNAUTHENTICATED, no event", async () => {
    const pstn = createClient(PstnService, transport(bl, "grpc h2"));
    const headers = { authorization: `Bearer ${await gateway(LOOKALIKE.project)}` };
    const seen: string[] = [];
    const error = await (async () => {
      const request = { channelIds: [LOOKALIKE.channel], after: "0-0" };
      for await (const event of pstn.watchPstnEvents(request, { headers, timeoutMs: 5000 })) {
        seen.push(event.uid);
      }
    })().catch((e: unknown) => e);
    expect(seen).toEqual([]);
    expect(error).toBeInstanceOf(ConnectError);
    expect((error as ConnectError).code).toBe(Code.Unauthenticated);
    expect((error as ConnectError).findDetails(ErrorInfoSchema)[0]?.metadata["code"]).toBe("401");
  });

  test("Mute with pa's host passphrase: 401, the state unchanged", async () => {
    const res = await postJson(
      bl,
      ROUTES.mute,
      { uid: UID, passphrase: hostPassphrase, mute: false },
      { token: await bl.token(LOOKALIKE.project, "host") },
    );
    expectError(res, 401, 401);
    expect(await bl.store.getMuteState(PROJECT, CHANNEL)).toEqual({ [UID]: true });
  });

  for (const protocol of ADMIN_PROTOCOLS) {
    test(`ChannelAdminService GetChannel and DeleteChannel of channel y over ${protocol}: 401, x/y untouched`, async () => {
      const admin = await adminToken(bl, LOOKALIKE.project);
      for (const method of ["getChannel", "deleteChannel"] as const) {
        const answer = await callAdmin(bl, protocol, method, { channel_id: LOOKALIKE.channel }, admin);
        expect(answer, method).toMatchObject({ ok: false, code: 401 });
      }
      const still = await callAdmin(bl, "json", "getChannel", { channel_id: CHANNEL }, await adminToken(bl, PROJECT));
      expect(still).toMatchObject({ ok: true, body: { channel: { channel_id: CHANNEL } } });
    });
  }

  for (const project of ["pa{", "}pa", "pa\u0000", ""]) {
    test(`a token of project ${JSON.stringify(project)} is refused too`, async () => {
      const answer = await readState(bl, "json", { channel_id: "y" }, await gateway(project));
      expect(answer).toMatchObject({ ok: false, code: 401 });
    });
  }
});

describe("channel ids the key schema cannot hold are refused on every route that takes one", () => {
  const BAD = ["a{b", "}a", "a\u0001b", "a\u007f"];

  for (const protocol of ADMIN_PROTOCOLS) {
    test(`ChannelAdminService over ${protocol}: 611`, async () => {
      const admin = await adminToken(bl, PROJECT);
      for (const channel_id of BAD) {
        for (const [method, extra] of [
          ["createChannel", {}],
          ["getChannel", {}],
          ["rotatePassphrase", { role: "PASSPHRASE_ROLE_HOST" }],
          ["deleteChannel", {}],
        ] as const) {
          const answer = await callAdmin(bl, protocol, method, { channel_id, ...extra }, admin);
          expect(answer, `${method} ${JSON.stringify(channel_id)}`).toMatchObject({ ok: false, code: 611 });
        }
      }
    });
  }

  test("GetPstnState and WatchPstnEvents (JSON and gRPC): 611", async () => {
    const token = await gateway(PROJECT);
    const pstn = createClient(PstnService, transport(bl, "grpc h2"));
    for (const channel_id of BAD) {
      for (const protocol of ["json", "grpc h2"] as const) {
        const answer = await readState(bl, protocol, { channel_id }, token);
        expect(answer, `${protocol} ${JSON.stringify(channel_id)}`).toMatchObject({ ok: false, code: 611 });
      }
      const sse = await openSse(`${bl.url}${WATCH_ROUTE}`, { token, body: { channel_ids: [channel_id] } });
      sse.close();
      expect(sse.status, JSON.stringify(channel_id)).toBe(400);
      const error = await (async () => {
        const request = { channelIds: [channel_id] };
        for await (const _ of pstn.watchPstnEvents(request, { headers: { authorization: `Bearer ${token}` } })) {
          // a refused watch has no events
        }
      })().catch((e: unknown) => e);
      expect((error as ConnectError).code, JSON.stringify(channel_id)).toBe(Code.InvalidArgument);
    }
  });
});
