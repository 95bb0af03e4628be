/**
 * The watchers of the reconnect-storm test: WatchPstnEvents over
 * gRPC, many streams on a few HTTP/2 connections (node:http2, as a gateway's
 * gRPC library multiplexes them), and over server-sent events, one HTTP/1.1
 * connection each (node:http, no keep-alive pool). Each watch records when
 * its answer came and what it was (open, or the refusal with its code and
 * Retry-After), the uids of the events it got, and how it ended, if it did.
 */
import http from "node:http";
import http2 from "node:http2";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { PstnEventSchema, WatchPstnEventsRequestSchema } from "../../gen/channel/v1/pstn_pb.js";
import { WATCH_ROUTE, WATCH_RPC } from "../e2e/helpers/pstn-watch.js";
import { boardlineErrorInfo } from "../harness/grpc-status-details.js";

/** How a watch was answered: open (a stream), or refused with a documented code. */
export interface WatchAnswer {
  readonly open: boolean;
  /** The error table's documented code of a refusal (429, 503…). */
  readonly code?: number;
  /** gRPC status of a refusal (8 = RESOURCE_EXHAUSTED, 14 = UNAVAILABLE). */
  readonly grpcStatus?: number;
  /** Retry-After (SSE) or ErrorInfo's retry_after_seconds (gRPC), in seconds. */
  readonly retryAfterSeconds?: number;
  /** Its message. */
  readonly message?: string;
}

export class StormWatch {
  readonly startedAt = performance.now();
  answeredAt: number | undefined;
  answer: WatchAnswer | undefined;
  /** When the first event came (performance.now()). */
  firstEventAt: number | undefined;
  /** The uids of the events received, in order. */
  readonly uids: string[] = [];
  /** Why the stream ended after it opened (undefined while it is open). */
  ended: string | undefined;
  private onEvent: (() => void) | undefined;
  close: () => void = () => {};

  constructor(
    readonly protocol: "grpc" | "sse",
    readonly channel: string,
  ) {}

  answered(answer: WatchAnswer): void {
    if (this.answer !== undefined) return;
    this.answeredAt = performance.now();
    this.answer = answer;
  }

  event(uid: string): void {
    this.firstEventAt ??= performance.now();
    this.uids.push(uid);
    this.onEvent?.();
  }

  end(why: string): void {
    if (this.answer === undefined) this.answered({ open: false });
    if (this.answer?.open === true && this.ended === undefined) this.ended = why;
  }

  /** Calls `f` at every event. */
  listen(f: () => void): void {
    this.onEvent = f;
  }
}

/** WatchPstnEvents of `channel` after `after` ("": from now on), as one stream of `session`. */
export function grpcWatch(
  session: http2.ClientHttp2Session,
  token: string,
  channel: string,
  after: string,
): StormWatch {
  const w = new StormWatch("grpc", channel);
  const stream = session.request({
    ":method": "POST",
    ":path": WATCH_RPC,
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${token}`,
  });
  const message = toBinary(
    WatchPstnEventsRequestSchema,
    create(WatchPstnEventsRequestSchema, { channelIds: [channel], after }),
  );
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  stream.end(frame);
  const onStatus = (headers: http2.IncomingHttpHeaders) => {
    const status = headers["grpc-status"];
    if (status === undefined) return false;
    const refusal = {
      ...grpcRefusal(Number(status), headers["grpc-status-details-bin"]),
      message: decodeURIComponent(String(headers["grpc-message"] ?? "")),
    };
    if (w.answer === undefined) w.answered(refusal);
    else w.end(`grpc-status ${status}: ${decodeURIComponent(String(headers["grpc-message"] ?? ""))}`);
    return true;
  };
  // connect-es sends the headers with the first message or with the status: the watch is
  // established at its first message, refused when the status comes before any.
  stream.on("response", (headers) => {
    if (!onStatus(headers) && headers[":status"] !== 200) w.answered({ open: false, code: headers[":status"] ?? 0 });
  });
  stream.on("trailers", (trailers) => void onStatus(trailers));
  let buffer: Buffer = Buffer.alloc(0);
  stream.on("data", (chunk: Buffer) => {
    buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
    while (buffer.length >= 5 && buffer.length >= 5 + buffer.readUInt32BE(1)) {
      const length = buffer.readUInt32BE(1);
      const event = fromBinary(PstnEventSchema, buffer.subarray(5, 5 + length));
      buffer = buffer.subarray(5 + length);
      w.answered({ open: true });
      w.event(event.uid);
    }
  });
  stream.on("error", (e) => w.end(`stream error: ${e.message}`));
  stream.on("close", () => w.end(`stream closed (rst ${stream.rstCode})`));
  w.close = () => stream.close(http2.constants.NGHTTP2_CANCEL);
  return w;
}

/** What a gRPC status with boardline's ErrorInfo says. */
function grpcRefusal(status: number, details: string | string[] | undefined): WatchAnswer {
  if (status === 0) return { open: false, grpcStatus: 0 };
  const info = typeof details === "string" ? boardlineErrorInfo(Buffer.from(details, "base64")) : undefined;
  const retry = info?.metadata.retry_after_seconds;
  return {
    open: false,
    grpcStatus: status,
    ...(info === undefined ? {} : { code: Number(info.metadata.code) }),
    ...(retry === undefined ? {} : { retryAfterSeconds: Number(retry) }),
  };
}

/** POST events:watch of `channel` after `after` ("": from now on), on a connection of its own. */
export function sseWatch(url: string, token: string, channel: string, after: string): StormWatch {
  const w = new StormWatch("sse", channel);
  const req = http.request(`${url}${WATCH_ROUTE}`, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
  });
  req.on("response", (res) => {
    res.setEncoding("utf8");
    if (res.statusCode !== 200) {
      const retry = res.headers["retry-after"];
      let body = "";
      res.on("data", (c: string) => {
        body += c;
      });
      res.on("end", () => {
        const error = body === "" ? undefined : JSON.parse(body).error;
        const code = error === undefined ? (res.statusCode ?? 0) : Number(error.code);
        const retryAfter = retry === undefined ? {} : { retryAfterSeconds: Number(retry) };
        w.answered({ open: false, code, message: String(error?.message), ...retryAfter });
      });
      return;
    }
    w.answered({ open: true });
    let buffer = "";
    res.on("data", (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.includes("event: error")) w.end(`event: error ${block}`);
        const data = block.split("\n").find((l) => l.startsWith("data: "));
        if (data !== undefined && !block.includes("event: error")) w.event(JSON.parse(data.slice(6)).uid);
      }
    });
    res.on("end", () => w.end("the event stream ended"));
    res.on("close", () => w.end("the event stream closed"));
  });
  req.on("error", (e) => w.end(`request error: ${e.message}`));
  req.end(JSON.stringify({ channel_ids: [channel], after }));
  w.close = () => req.destroy();
  return w;
}
