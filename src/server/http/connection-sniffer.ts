/**
 * Tells a cleartext HTTP/2 connection (gRPC's prior knowledge: it opens with
 * the connection preface "PRI * HTTP/2.0…") from an HTTP/1.1 one by its first
 * bytes, so both share one port.
 */
import type net from "node:net";
import { afterDeadline } from "../../loop-aware-deadline.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");

/**
 * Waits for enough bytes to tell the HTTP/2 preface from an HTTP/1.1 request
 * line, puts them back, and hands the socket on. A client that sends nothing
 * within `timeoutMs` is dropped.
 */
export function sniff(socket: net.Socket, timeoutMs: number, route: (isH2: boolean) => void): void {
  let seen: Buffer = Buffer.alloc(0);
  // Judged after the loop read what arrived: bytes that came in time while the loop was busy still count.
  const cancelDrop = afterDeadline(timeoutMs, () => socket.destroy());
  const onData = (chunk: Buffer) => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const n = Math.min(seen.length, PREFACE.length);
    const isPrefacePrefix = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
    if (isPrefacePrefix && n < PREFACE.length) return; // need more bytes
    done();
    // Put the bytes back for the server that takes the socket: the HTTP/2
    // session reads a paused socket's buffer on its next tick; the HTTP/1.1
    // parser needs the socket flowing again.
    socket.pause();
    socket.unshift(seen);
    route(isPrefacePrefix);
    if (!isPrefacePrefix) socket.resume();
  };
  const onGone = () => done();
  function done() {
    cancelDrop();
    socket.off("data", onData);
    socket.off("close", onGone);
    socket.off("error", onGone);
  }
  socket.on("data", onData);
  socket.once("close", onGone);
  socket.once("error", onGone);
}
