/**
 * The JSON routes, derived at start-up from the `google.api.http` annotations
 * in the protos — there is no second route table. Only the form the contract
 * uses is supported (`post: "/path"` with `body: "*"`, no path variables);
 * anything else in an annotation stops start-up.
 *
 * A request here: method → Content-Type → body size → (call pipeline: auth →
 * JSON → validation → domain call) → snake_case JSON, or the error table's
 * JSON body.
 */
import { getOption, hasOption, toJsonString } from "@bufbuild/protobuf";
import { http } from "../../gen/google/api/annotations_pb.js";
import { CallCancellation } from "./call-cancellation.js";
import type { CallPipeline } from "./call-pipeline.js";
import { toJsonError, transportError } from "./error-table.js";
import { parseJsonRequest } from "./json-request.js";
import { firstHeader, type NodeRequest, type NodeResponse, reply } from "./node-http.js";
import { readBody } from "./read-body.js";
import type { ServedMethod } from "./served-methods.js";

const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i;

export interface JsonRoute {
  readonly path: string;
  readonly served: ServedMethod;
}

/** Reads the routes off the annotations. Throws on an annotation this gateway cannot honour. */
function jsonRoutes(methods: readonly ServedMethod[]): Map<string, JsonRoute> {
  const routes = new Map<string, JsonRoute>();
  for (const served of methods) {
    if (!hasOption(served.method, http)) continue;
    const rule = getOption(served.method, http);
    const where = `${served.method.parent.typeName}.${served.method.name}`;
    if (rule.pattern.case !== "post" || rule.body !== "*" || rule.additionalBindings.length > 0) {
      throw new Error(`${where}: only google.api.http { post: "…" body: "*" } is supported`);
    }
    const path = rule.pattern.value;
    if (!/^\/[A-Za-z0-9/_.-]*$/.test(path)) throw new Error(`${where}: path variables are not supported: ${path}`);
    if (routes.has(path)) throw new Error(`${where}: duplicate route ${path}`);
    routes.set(path, { path, served });
  }
  return routes;
}

export class JsonGateway {
  private readonly routes: Map<string, JsonRoute>;

  constructor(
    methods: readonly ServedMethod[],
    private readonly pipeline: CallPipeline,
    private readonly maxBodyBytes: number,
  ) {
    this.routes = jsonRoutes(methods);
  }

  route(path: string): JsonRoute | undefined {
    return this.routes.get(path);
  }

  async handle(route: JsonRoute, req: NodeRequest, res: NodeResponse, requestId: string): Promise<void> {
    if (req.method !== "POST") return reply(res, transportError({ kind: "method_not_allowed", allow: ["POST"] }));
    if (!JSON_CONTENT_TYPE.test(req.headers["content-type"] ?? "")) {
      return reply(res, transportError({ kind: "unsupported_media_type" }));
    }
    const body = await readBody(req, this.maxBodyBytes);
    if (body.kind === "too-large") {
      // Unread bytes may still be on the wire: do not reuse an HTTP/1.1 connection.
      if (req.httpVersionMajor === 1) res.setHeader("connection", "close");
      return reply(res, transportError({ kind: "body_too_large", limit: this.maxBodyBytes }));
    }
    if (body.kind === "aborted") return;
    const cancellation = new CallCancellation();
    const onClose = () => cancellation.abort();
    res.once("close", onClose);
    const { method } = route.served;
    try {
      const output = await this.pipeline.run(
        route.served,
        { protocol: "json", authorization: firstHeader(req.headers.authorization), requestId, cancellation },
        () => parseJsonRequest(method.input, body.bytes),
      );
      reply(res, {
        status: 200,
        body: toJsonString(method.output, output, { useProtoFieldName: true, alwaysEmitImplicit: true }),
      });
    } catch (e) {
      reply(res, toJsonError(e));
    } finally {
      res.off("close", onClose);
    }
  }
}
