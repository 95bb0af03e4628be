/**
 * The gateway's calls to boardline, over gRPC on loopback with its
 * `pstn.gateway` token, as a real gateway makes them: each with a deadline
 * and the stop signal, each report with the next sequence.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient, type Interceptor } from "@connectrpc/connect";
import { createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import {
  type PstnEvent,
  PstnService,
  type PstnState,
  ReportLineRequestSchema,
  type ReportLineResponse,
} from "../../../gen/channel/v1/pstn_pb.js";
import type { GatewaySettings } from "./options.js";
import type { LineCaller } from "./roster.js";
import { SequenceClock } from "./sequence-clock.js";

export type LineChange = NonNullable<MessageInitShape<typeof ReportLineRequestSchema>["change"]>;

export class LineCalls {
  readonly #client: Client<typeof PstnService>;
  readonly #sessions: Http2SessionManager;
  readonly #sequence = new SequenceClock();

  constructor(
    private readonly settings: GatewaySettings,
    private readonly signal: AbortSignal,
  ) {
    const withToken: Interceptor = (next) => (req) => {
      req.header.set("authorization", `Bearer ${settings.token}`);
      return next(req);
    };
    const nodeOptions = settings.tls?.ca === undefined ? {} : { ca: settings.tls.ca };
    this.#sessions = new Http2SessionManager(settings.url, { idleConnectionTimeoutMs: 60_000 }, nodeOptions);
    this.#client = createClient(
      PstnService,
      createGrpcTransport({ baseUrl: settings.url, sessionManager: this.#sessions, interceptors: [withToken] }),
    );
  }

  get #options() {
    return { timeoutMs: this.settings.callTimeoutMs, signal: this.signal };
  }

  report(uid: string, change: LineChange): Promise<ReportLineResponse> {
    const req = create(ReportLineRequestSchema, {
      channelId: this.settings.channel,
      uid,
      sequence: this.#sequence.next(),
      change,
    });
    return this.#client.reportLine(req, this.#options);
  }

  join(caller: LineCaller): Promise<ReportLineResponse> {
    const value = { callerId: caller.callerId, joinedAt: timestampFromMs(caller.joinedAt) };
    return this.report(caller.uid, { case: "join", value });
  }

  /** The whole roster: boardline joins whom it lost (a restart) and refreshes every presence lease. */
  async sync(callers: readonly LineCaller[]): Promise<PstnState | undefined> {
    const members = callers.map((c) => ({ uid: c.uid, callerId: c.callerId, joinedAt: timestampFromMs(c.joinedAt) }));
    const answer = await this.#client.syncLine(
      { channelId: this.settings.channel, sequence: this.#sequence.next(), members },
      this.#options,
    );
    return answer.state;
  }

  snapshot(): Promise<PstnState> {
    return this.#client.getPstnState({ channel: { case: "channelId", value: this.settings.channel } }, this.#options);
  }

  /** The channel's events after `after`, line events included; open until stopped or cut. */
  watch(after: string): AsyncIterable<PstnEvent> {
    return this.#client.watchPstnEvents(
      { channelIds: [this.settings.channel], after, includeLine: true },
      { signal: this.signal },
    );
  }

  close(): void {
    this.#sessions.abort();
  }
}
