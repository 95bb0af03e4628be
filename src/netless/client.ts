/**
 * The Netless (Agora Interactive Whiteboard) file-conversion REST APIs:
 *
 *   projector  POST   {base}/v5/projector/tasks          → 201 {uuid, type, status}
 *              GET    {base}/v5/projector/tasks/{uuid}   → 200 the task (see projector-shapes.ts)
 *              DELETE {base}/v5/projector/tasks/{uuid}   → 200 the task, Abort
 *   legacy     POST   {base}/v5/services/conversion/tasks                         → 201 {uuid, type, status}
 *              GET    {base}/v5/services/conversion/tasks/{uuid}?type=static|dynamic → 200 (see legacy-shapes.ts)
 *
 * New tasks go to the API the client was made with; a task is asked about on
 * the API that created it (`ConversionTaskRef.api`). Every call carries the
 * project's SDK token and data-center region (src/netless/http.ts). Backend trouble
 * becomes a `Failure` of the kind the error table expects (answer-failures.ts);
 * backend bodies never reach the caller and tokens never reach the logs.
 */
import type { Logger } from "../log.js";
import { Failure } from "../services/failure.js";
import type {
  ConversionApi,
  ConversionBackend,
  ConversionRequest,
  ConversionState,
  ConversionTask,
  ConversionTaskRef,
  ConversionType,
  Region,
  WhiteboardCredentials,
} from "../services/ports.js";
import type { ExchangeTracer } from "../tracing/hooks.js";
import { failureForAnswer, isTaskNotFound, unreadableAnswer } from "./answer-failures.js";
import { type ConversionTaskStatus, legacyState, parseLegacyCreated, parseLegacyTask } from "./legacy-shapes.js";
import { type NetlessAnswer, NetlessHttp, type Operation } from "./http.js";
import { parseCancelAcknowledgement, parseProjectorCreated, parseProjectorState } from "./projector-shapes.js";

export type { ConversionTaskStatus } from "./legacy-shapes.js";

export interface NetlessConversionClientOptions {
  /** E.g. `https://api.netless.link`; a path prefix is kept. */
  readonly baseUrl: string;
  /** Deadline for one whole exchange, connect to last body byte. */
  readonly timeoutMs: number;
  readonly logger: Logger;
  /** The API new tasks are created on. Default `projector`. */
  readonly api?: ConversionApi;
  /**
   * Lifespan of the tokens signed from an access/secret key pair. Short, so a
   * leaked token is soon worthless, yet long enough to absorb clock skew
   * between us and the backend. Default 5 minutes.
   */
  readonly tokenLifespanMs?: number;
  /** Tracing (a client span per exchange inside a traced call, `traceparent` sent along); none when it is off. */
  readonly tracer?: ExchangeTracer | undefined;
}

const TASKS_PATHS: Readonly<Record<ConversionApi, string>> = {
  projector: "v5/projector/tasks",
  legacy: "v5/services/conversion/tasks",
};
const DEFAULT_TOKEN_LIFESPAN_MS = 5 * 60_000;

/** The state of a task the backend does not know (or no longer knows: it keeps tasks for 7 days). */
export const TASK_NOT_FOUND_STATE: ConversionState = {
  status: "Fail",
  percent: 0,
  pages: [],
  failedReason: "not found",
};

export class NetlessConversionClient implements ConversionBackend {
  private readonly tasksUrls: Readonly<Record<ConversionApi, URL>>;
  private readonly api: ConversionApi;
  private readonly logger: Logger;
  private readonly http: NetlessHttp;

  constructor(options: NetlessConversionClientOptions) {
    const base = new URL(options.baseUrl);
    if (base.protocol !== "http:" && base.protocol !== "https:") {
      throw new TypeError("the conversion backend URL must be http or https");
    }
    if (!base.pathname.endsWith("/")) base.pathname += "/";
    this.tasksUrls = { projector: new URL(TASKS_PATHS.projector, base), legacy: new URL(TASKS_PATHS.legacy, base) };
    if (!(Number.isFinite(options.timeoutMs) && options.timeoutMs > 0)) {
      throw new RangeError("timeoutMs must be a positive number");
    }
    this.api = options.api ?? "projector";
    this.logger = options.logger;
    this.http = new NetlessHttp({
      timeoutMs: options.timeoutMs,
      logger: options.logger,
      tokenLifespanMs: options.tokenLifespanMs ?? DEFAULT_TOKEN_LIFESPAN_MS,
      tracer: options.tracer,
    });
  }

  async createTask(request: ConversionRequest, signal?: AbortSignal): Promise<ConversionTask> {
    const api = this.api;
    const answer = await this.http.call(
      "create",
      {
        method: "POST",
        url: this.tasksUrls[api],
        body: JSON.stringify(api === "projector" ? projectorCreateBody(request) : legacyCreateBody(request)),
        credentials: request.credentials,
        region: request.region,
      },
      signal,
    );
    if (answer.status !== 201 && answer.status !== 200) {
      throw failureForAnswer("create", answer, request.credentials, this.logger);
    }
    const task = api === "projector" ? parseProjectorCreated(answer.body) : parseLegacyCreated(answer.body);
    if (task === undefined || (task.type !== undefined && task.type !== request.type)) {
      throw unreadableAnswer("create", answer.status, this.logger);
    }
    return { uuid: task.uuid, type: request.type, status: task.status, api };
  }

  async queryTask(ref: ConversionTaskRef, signal?: AbortSignal): Promise<ConversionState> {
    const url = this.taskUrl(ref.api, ref.uuid);
    if (ref.api === "legacy") url.searchParams.set("type", ref.type);
    const answer = await this.http.call("query", { method: "GET", url, ...auth(ref) }, signal);
    if (answer.status !== 200 && isTaskNotFound(answer)) return TASK_NOT_FOUND_STATE;
    if (answer.status !== 200) throw failureForAnswer("query", answer, ref.credentials, this.logger);
    return this.readState("query", ref, answer);
  }

  async cancelTask(ref: ConversionTaskRef, signal?: AbortSignal): Promise<ConversionState> {
    if (ref.api === "legacy") {
      throw new Failure("failed_precondition", { detail: "tasks of the legacy conversion API cannot be cancelled" });
    }
    const url = this.taskUrl(ref.api, ref.uuid);
    const answer = await this.http.call("cancel", { method: "DELETE", url, ...auth(ref) }, signal);
    if (answer.status !== 200 && isTaskNotFound(answer)) return TASK_NOT_FOUND_STATE;
    if (answer.status !== 200) throw failureForAnswer("cancel", answer, ref.credentials, this.logger);
    // The docs show `{taskId, success}` rather than the task: then ask for the task.
    const acknowledgement = parseCancelAcknowledgement(answer.body);
    if (acknowledgement?.success === true) return this.queryTask(ref, signal);
    if (acknowledgement?.success === false) {
      throw new Failure("failed_precondition", { detail: "the conversion backend would not cancel the task" });
    }
    return this.readState("cancel", ref, answer);
  }

  /** The legacy API's own answer for a task, as it gave it (404 → `not_found`). */
  async getTask(
    uuid: string,
    type: ConversionType,
    credentials: WhiteboardCredentials,
    region: Region,
    signal?: AbortSignal,
  ): Promise<ConversionTaskStatus> {
    const url = this.taskUrl("legacy", uuid);
    url.searchParams.set("type", type);
    const answer = await this.http.call("query", { method: "GET", url, credentials, region }, signal);
    if (answer.status !== 200) throw failureForAnswer("query", answer, credentials, this.logger);
    const task = parseLegacyTask(answer.body);
    if (task === undefined) throw unreadableAnswer("query", answer.status, this.logger);
    return task;
  }

  /** Destroys pooled sockets; in-flight calls fail as `unavailable`. */
  close(): void {
    this.http.close();
  }

  private taskUrl(api: ConversionApi, uuid: string): URL {
    const tasks = this.tasksUrls[api];
    return new URL(`${tasks.pathname}/${encodeURIComponent(uuid)}`, tasks);
  }

  /** A 200 answer about `ref`'s task, in our shape; `internal` when unreadable or about another task. */
  private readState(op: Operation, ref: ConversionTaskRef, answer: NetlessAnswer): ConversionState {
    let state: ConversionState | undefined;
    if (ref.api === "projector") {
      state = parseProjectorState(answer.body);
    } else {
      const task = parseLegacyTask(answer.body);
      state = task === undefined || task.type !== ref.type ? undefined : legacyState(task);
    }
    if (state === undefined) throw unreadableAnswer(op, answer.status, this.logger);
    return state;
  }
}

/** `{resource, type, preview (dynamic), scale (static, when given), webhookEndpoint (when given)}`. */
function projectorCreateBody(request: ConversionRequest): Record<string, unknown> {
  return {
    resource: request.resourceUrl,
    type: request.type,
    ...(request.type === "dynamic" ? { preview: true } : {}),
    ...(request.type === "static" && request.scale !== undefined ? { scale: request.scale } : {}),
    ...(request.webhookEndpoint === undefined ? {} : { webhookEndpoint: request.webhookEndpoint }),
  };
}

/** `{resource, type, preview: false, scale (when given)}`. */
function legacyCreateBody(request: ConversionRequest): Record<string, unknown> {
  const body: Record<string, unknown> = { resource: request.resourceUrl, type: request.type, preview: false };
  if (request.scale !== undefined) body.scale = request.scale;
  return body;
}

function auth(ref: ConversionTaskRef): Pick<ConversionTaskRef, "credentials" | "region"> {
  return { credentials: ref.credentials, region: ref.region };
}
