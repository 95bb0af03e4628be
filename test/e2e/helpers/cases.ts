/**
 * The error cases the RPC suites replay: each one is a request that can be
 * expressed as a protobuf message (so as JSON too), and the row of the error
 * table (docs/architecture.md, "Error table") it must land on. (The conversion
 * backend's faults no longer reach ConvertFile, which only queues: their rows
 * are checked on CancelConversion, test/e2e/grpc-js.test.ts.) A suite sends it to the JSON route first,
 * and then expects the RPC to carry the very same message text.
 */
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import type { Boardline } from "../../harness/boardline.js";
import { postJson } from "../../harness/http.js";
import { convertBody, muteBody } from "../../harness/request-bodies.js";
import { type Op, ROUTES } from "../../harness/routes.js";
import { expectError, signToken } from "./contract.js";

/** gRPC status codes (the same numbers as connect-es's `Code`). */
export const GRPC = {
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  PERMISSION_DENIED: 7,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  UNAUTHENTICATED: 16,
} as const;

export interface ErrorCase {
  readonly name: string;
  readonly op: Op;
  /** proto3 JSON of the request (valid JSON for the route, and a valid protobuf message). */
  readonly body: Record<string, unknown>;
  /** The Authorization header; undefined sends none. */
  readonly authorization: string | undefined;
  readonly grpc: number;
  readonly http: number;
  readonly code: number;
}

/** The cases, for a server of the seeded world. */
export async function errorCases(bl: Boardline): Promise<ErrorCase[]> {
  const w = bl.world;
  const valid = `Bearer ${await bl.token()}`;
  const bare = `Bearer ${await bl.token(w.bareProject)}`;
  const expired = `Bearer ${await signToken(bl, { expSeconds: -3600 })}`;
  const wrongKey = `Bearer ${await signToken(bl, { secret: new Uint8Array(randomBytes(32)) })}`;
  const noProject = `Bearer ${await signToken(bl, { claims: { role: "host" } })}`;
  const m = (over: Record<string, unknown>) => muteBody(bl, over);
  const c = (over: Record<string, unknown>) => convertBody(bl, over);
  const invalid = { grpc: GRPC.INVALID_ARGUMENT, http: 400, code: 611 };
  const unauthenticated = { grpc: GRPC.UNAUTHENTICATED, http: 401, code: 401 };
  const denied = { grpc: GRPC.PERMISSION_DENIED, http: 403, code: 403 };
  const notFound = { grpc: GRPC.NOT_FOUND, http: 404, code: 404 };
  return [
    // 611: validation clauses with ':', ',', '[', '`', '\' and spaces in them.
    { name: "mute: uid empty", op: "mute", body: m({ uid: "" }), authorization: valid, ...invalid },
    {
      name: "mute: uid with a control character",
      op: "mute",
      body: m({ uid: "a\u0007b" }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "mute: uid of 256 characters",
      op: "mute",
      body: m({ uid: "ü".repeat(256) }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "mute: passphrase of 257 characters",
      op: "mute",
      body: m({ passphrase: "p".repeat(257) }),
      authorization: valid,
      ...invalid,
    },
    { name: "mute: mute missing", op: "mute", body: m({ mute: undefined }), authorization: valid, ...invalid },
    {
      name: "convert: conversion_type not in the list",
      op: "convert",
      body: c({ conversion_type: "pdf" }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "convert: conversion_scale above 3",
      op: "convert",
      body: c({ conversion_scale: 3.5 }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "convert: conversion_scale below 0.1",
      op: "convert",
      body: c({ conversion_scale: 0.05 }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "convert: resource_url ftp",
      op: "convert",
      body: c({ resource_url: "ftp://a.example/b.pdf" }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "convert: resource_url relative",
      op: "convert",
      body: c({ resource_url: "/b.pdf" }),
      authorization: valid,
      ...invalid,
    },
    {
      name: "convert: resource_url missing",
      op: "convert",
      body: c({ resource_url: undefined }),
      authorization: valid,
      ...invalid,
    },
    { name: "convert: passphrase empty", op: "convert", body: c({ passphrase: "" }), authorization: valid, ...invalid },
    // 401
    { name: "mute: no token", op: "mute", body: m({}), authorization: undefined, ...unauthenticated },
    { name: "mute: not Bearer", op: "mute", body: m({}), authorization: "Basic YTpi", ...unauthenticated },
    { name: "mute: malformed token", op: "mute", body: m({}), authorization: "Bearer x.y", ...unauthenticated },
    { name: "mute: expired token", op: "mute", body: m({}), authorization: expired, ...unauthenticated },
    {
      name: "convert: token signed with another key",
      op: "convert",
      body: c({}),
      authorization: wrongKey,
      ...unauthenticated,
    },
    {
      name: "convert: token without the project claim",
      op: "convert",
      body: c({}),
      authorization: noProject,
      ...unauthenticated,
    },
    {
      name: "convert: no token and an invalid body",
      op: "convert",
      body: c({ conversion_type: "x" }),
      authorization: undefined,
      ...unauthenticated,
    },
    // 403 / 404
    {
      name: "mute: unknown passphrase",
      op: "mute",
      body: m({ passphrase: "nobody's" }),
      authorization: valid,
      ...denied,
    },
    {
      name: "mute: attendee passphrase",
      op: "mute",
      body: m({ passphrase: w.attendeePassphrase }),
      authorization: valid,
      ...denied,
    },
    {
      name: "mute: another project's passphrase",
      op: "mute",
      body: m({ passphrase: w.otherHostPassphrase }),
      authorization: valid,
      ...denied,
    },
    {
      name: "convert: whiteboard not set up",
      op: "convert",
      body: c({ passphrase: w.bareHostPassphrase }),
      authorization: bare,
      ...denied,
    },
    {
      name: "convert: unknown passphrase",
      op: "convert",
      body: c({ passphrase: "nobody's" }),
      authorization: valid,
      ...notFound,
    },
    {
      name: "convert: another project's passphrase",
      op: "convert",
      body: c({ passphrase: w.otherHostPassphrase }),
      authorization: valid,
      ...notFound,
    },
  ];
}

/** Runs the case on its JSON route; checks the row and returns the message. */
export async function jsonMessage(bl: Boardline, k: ErrorCase): Promise<string> {
  const res = await postJson(
    bl,
    ROUTES[k.op],
    k.body,
    k.authorization === undefined ? { token: null } : { authorization: k.authorization },
  );
  const message = expectError(res, k.http, k.code);
  if (k.http === 401) expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
  return message;
}
