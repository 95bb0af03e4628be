/**
 * A request message over MAX_BODY_BYTES on the RPC protocols: INVALID_ARGUMENT
 * with the 611 message and the ErrorInfo detail on every protocol (connect-es
 * itself would answer RESOURCE_EXHAUSTED, HTTP 429 on Connect, in its own words).
 */
import { Code, ConnectError, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, expect, test } from "vitest";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import { INVALID_REQUEST_MESSAGE } from "../../src/server/call/error-table.js";
import { type Boardline, startBoardline } from "../harness/boardline.js";

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ maxBodyBytes: 1024 });
});
afterAll(async () => {
  await bl.close();
});

const transports: Array<[string, () => Transport]> = [
  ["Connect binary", () => createConnectTransport({ baseUrl: bl.url, httpVersion: "1.1" })],
  ["Connect JSON", () => createConnectTransport({ baseUrl: bl.url, httpVersion: "1.1", useBinaryFormat: false })],
  ["gRPC-Web", () => createGrpcWebTransport({ baseUrl: bl.url, httpVersion: "1.1" })],
  ["gRPC", () => createGrpcTransport({ baseUrl: bl.url })],
];

test.each(transports)("%s: an oversize message is INVALID_ARGUMENT / 611", async (_name, make) => {
  const client = createClient(PstnService, make());
  const before = await bl.store.getMuteEvents(bl.world.project, bl.world.channel, 100);
  const err = await client
    .mute(
      { uid: "u".repeat(5000), passphrase: bl.world.hostPassphrase, mute: true },
      { headers: { authorization: `Bearer ${await bl.token()}` } },
    )
    .then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
  expect(err?.code).toBe(Code.InvalidArgument);
  expect(err?.rawMessage).toBe(`${INVALID_REQUEST_MESSAGE}: the request message is over the size limit`);
  expect(err?.findDetails(ErrorInfoSchema)[0]?.metadata.code).toBe("611");
  expect(await bl.store.getMuteEvents(bl.world.project, bl.world.channel, 100)).toEqual(before);
});
