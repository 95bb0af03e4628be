/**
 * The end of a request answered without reading its body (a bad credential
 * is refused from the headers alone). The unread rest must not hold what
 * carries it: HTTP/1.1 cannot find the next request behind bytes it never
 * read, so the connection closes after the answer (h1-pipelining.ts lets it
 * linger, so the answer is not lost to a reset); an HTTP/2 stream is reset
 * with NO_ERROR once its answer is out, which asks the client to stop
 * sending (RFC 9113 §8.1) and leaves the session's other streams alone.
 */
import { constants, type Http2ServerRequest, type ServerHttp2Stream } from "node:http2";
import { closeAfterAnswer } from "./h1-pipelining.js";
import type { NodeRequest, NodeResponse } from "./request-answer.js";

/** Call before writing the answer: the request's body, if any of it is still to come, is never read. */
export function leaveBodyUnread(req: NodeRequest, res: NodeResponse): void {
  if (req.complete) return;
  if (req.httpVersionMajor === 1) {
    closeAfterAnswer(req, res);
    return;
  }
  const { stream } = req as Http2ServerRequest;
  res.once("finish", () => resetUnread(stream));
}

/** An HTTP/2 stream whose answer went out: what arrived of its DATA is dropped, the rest refused. */
export function resetUnread(stream: ServerHttp2Stream): void {
  stream.resume();
  if (!stream.closed) stream.close(constants.NGHTTP2_NO_ERROR);
}
