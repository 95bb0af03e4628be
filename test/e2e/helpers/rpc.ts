/**
 * connect-es clients of a test server over every protocol it serves on its
 * one port, and the calls of the contract expressed over any of them.
 */
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { type Client, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { MuteRequestSchema, PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { ConvertFileRequestSchema, WhiteboardService } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import type { Boardline } from "../../harness/boardline.js";

export type ProtocolName =
  | "connect h1 (binary)"
  | "connect h1 (json)"
  | "connect h2 (binary)"
  | "connect h2 (json)"
  | "grpc-web h1"
  | "grpc-web h2"
  | "grpc h2";

export const PROTOCOLS: readonly ProtocolName[] = [
  "connect h1 (binary)",
  "connect h1 (json)",
  "connect h2 (binary)",
  "connect h2 (json)",
  "grpc-web h1",
  "grpc-web h2",
  "grpc h2",
];

export function transport(bl: Boardline, name: ProtocolName): Transport {
  const baseUrl = bl.url;
  switch (name) {
    case "connect h1 (binary)":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: true });
    case "connect h1 (json)":
      return createConnectTransport({ baseUrl, httpVersion: "1.1", useBinaryFormat: false });
    case "connect h2 (binary)":
      return createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: true });
    case "connect h2 (json)":
      return createConnectTransport({ baseUrl, httpVersion: "2", useBinaryFormat: false });
    case "grpc-web h1":
      return createGrpcWebTransport({ baseUrl, httpVersion: "1.1" });
    case "grpc-web h2":
      return createGrpcWebTransport({ baseUrl, httpVersion: "2" });
    case "grpc h2":
      return createGrpcTransport({ baseUrl });
  }
}

export interface Clients {
  readonly pstn: Client<typeof PstnService>;
  readonly whiteboard: Client<typeof WhiteboardService>;
}

export function clients(t: Transport): Clients {
  return { pstn: createClient(PstnService, t), whiteboard: createClient(WhiteboardService, t) };
}

/** Request messages from the proto3 JSON a JSON route would take (undefined values: absent fields). */
export const muteRequest = (json: Record<string, unknown>) => fromJson(MuteRequestSchema, plain(json));
export const convertRequest = (json: Record<string, unknown>) => fromJson(ConvertFileRequestSchema, plain(json));

function plain(json: Record<string, unknown>): JsonObject {
  return JSON.parse(JSON.stringify(json)) as JsonObject;
}

export function bearer(authorization: string | undefined): Record<string, string> {
  return authorization === undefined ? {} : { authorization };
}
