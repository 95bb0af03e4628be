/**
 * The Netless (Agora Interactive Whiteboard) legacy file-conversion REST API:
 *
 *   POST {base}/v5/services/conversion/tasks           → 201 {uuid, type, status}
 *   GET  {base}/v5/services/conversion/tasks/{uuid}?type=static|dynamic
 *                                                      → 200 {uuid, type, status, failedReason?, progress?}
 *
 * Every call carries the project's SDK token (`token` header) and data-center
 * `region`. Backend trouble becomes a `Failure` of the kind the error table
 * expects; backend bodies never reach the caller and tokens never reach the logs.
 */
import type { Logger } from "../log.js";
import { Failure } from "../services/failure.js";
import type {
  ConversionBackend,
  ConversionRequest,
  ConversionTask,
  ConversionType,
  Region,
  WhiteboardCredentials,
} from "../services/ports.js";
import { type Agents, ExchangeTimeoutError, createAgents, exchange } from "./http-exchange.js";
import { createSdkToken } from "./netless-token.js";
import { type ConversionTaskStatus, parseCreatedTask, parseTaskStatus } from "./task-shapes.js";

export type { ConversionTaskStatus } from "./task-shapes.js";

export interface NetlessConversionClientOptions {
  /** E.g. `https://api.netless.link`; a path prefix is kept. */
  readonly baseUrl: string;
  /** Deadline for one whole exchange, connect to last body byte. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /**
   * Lifespan of the tokens signed from an access/secret key pair. Short, so a
   * leaked token is soon worthless, yet long enough to absorb clock skew
   * between us and the backend. Default 5 minutes.
   */
  readonly tokenLifespanMs?: number;
}

const TASKS_PATH = "v5/services/conversion/tasks";
const DEFAULT_TOKEN_LIFESPAN_MS = 5 * 60_000;
/** A task's status can list one URL per converted page; leave room for big decks. */
const MAX_ANSWER_BYTES = 4 * 1024 * 1024;

type Operation = "create" | "query";

export class NetlessConversionClient implements ConversionBackend {
  private readonly tasksUrl: URL;
  private readonly timeoutMs: number;
  private readonly logger: Logger;
  private readonly tokenLifespanMs: number;
  private readonly agents: Agents = createAgents();

  constructor(options: NetlessConversionClientOptions) {
    const base = new URL(options.baseUrl);
    if (base.protocol !== "http:" && base.protocol !== "https:") {
      throw new TypeError("the conversion backend URL must be http or https");
    }
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    this.tasksUrl = new URL(TASKS_PATH, base);
    if (!(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new RangeError("timeoutMs must be a positive number");
    }
    this.timeoutMs = options.timeoutMs;
    this.logger = options.logger;
    this.tokenLifespanMs = options.tokenLifespanMs ?? DEFAULT_TOKEN_LIFESPAN_MS;
  }

  async createTask(request: ConversionRequest, signal?: AbortSignal): Promise<ConversionTask> {
    const body: Record<string, unknown> = {
      resource: request.resourceUrl,
      type: request.type,
      preview: false,
    };
    if (request.scale !== undefined) body.scale = request.scale;

    const answer = await this.send(
      "create",
      {
        method: "POST",
        url: this.tasksUrl,
        headers: { ...this.headers(request.credentials, request.region), "content-type": "application/json" },
        body: JSON.stringify(body),
      },
      request.credentials,
      signal,
    );
    if (answer.status !== 201 && answer.status !== 200) {
      throw this.failureFor("create", answer.status, request.credentials);
    }
    const task = parseCreatedTask(answer.body);
    if (task === undefined || task.type !== request.type) {
      this.logger.error({ op: "create", status: answer.status }, "conversion backend sent an unreadable task");
      throw new Failure("internal", { cause: new Error("unreadable answer from the conversion backend") });
    }
    return task;
  }

  /** The task's current status and progress (the backend's query route). */
  async getTask(
    uuid: string,
    type: ConversionType,
    credentials: WhiteboardCredentials,
    region: Region,
    signal?: AbortSignal,
  ): Promise<ConversionTaskStatus> {
    const url = new URL(`${this.tasksUrl.pathname}/${encodeURIComponent(uuid)}`, this.tasksUrl);
    url.searchParams.set("type", type);
    const answer = await this.send(
      "query",
      { method: "GET", url, headers: this.headers(credentials, region) },
      credentials,
      signal,
    );
    if (answer.status !== 200) {
      throw this.failureFor("query", answer.status, credentials);
    }
    const task = parseTaskStatus(answer.body);
    if (task === undefined) {
      this.logger.error({ op: "query", status: answer.status }, "conversion backend sent an unreadable task");
      throw new Failure("internal", { cause: new Error("unreadable answer from the conversion backend") });
    }
    return task;
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
            lifespanMs: this.tokenLifespanMs,
          });
    return { token, region, accept: "application/json", "user-agent": "boardline" };
  }

  /** Runs the exchange; turns transport trouble (never HTTP statuses) into failures. */
  private async send(
    op: Operation,
    request: { method: "GET" | "POST"; url: URL; headers: Record<string, string>; body?: string },
    credentials: WhiteboardCredentials,
    signal: AbortSignal | undefined,
  ): Promise<{ status: number; body: string }> {
    const started = performance.now();
    try {
      const answer = await exchange(this.agents, {
        ...request,
        timeoutMs: this.timeoutMs,
        maxBodyBytes: MAX_ANSWER_BYTES,
        ...(signal === undefined ? {} : { signal }),
      });
      this.logger.debug(
        { op, status: answer.status, ms: Math.round(performance.now() - started), credentials: kindOf(credentials) },
        "conversion backend answered",
      );
      return answer;
    } catch (error) {
      // The caller gave up: hand back its own reason, as fetch does, so that
      // cancellation is never mistaken for a backend failure.
      if (signal?.aborted && error === signal.reason) throw error;
      if (error instanceof ExchangeTimeoutError) {
        this.logger.warn({ op, timeoutMs: this.timeoutMs }, "conversion backend timed out");
        throw new Failure("deadline_exceeded", {
          detail: "the conversion backend did not answer in time",
          cause: error,
        });
      }
      this.logger.warn({ op, err: describe(error) }, "conversion backend unreachable");
      throw new Failure("unavailable", { detail: "the conversion backend is unavailable", cause: error });
    }
  }

  private failureFor(op: Operation, status: number, credentials: WhiteboardCredentials): Failure {
    const cause = new Error(`conversion backend answered HTTP ${status}`);
    if (status === 401 || status === 403) {
      // Our stored credentials are wrong or lack the writer role: no caller can
      // fix that, an operator must. Say which key, never the token or secret.
      this.logger.error(
        {
          op,
          status,
          credentials: kindOf(credentials),
          ...("accessKey" in credentials ? { accessKey: credentials.accessKey } : {}),
        },
        "conversion backend refused our whiteboard credentials; check the project's sdk_token or access_key/secret_key",
      );
      return new Failure("internal", { cause });
    }
    if (status >= 500 || status === 429) {
      this.logger.warn({ op, status }, "conversion backend unavailable");
      return new Failure("unavailable", { detail: "the conversion backend is unavailable", cause });
    }
    if (status === 400) {
      this.logger.info({ op, status }, "conversion backend rejected the request");
      return new Failure("invalid", {
        // Appended to the 611 message after ": ", so it names the field first.
        detail:
          op === "create"
            ? "resource_url was rejected by the conversion backend"
            : "the task query was rejected by the conversion backend",
        cause,
      });
    }
    if (status === 404 && op === "query") {
      return new Failure("not_found", { detail: "no such conversion task", cause });
    }
    this.logger.error({ op, status }, "conversion backend answered with an unexpected status");
    return new Failure("internal", { cause });
  }
}

function kindOf(credentials: WhiteboardCredentials): "sdk_token" | "access_key" {
  return "sdkToken" in credentials ? "sdk_token" : "access_key";
}

/** Error name, message and code only: never a request object that could carry headers. */
function describe(error: unknown): Record<string, unknown> {
  if (!(error instanceof Error)) return { message: String(error) };
  const code = (error as NodeJS.ErrnoException).code;
  return { name: error.name, message: error.message, ...(code === undefined ? {} : { code }) };
}
