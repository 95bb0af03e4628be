/**
 * The clients of the rolling-restart test, all talking to the load balancer
 * only: JSON mutes over HTTP/1.1 keep-alive (node:http, one connection per
 * client), gRPC mutes with @grpc/grpc-js over h2c, and telephone-gateway
 * watchers (WatchPstnEvents over gRPC or server-sent events) that open their
 * stream again with their cursor whenever it ends, as docs/api.md tells a
 * gateway to. Each records what it saw, and what was not as documented.
 */
import http from "node:http";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  type MuteResponse,
  MuteRequestSchema,
  MuteResponseSchema,
  type PstnEvent,
  PstnEventSchema,
  WatchPstnEventsRequestSchema,
} from "../../gen/channel/v1/pstn_pb.js";
import type { LoadChannel, Outcome } from "../harness/instance-load.js";
import { ROUTES, RPC_PATHS } from "../harness/routes.js";
import { openSse } from "../harness/sse.js";
import { sleep } from "../harness/sleep.js";
import { WATCH_ROUTE, WATCH_RPC } from "../e2e/helpers/pstn-watch.js";
import { boardlineErrorInfo } from "../harness/grpc-status-details.js";

/** Longer than any documented bound: only a hung call meets it. */
const CALL_TIMEOUT_MS = 5_000;

/** A mute as its client saw it: an `Outcome` (status 200, a documented code, or 0: no answer) and what was wrong. */
export interface MuteResult extends Outcome {
  /** Empty when the answer was exactly as documented; else what it was (an error, a reset, a wrong body). */
  readonly problem: string;
}

/** Mutes in a loop until `stop()`: uids `<name>-<n>`, alternately muting and unmuting, over the channels in turn. */
export abstract class Muter {
  readonly results: MuteResult[] = [];
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    readonly name: string,
    private readonly channels: readonly LoadChannel[],
    private readonly pauseMs: number,
  ) {}

  protected abstract mute(at: LoadChannel, uid: string, mute: boolean): Promise<{ status: number; problem: string }>;
  abstract close(): void;

  start(): void {
    this.running = (async () => {
      for (let n = 0; !this.stopped; n++) {
        const channel = (n + this.name.length) % this.channels.length;
        const uid = `${this.name}-${n}`;
        const start = Date.now();
        const { status, problem } = await this.mute(this.channels[channel] as LoadChannel, uid, n % 2 === 0);
        const kind = this.name.startsWith("json") ? "json mute" : "grpc mute";
        // `instance` is unknown behind the balancer: -1.
        this.results.push({
          instance: -1,
          kind,
          channel,
          key: uid,
          mute: n % 2 === 0,
          status,
          start,
          end: Date.now(),
          problem,
        });
        await sleep(this.pauseMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    this.close();
  }
}

/** JSON mutes on one keep-alive HTTP/1.1 connection at a time (node:http Agent, maxSockets 1). */
export class JsonMuter extends Muter {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  /** The connections it opened: 1 when the balancer kept it throughout. */
  connections = 0;

  constructor(
    name: string,
    channels: readonly LoadChannel[],
    pauseMs: number,
    private readonly url: string,
    private readonly token: string,
  ) {
    super(name, channels, pauseMs);
  }

  protected mute(at: LoadChannel, uid: string, mute: boolean): Promise<{ status: number; problem: string }> {
    const body = JSON.stringify({ uid, passphrase: at.hostPassphrase, mute });
    return new Promise((resolve) => {
      const req = http.request(`${this.url}${ROUTES.mute}`, {
        method: "POST",
        agent: this.agent,
        timeout: CALL_TIMEOUT_MS,
        headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
      });
      req.on("socket", (s) => {
        if (!(s as { counted?: boolean }).counted) {
          (s as { counted?: boolean }).counted = true;
          this.connections++;
        }
      });
      req.on("timeout", () => req.destroy(new Error("timed out")));
      req.on("error", (e: NodeJS.ErrnoException) =>
        resolve({ status: 0, problem: `no answer: ${e.code ?? e.message}` }),
      );
      req.on("response", (res) => {
        let text = "";
        res.on("data", (d) => {
          text += String(d);
        });
        res.on("error", (e: NodeJS.ErrnoException) =>
          resolve({ status: 0, problem: `cut off: ${e.code ?? e.message}` }),
        );
        res.on("end", () => resolve(judgeJson(res, text, uid, mute)));
      });
      req.end(body);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

function judgeJson(res: http.IncomingMessage, text: string, uid: string, mute: boolean) {
  const status = res.statusCode ?? 0;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { status, problem: `${status}, not JSON: ${text.slice(0, 80)}` };
  }
  if (status === 200) {
    const ok = JSON.stringify(body) === JSON.stringify({ uid, mute });
    return { status, problem: ok ? "" : `200 with ${text.slice(0, 80)}` };
  }
  // Not a 200: in the error table's shape or not, it is still a problem the test counts.
  const e = (body as { error?: { code?: unknown; message?: unknown } }).error;
  const documented = typeof e?.code === "number" && typeof e.message === "string";
  return { status, problem: `${status}${documented ? " (documented shape)" : ""}: ${text.slice(0, 120)}` };
}

/** gRPC mutes with @grpc/grpc-js on a channel of its own (its own HTTP/2 connection to the balancer). */
export class GrpcMuter extends Muter {
  private readonly client: grpc.Client;
  private readonly metadata = new grpc.Metadata();

  constructor(name: string, channels: readonly LoadChannel[], pauseMs: number, url: string, token: string) {
    super(name, channels, pauseMs);
    this.client = new grpc.Client(new URL(url).host, grpc.credentials.createInsecure(), {
      "grpc.use_local_subchannel_pool": 1,
    });
    this.metadata.set("authorization", `Bearer ${token}`);
  }

  protected mute(at: LoadChannel, uid: string, mute: boolean): Promise<{ status: number; problem: string }> {
    const input = { $typeName: "channel.v1.MuteRequest", uid, passphrase: at.hostPassphrase, mute } as const;
    return new Promise((resolve) => {
      this.client.makeUnaryRequest(
        RPC_PATHS.mute,
        (m: typeof input) => Buffer.from(toBinary(MuteRequestSchema, m)),
        (b: Buffer) => fromBinary(MuteResponseSchema, b),
        input,
        this.metadata,
        { deadline: Date.now() + CALL_TIMEOUT_MS },
        (err: grpc.ServiceError | null, res?: MuteResponse) => {
          if (err === null) {
            const ok = res?.uid === uid && res.mute === mute;
            resolve({ status: 200, problem: ok ? "" : `OK with ${JSON.stringify(res)}` });
            return;
          }
          const code = documentedCode(err.metadata);
          resolve({
            status: code ?? 0,
            problem: `gRPC ${grpc.status[err.code]} ${code === undefined ? "(no ErrorInfo: not boardline's)" : `(${code})`}: ${err.details}`,
          });
        },
      );
    });
  }

  close(): void {
    this.client.close();
  }
}

/** The `metadata.code` of boardline's ErrorInfo in `grpc-status-details-bin`; undefined when there is none. */
function documentedCode(metadata: grpc.Metadata): number | undefined {
  const bin = metadata.get("grpc-status-details-bin")[0];
  if (!(bin instanceof Buffer)) return undefined;
  try {
    const info = boardlineErrorInfo(bin);
    return info === undefined ? undefined : Number(info.metadata.code);
  } catch {
    return undefined;
  }
}

export interface WatchEnd {
  readonly at: number;
  /** Empty when the stream ended as documented for a draining instance: UNAVAILABLE / `event: error` 503. */
  readonly problem: string;
}

/**
 * A gateway's watch of `channels` from the start of their streams ("0-0"),
 * opened again with the last cursor whenever it ends, over gRPC (grpc-js, a
 * channel of its own) or SSE (fetch, `Last-Event-ID`).
 */
export class GatewayWatcher {
  /** Event ids received, per channel, in arrival order (duplicates kept). */
  readonly got = new Map<string, string[]>();
  readonly ends: WatchEnd[] = [];
  /** Opens refused, or that failed (a documented 429/503 answer, or no answer at all). */
  readonly refusedOpens: string[] = [];
  opens = 0;
  private cursor = "0-0";
  private stopped = false;
  private close: () => void = () => {};
  private running: Promise<void> | undefined;
  private readonly client: grpc.Client | undefined;

  constructor(
    readonly name: string,
    readonly protocol: "grpc" | "sse",
    readonly channels: readonly string[],
    private readonly url: string,
    private readonly token: string,
  ) {
    for (const c of channels) this.got.set(c, []);
    this.client =
      protocol === "grpc"
        ? new grpc.Client(new URL(url).host, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 })
        : undefined;
  }

  start(): void {
    this.running = (async () => {
      while (!this.stopped) {
        this.opens++;
        const problem = this.protocol === "grpc" ? await this.grpcOnce() : await this.sseOnce();
        if (this.stopped) break;
        if (problem !== undefined) this.ends.push({ at: Date.now(), problem });
        await sleep(problem === "" ? 0 : 100);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.close();
    await this.running;
    this.client?.close();
  }

  private received(channel: string, id: string, cursor: string): void {
    this.got.get(channel)?.push(id);
    this.cursor = cursor;
  }

  /** One stream until it ends: "" for a documented end, a description otherwise, undefined when refused. */
  private grpcOnce(): Promise<string | undefined> {
    const metadata = new grpc.Metadata();
    metadata.set("authorization", `Bearer ${this.token}`);
    const input = {
      $typeName: "channel.v1.WatchPstnEventsRequest" as const,
      channelIds: [...this.channels],
      after: this.cursor,
      includeLine: false,
    };
    const call = (this.client as grpc.Client).makeServerStreamRequest(
      WATCH_RPC,
      (m: typeof input) => Buffer.from(toBinary(WatchPstnEventsRequestSchema, m)),
      (b: Buffer) => fromBinary(PstnEventSchema, b),
      input,
      metadata,
    );
    this.close = () => call.cancel();
    let events = 0;
    call.on("data", (e: PstnEvent) => {
      events++;
      this.received(e.channelId, e.eventId, e.cursor);
    });
    return new Promise((resolve) => {
      call.on("error", (e: grpc.ServiceError) => {
        const code = documentedCode(e.metadata);
        if (e.code === grpc.status.UNAVAILABLE && code === 503) return resolve("");
        // Refused at once (no event, a documented code): the open failed, not the stream.
        const what = `gRPC ${grpc.status[e.code]} (${code ?? "no ErrorInfo"}): ${e.details}`;
        if (events === 0 && code !== undefined) {
          this.refusedOpens.push(what);
          return resolve(undefined);
        }
        resolve(what);
      });
      call.on("end", () => resolve("ended with OK"));
    });
  }

  private async sseOnce(): Promise<string | undefined> {
    let stream: Awaited<ReturnType<typeof openSse>>;
    try {
      stream = await openSse(`${this.url}${WATCH_ROUTE}`, {
        token: this.token,
        body: { channel_ids: this.channels, after: "0-0" },
        // What a standard EventSource does: the first request again, with the last id.
        ...(this.cursor === "0-0" ? {} : { lastEventId: this.cursor }),
      });
    } catch (e) {
      this.refusedOpens.push(`no answer: ${(e as Error).message}`);
      return undefined;
    }
    this.close = () => stream.close();
    if (stream.status !== 200) {
      this.refusedOpens.push(`${stream.status}: ${JSON.stringify(stream.body)}`);
      return undefined;
    }
    for (let e = await stream.next(); e !== undefined; e = await stream.next()) {
      if (e.event === "error") {
        const code = (e.data as { error?: { code?: unknown } }).error?.code;
        return code === 503 ? "" : `event: error ${JSON.stringify(e.data)}`;
      }
      const d = e.data as { channel_id: string; event_id: string };
      this.received(d.channel_id, d.event_id, e.id ?? "");
    }
    return "cut off without event: error";
  }
}
