/**
 * Reads a request body into memory, up to a limit. Refuses early on a
 * Content-Length over the limit and stops reading as soon as the limit is
 * passed, so a 10 MB body costs at most `limit` bytes of memory.
 */
import type { NodeRequest } from "./request-answer.js";

export type ReadBodyResult =
  | { readonly kind: "ok"; readonly bytes: Uint8Array }
  | { readonly kind: "too-large" }
  | { readonly kind: "aborted" };

export function readBody(req: NodeRequest, limit: number): Promise<ReadBodyResult> {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > limit) return Promise.resolve({ kind: "too-large" });
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (r: ReadBodyResult) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onAbort);
      req.off("aborted", onAbort);
      resolve(r);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.pause();
        finish({ kind: "too-large" });
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () =>
      finish({ kind: "ok", bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) });
    const onAbort = () => finish({ kind: "aborted" });
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onAbort);
    req.on("aborted", onAbort);
  });
}
