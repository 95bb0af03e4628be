/**
 * One call to the Netless API: the `token` (the project's SDK token, or one
 * signed from its access/secret key pair) and `region` headers, the exchange
 * under the client's deadline, and transport trouble (never HTTP statuses)
 * turned into failures. Tokens and secrets never reach the logs.
 */
import type { Logger } from "../log.js";
import { Failure } from "../services/failure.js";
import type { Region, WhiteboardCredentials } from "../services/ports.js";
import type { ExchangeSpan, ExchangeTracer } from "../tracing/hooks.js";
import { type Agents, ExchangeTimeoutError, createAgents, exchange } from "./http-exchange.js";
import { createSdkToken } from "./sdk-token.js";

/** What a call is for, in the logs. */
export type Operation = "create" | "query" | "cancel";

export interface NetlessCall {
  readonly method: "GET" | "POST" | "DELETE";
  readonly url: URL;
  /** JSON text. */
  readonly body?: string;
  readonly credentials: WhiteboardCredentials;
  readonly region: Region;
}

export interface NetlessAnswer {
  readonly status: number;
  readonly body: string;
}

export interface NetlessHttpOptions {
  readonly timeoutMs: number;
  readonly logger: Logger;
  readonly tokenLifespanMs: number;
  /** A client span per exchange inside a traced call, its `traceparent` sent along; none when tracing is off. */
  readonly tracer?: ExchangeTracer | undefined;
}

/** A task's status can list one URL per converted page; leave room for big decks. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

export class NetlessHttp {
  private readonly agents: Agents = createAgents();

  constructor(private readonly options: NetlessHttpOptions) {}

  /** Any HTTP answer; `unavailable`, `deadline_exceeded` or the caller's own abort reason otherwise. */
  async call(op: Operation, call: NetlessCall, signal: AbortSignal | undefined): Promise<NetlessAnswer> {
    const { timeoutMs, logger } = this.options;
    const started = performance.now();
    const headers = this.headers(call.credentials, call.region);
    if (call.body !== undefined) headers["content-type"] = "application/json";
    const span = this.options.tracer?.startExchange({ method: call.method, url: call.url, operation: op }, headers);
    try {
      const answer = await exchange(this.agents, {
        method: call.method,
        url: call.url,
        headers,
        ...(call.body === undefined ? {} : { body: call.body }),
        timeoutMs,
        maxBodyBytes: MAX_ANSWER_BYTES,
        ...(signal === undefined ? {} : { signal }),
      });
      logger.debug(
        {
          op,
          status: answer.status,
          ms: Math.round(performance.now() - started),
          credentials: kindOf(call.credentials),
        },
        "conversion backend answered",
      );
      span?.end({ status: answer.status });
      return answer;
    } catch (error) {
      endWithError(span, signal, error);
      // The caller gave up: hand back its own reason, as fetch does, so that
      // cancellation is never mistaken for a backend failure.
      if (signal?.aborted && error === signal.reason) throw error;
      if (error instanceof ExchangeTimeoutError) {
        logger.warn({ op, timeoutMs }, "conversion backend timed out");
        throw new Failure("deadline_exceeded", {
          detail: "the conversion backend did not answer in time",
          cause: error,
        });
      }
      logger.warn({ op, err: describe(error) }, "conversion backend unreachable");
      throw new Failure("unavailable", { detail: "the conversion backend is unavailable", cause: error });
    }
  }

  /** Destroys pooled sockets; in-flight calls fail as `unavailable`. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private headers(credentials: WhiteboardCredentials, region: Region): Record<string, string> {
    const token =
      "sdkToken" in credentials
        ? credentials.sdkToken
        : createSdkToken({
            accessKey: credentials.accessKey,
            secretKey: credentials.secretKey,
            role: "writer",
            lifespanMs: this.options.tokenLifespanMs,
          });
    return { token, region, accept: "application/json", "user-agent": "boardline" };
  }
}

function endWithError(span: ExchangeSpan | undefined, signal: AbortSignal | undefined, error: unknown): void {
  if (signal?.aborted && error === signal.reason) span?.end({ error: "aborted" });
  else span?.end({ error: error instanceof ExchangeTimeoutError ? "timeout" : "unreachable" });
}

/** Which kind of credentials, for the logs (never the token or the secret). */
export function kindOf(credentials: WhiteboardCredentials): "sdk_token" | "access_key" {
  return "sdkToken" in credentials ? "sdk_token" : "access_key";
}

/** Error name, message and code only: never a request object that could carry headers. */
function describe(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as NodeJS.ErrnoException).code;
  return { name: error.name, message: error.message, ...(code === undefined ? {} : { code }) };
}
