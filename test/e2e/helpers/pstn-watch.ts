/**
 * What the WatchPstnEvents suites share: the route and RPC path, muting
 * through the JSON route (a mute acknowledged as a client sees it), the ids
 * of a channel's events, and a grpc-js server-streaming call.
 */
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { expect } from "vitest";
import { type PstnEvent, PstnEventSchema, WatchPstnEventsRequestSchema } from "../../../gen/channel/v1/pstn_pb.js";
import type { Boardline } from "../../harness/boardline.js";
import { postJson } from "../../harness/http.js";
import { ROUTES } from "../../harness/routes.js";

export const WATCH_ROUTE = "/v1/channel/pstn/events:watch";
export const WATCH_RPC = "/channel.v1.PstnService/WatchPstnEvents";

/** Mutes over the JSON route with the host passphrase and answers the event id the store recorded. */
export async function muteVia(bl: Boardline, passphrase: string, uid: string, mute = true): Promise<void> {
  const res = await postJson(bl, ROUTES.mute, { uid, passphrase, mute });
  expect(res.status, res.text).toBe(200);
}

/** The ids of a channel's events, oldest first. */
export async function eventIds(bl: Boardline, channel: string, project = bl.world.project): Promise<string[]> {
  return (await bl.store.getMuteEvents(project, channel, 10_000)).map((e) => e.id).reverse();
}

export interface GrpcJsWatch {
  readonly events: PstnEvent[];
  /** Resolves with the call's end: its error, if any. */
  readonly ended: Promise<grpc.ServiceError | undefined>;
  cancel(): void;
}

/** WatchPstnEvents with @grpc/grpc-js's own client. */
export function grpcJsWatch(
  client: grpc.Client,
  request: { channelIds: string[]; after?: string },
  token: string,
): GrpcJsWatch {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const input = { $typeName: "channel.v1.WatchPstnEventsRequest", after: "", includeLine: false, ...request } as const;
  const call = client.makeServerStreamRequest(
    WATCH_RPC,
    (m: typeof input) => Buffer.from(toBinary(WatchPstnEventsRequestSchema, m)),
    (bytes: Buffer) => fromBinary(PstnEventSchema, bytes),
    input,
    metadata,
  );
  const events: PstnEvent[] = [];
  call.on("data", (e: PstnEvent) => events.push(e));
  const ended = new Promise<grpc.ServiceError | undefined>((resolve) => {
    call.on("error", (e: grpc.ServiceError) => resolve(e));
    call.on("end", () => resolve(undefined));
  });
  return { events, ended, cancel: () => call.cancel() };
}
