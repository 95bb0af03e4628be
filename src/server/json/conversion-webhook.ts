/**
 * The receiver of conversion webhooks (docs/architecture.md, "Following
 * conversions"): `POST /v1/whiteboard/conversion-webhook/{id}?sig=…`, which
 * the conversion backend calls when a task created with CONVERSION_WEBHOOK_BASE
 * moves on. Not an RPC and no JWT (Netless cannot send one): the `sig` in the
 * URL we gave the backend is the credential (or the same value in
 * `X-Boardline-Signature`, for a backend that can set headers), checked by the
 * domain (src/services/conversion/webhooks.ts). Here: the method (POST only,
 * else 405 with `Allow`), the signature (401 for a wrong or missing one,
 * answered before any of the body is read), the body (any content, read and
 * ignored, at most WEBHOOK_MAX_BODY_BYTES, else 413), then 204 — the same for
 * a known and an unknown id, so the answer tells a prober nothing — or the
 * error table's answer (503 when the store is down).
 */
import type { Logger } from "../../log.js";
import { isUnexpected, toJsonError, transportError } from "../call/error-table.js";
import { type NodeRequest, type NodeResponse, reply } from "../http/request-answer.js";
import { readBody } from "../http/read-body.js";
import { closeAfterAnswer } from "../http/h1-pipelining.js";
import { leaveBodyUnread } from "../http/unread-body.js";

/** Where webhooks are received; the id is the one path segment after it. */
export const CONVERSION_WEBHOOK_PATH = "/v1/whiteboard/conversion-webhook/";

/** The most of a webhook body read (and thrown away): room for a task's whole answer. */
export const WEBHOOK_MAX_BODY_BYTES = 256 * 1024;

/** The URL the backend is to call: `<base>/v1/whiteboard/conversion-webhook/<id>?sig=<sig>`. */
export function conversionWebhookUrl(base: string, id: string, sig: string): string {
  return `${base.replace(/\/+$/, "")}${CONVERSION_WEBHOOK_PATH}${encodeURIComponent(id)}?sig=${encodeURIComponent(sig)}`;
}

/** What receives the webhooks (src/services/conversion/webhooks.ts). */
export interface WebhookReceiver {
  /** Throws a `Failure` unless `sig` is the signature of `id`; no I/O, so it comes before the body is read. */
  authenticate(id: string, sig: string | undefined): void;
  /** A call of the webhook `id` whose signature passed: throws a `Failure` when the store is down. */
  receive(id: string, sig: string | undefined): Promise<void>;
}

/** Where a backend that can set headers may send the signature instead of the URL's `sig`. */
export const SIGNATURE_HEADER = "x-boardline-signature";

export class ConversionWebhookEndpoint {
  constructor(
    private readonly receiver: WebhookReceiver,
    private readonly logger: Logger,
  ) {}

  /** The webhook id of a path under CONVERSION_WEBHOOK_PATH (one non-empty segment); else undefined. */
  match(path: string): string | undefined {
    if (!path.startsWith(CONVERSION_WEBHOOK_PATH)) return undefined;
    const id = path.slice(CONVERSION_WEBHOOK_PATH.length);
    return id === "" || id.includes("/") ? undefined : id;
  }

  /** The method, then the signature (from the head alone), then the body, then the call. */
  async handle(id: string, req: NodeRequest, res: NodeResponse, requestId: string): Promise<void> {
    if (req.method !== "POST") {
      req.resume(); // a body sent anyway is not read
      reply(res, transportError({ kind: "method_not_allowed", allow: ["POST"] }));
      return;
    }
    const sig = signatureOf(req);
    try {
      this.receiver.authenticate(id, sig);
    } catch (e) {
      leaveBodyUnread(req, res);
      this.answerFailure(e, res, requestId);
      return;
    }
    const body = await readBody(req, WEBHOOK_MAX_BODY_BYTES);
    if (body.kind === "aborted") return;
    if (body.kind === "too-large") {
      // Unread bytes may still be on the wire: do not reuse an HTTP/1.1 connection.
      closeAfterAnswer(req, res);
      reply(res, transportError({ kind: "body_too_large", limit: WEBHOOK_MAX_BODY_BYTES }));
      return;
    }
    try {
      await this.receiver.receive(id, sig);
      res.statusCode = 204;
      res.end();
    } catch (e) {
      this.answerFailure(e, res, requestId);
    }
  }

  private answerFailure(e: unknown, res: NodeResponse, requestId: string): void {
    if (isUnexpected(e)) this.logger.error({ err: e, requestId }, "conversion webhook failed unexpectedly");
    reply(res, toJsonError(e));
  }
}

/**
 * The signature: the `X-Boardline-Signature` header when there is one, else
 * the one `sig` query parameter. Undefined when there is none, or more than
 * one `sig`.
 */
function signatureOf(req: NodeRequest): string | undefined {
  const header = req.headers[SIGNATURE_HEADER];
  if (header !== undefined) return Array.isArray(header) ? undefined : header;
  return querySignature(req.url ?? "");
}

/** The one `sig` query parameter; undefined when there is none or more than one. */
function querySignature(url: string): string | undefined {
  const q = url.indexOf("?");
  if (q < 0) return undefined;
  const sigs = new URLSearchParams(url.slice(q + 1)).getAll("sig");
  return sigs.length === 1 ? sigs[0] : undefined;
}
