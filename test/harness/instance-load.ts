/**
 * Clients of several boardline instances and a record of every call they make,
 * for the many-instances test and soak: JSON mutes (fetch, HTTP/1.1 keep-alive),
 * gRPC mutes (connect-es's gRPC transport, one HTTP/2 session per instance)
 * and JSON ConvertFiles, each call ending as an `Outcome` — the HTTP status
 * (for gRPC the documented code from its ErrorInfo), or 0 when no answer came
 * (the connection failed, as it does for calls in flight to a killed instance).
 */
import { createClient } from "@connectrpc/connect";
import { ConnectError, type Client } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { ErrorInfoSchema } from "../../gen/google/rpc/error_details_pb.js";
import type { Cluster, Redis } from "ioredis";
import { ROUTES } from "./routes.js";

export type CallKind = "json mute" | "grpc mute" | "convert" | "invalid mute";

export interface Outcome {
  readonly instance: number;
  readonly kind: CallKind;
  /** Index of the channel (in the load's channel list). */
  readonly channel: number;
  /** The uid of a mute; the task uuid of a ConvertFile answered 200; else "". */
  readonly key: string;
  readonly mute: boolean;
  /** HTTP status, or the documented code of a gRPC error; 0 = no answer. */
  readonly status: number;
  readonly start: number;
  readonly end: number;
}

/** A channel the load mutes in: its position and host passphrase. */
export interface LoadChannel {
  readonly channel: string;
  readonly hostPassphrase: string;
}

/** A deadline for every call: longer than any documented bound, so only a hung call meets it. */
const CALL_TIMEOUT_MS = 5_000;

export class InstanceClient {
  private readonly grpc: Client<typeof PstnService>;

  constructor(
    readonly index: number,
    private readonly url: string,
    private readonly token: string,
  ) {
    this.grpc = createClient(PstnService, createGrpcTransport({ baseUrl: url }));
  }

  /** One call of `kind`; a mute's uid is `uid`, a mute with `mute` undefined is invalid (400). */
  async call(kind: CallKind, channel: number, at: LoadChannel, uid: string, mute: boolean): Promise<Outcome> {
    const start = Date.now();
    let status = 0;
    let key = kind === "convert" ? "" : uid;
    try {
      if (kind === "grpc mute") status = await this.grpcMute(at, uid, mute);
      else if (kind === "convert") [status, key] = await this.convert(at);
      else status = await this.jsonMute(at, uid, kind === "invalid mute" ? undefined : mute);
    } catch {
      status = 0;
    }
    return { instance: this.index, kind, channel, key, mute, status, start, end: Date.now() };
  }

  private async jsonMute(at: LoadChannel, uid: string, mute: boolean | undefined): Promise<number> {
    const res = await this.post(ROUTES.mute, { uid, passphrase: at.hostPassphrase, mute });
    await res.arrayBuffer();
    return res.status;
  }

  private async convert(at: LoadChannel): Promise<[number, string]> {
    const res = await this.post(ROUTES.convert, {
      resource_url: "https://docs.example.com/instances.pptx",
      passphrase: at.hostPassphrase,
      conversion_type: "static",
    });
    if (res.status !== 200) {
      await res.arrayBuffer();
      return [res.status, ""];
    }
    const { task_uuid } = (await res.json()) as { task_uuid: string };
    return [200, task_uuid];
  }

  private async grpcMute(at: LoadChannel, uid: string, mute: boolean): Promise<number> {
    try {
      await this.grpc.mute(
        { uid, passphrase: at.hostPassphrase, mute },
        { headers: { authorization: `Bearer ${this.token}` }, timeoutMs: CALL_TIMEOUT_MS },
      );
      return 200;
    } catch (e) {
      // An answer of boardline carries its ErrorInfo; a failed connection has none.
      const code = e instanceof ConnectError ? e.findDetails(ErrorInfoSchema)[0]?.metadata.code : undefined;
      return code === undefined ? 0 : Number(code);
    }
  }

  private post(path: string, body: unknown): Promise<Response> {
    return fetch(`${this.url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
    });
  }
}

/** Outcomes by instance: how many, how many 200, and the share of 200 (1 when there were none). */
export function successByInstance(outcomes: readonly Outcome[], instances: number) {
  return Array.from({ length: instances }, (_, i) => {
    const mine = outcomes.filter((o) => o.instance === i);
    const ok = mine.filter((o) => o.status === 200 || (o.kind === "invalid mute" && o.status === 400)).length;
    return { instance: i, calls: mine.length, ok, rate: mine.length === 0 ? 1 : ok / mine.length };
  });
}

/** The documented MAXLEN of a channel's pstn-events stream. */
const MUTE_EVENTS_KEPT = 10_000;

/** What the acknowledged calls should have left in Redis, and is not there. */
export interface Missing {
  /** Mutes answered 200 whose uid is not in the channel's mute hash with the state sent. */
  readonly mutes: string[];
  /** Mutes answered 200 with no entry on the channel's event stream. */
  readonly events: string[];
  /** ConvertFiles answered 200 whose task record does not exist. */
  readonly conversions: string[];
}

/** Reads the documented records (docs/redis-schema.md) with a raw client, past boardline's code. */
export async function missingWrites(
  redis: Redis | Cluster,
  at: { readonly prefix: string; readonly project: string; readonly channels: readonly LoadChannel[] },
  outcomes: readonly Outcome[],
): Promise<Missing> {
  const acknowledged = outcomes.filter((o) => o.status === 200);
  const missing: Missing = { mutes: [], events: [], conversions: [] };
  for (const [i, { channel }] of at.channels.entries()) {
    const tag = `${at.prefix}chan:{${at.project}/${channel}}`;
    const states = await redis.hgetall(`${tag}:pstn-mute`);
    const entries = await redis.xrange(`${tag}:pstn-events`, "-", "+");
    const evented = new Set(entries.map(([, fields]) => fields[fields.indexOf("uid") + 1]));
    // The stream keeps its newest ~10 000 entries (MAXLEN ~): once that full, only
    // the mutes sent after its oldest kept entry was written must still be on it.
    const oldest = entries.length >= MUTE_EVENTS_KEPT ? Number(entries[0]?.[0].split("-")[0]) : 0;
    for (const o of acknowledged.filter((a) => a.kind !== "convert" && a.channel === i)) {
      if (states[o.key] !== (o.mute ? "1" : "0")) missing.mutes.push(o.key);
      if (!evented.has(o.key) && o.start > oldest) missing.events.push(o.key);
    }
  }
  for (const o of acknowledged.filter((a) => a.kind === "convert")) {
    if ((await redis.exists(`${at.prefix}conv:{${o.key}}`)) !== 1) missing.conversions.push(o.key);
  }
  return missing;
}

/** The tasks among `uuids` whose record does not say `Finished` (yet). */
export async function unfinished(redis: Redis | Cluster, prefix: string, uuids: readonly string[]): Promise<string[]> {
  const statuses = await Promise.all(uuids.map((u) => redis.hget(`${prefix}conv:{${u}}`, "status")));
  return uuids.filter((_, i) => statuses[i] !== "Finished");
}
