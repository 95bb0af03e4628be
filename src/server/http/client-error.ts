/**
 * Answers an HTTP/1.1 request the parser refused (as Node does without a
 * listener: 431, 408 or 400, picked by the error table) and closes the connection once the answer is
 * written. With TLS, the secure server also routes TLS errors here; those,
 * like resets, just close.
 */
import type { Duplex } from "node:stream";
import { parserRefusalStatus } from "../call/error-table.js";

export function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  // Never write into a response that has already started (e.g. garbage
  // pipelined behind a request being answered): just close.
  const fromParser = err.code !== undefined && (err.code.startsWith("HPE_") || err.code === "ERR_HTTP_REQUEST_TIMEOUT");
  const inProgress =
    (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
  if (!fromParser || !socket.writable || inProgress) {
    socket.destroy();
    return;
  }
  const status = parserRefusalStatus(err.code);
  socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`, () => socket.destroy());
  setTimeout(() => socket.destroy(), 1_000).unref(); // a client that does not read
}
