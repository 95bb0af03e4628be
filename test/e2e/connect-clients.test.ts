/**
 * connect-es clients over every protocol of the one port (Connect on HTTP/1.1
 * and HTTP/2, binary and JSON; gRPC-Web; gRPC): every error case arrives as a
 * ConnectError with the right code, `rawMessage` equal to the JSON route's
 * `error.message`, and a google.rpc.ErrorInfo detail whose metadata carries
 * the numeric code. Plus the Connect protocol's own HTTP mapping, read raw.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { type ErrorCase, errorCases, GRPC, jsonMessage } from "./helpers-cases.js";
import { expectNoLeak } from "./helpers-contract.js";
import { bearer, clients, convertRequest, muteRequest, PROTOCOLS, transport } from "./helpers-rpc.js";

const TIMEOUT_MS = 250;

let bl: Boardline;
let cases: ErrorCase[];
/** The JSON route's message of each case (computed once). */
const expected = new Map<string, string>();
beforeAll(async () => {
  bl = await startBoardline({ conversionTimeoutMs: TIMEOUT_MS });
  cases = await errorCases(bl, TIMEOUT_MS);
  for (const k of cases) expected.set(k.name, await jsonMessage(bl, k));
});
afterAll(async () => {
  await bl?.close();
});

/** connect-es's Code and the gRPC status numbers are the same. */
test("the Code numbers are the gRPC ones", () => {
  expect(Code.InvalidArgument).toBe(GRPC.INVALID_ARGUMENT);
  expect(Code.DeadlineExceeded).toBe(GRPC.DEADLINE_EXCEEDED);
  expect(Code.NotFound).toBe(GRPC.NOT_FOUND);
  expect(Code.PermissionDenied).toBe(GRPC.PERMISSION_DENIED);
  expect(Code.Internal).toBe(GRPC.INTERNAL);
  expect(Code.Unavailable).toBe(GRPC.UNAVAILABLE);
  expect(Code.Unauthenticated).toBe(GRPC.UNAUTHENTICATED);
});

describe.each(PROTOCOLS)("%s", (protocol) => {
  test("every error case: code, rawMessage, ErrorInfo", async () => {
    const { pstn, whiteboard } = clients(transport(bl, protocol));
    for (const k of cases) {
      const headers = bearer(k.authorization);
      if (k.fault !== undefined) bl.simulator.setFault(k.fault);
      let caught: unknown;
      try {
        if (k.op === "mute") await pstn.mute(muteRequest(k.body), { headers });
        else await whiteboard.convertFile(convertRequest(k.body), { headers });
      } catch (e) {
        caught = e;
      } finally {
        bl.simulator.clearFaults();
      }
      expect(caught, k.name).toBeInstanceOf(ConnectError);
      const err = caught as ConnectError;
      expect({ name: k.name, code: Code[err.code] }).toEqual({ name: k.name, code: Code[k.grpc] });
      expect({ name: k.name, rawMessage: err.rawMessage }).toEqual({ name: k.name, rawMessage: expected.get(k.name) });
      const infos = err.findDetails(ErrorInfoSchema);
      expect(infos, k.name).toHaveLength(1);
      expect(infos[0]?.metadata["code"], k.name).toBe(String(k.code));
      expect(infos[0]?.domain).toBe("boardline");
    }
  });
});

describe("the Connect protocol on the wire", () => {
  const HTTP_OF: Record<number, [number, string]> = {
    [GRPC.INVALID_ARGUMENT]: [400, "invalid_argument"],
    [GRPC.UNAUTHENTICATED]: [401, "unauthenticated"],
    [GRPC.PERMISSION_DENIED]: [403, "permission_denied"],
    [GRPC.NOT_FOUND]: [404, "not_found"],
    [GRPC.UNAVAILABLE]: [503, "unavailable"],
    [GRPC.DEADLINE_EXCEEDED]: [504, "deadline_exceeded"],
    [GRPC.INTERNAL]: [500, "internal"],
  };

  test("every error case: HTTP status, code name and message of the Connect JSON error", async () => {
    for (const k of cases) {
      const path = k.op === "mute" ? "/channel.v1.PstnService/Mute" : "/whiteboard.v1.WhiteboardService/ConvertFile";
      if (k.fault !== undefined) bl.simulator.setFault(k.fault);
      const res = await fetch(`${bl.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "connect-protocol-version": "1", ...bearer(k.authorization) },
        body: JSON.stringify(k.body),
      });
      bl.simulator.clearFaults();
      const [status, codeName] = HTTP_OF[k.grpc] as [number, string];
      const body = (await res.json()) as { code: string; message: string; details?: unknown[] };
      expect({ name: k.name, status: res.status, code: body.code, message: body.message }).toEqual({
        name: k.name,
        status,
        code: codeName,
        message: expected.get(k.name),
      });
      expect(body.details, k.name).toHaveLength(1);
      expectNoLeak(JSON.stringify(body));
    }
  });
});
