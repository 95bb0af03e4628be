/**
 * A call's deadline as the client states it: `grpc-timeout` (gRPC and
 * gRPC-Web: 1–8 digits and a unit) or `connect-timeout-ms` (Connect: 1–10
 * digits). A deadline longer than a Node timer can hold (2^31−1 ms, about
 * 24.8 days) is no practical deadline: the call runs without one, on every
 * protocol (connect-es would otherwise arm a 1 ms timer and warn).
 */
import type { IncomingHttpHeaders } from "node:http";

/** The longest timer Node arms as asked. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

const GRPC_TIMEOUT = /^(\d{1,8})([HMSmun])$/;
const CONNECT_TIMEOUT = /^\d{1,10}$/;
const UNIT_MS: Readonly<Record<string, number>> = { H: 3_600_000, M: 60_000, S: 1_000, m: 1, u: 1e-3, n: 1e-6 };

/** The deadline in ms; `undefined` for none (or one too long to matter); `null` when malformed. */
export function grpcTimeoutMs(value: string | undefined): number | undefined | null {
  if (value === undefined) return undefined;
  const m = GRPC_TIMEOUT.exec(value);
  if (m === null) return null;
  const ms = Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  return ms > MAX_TIMER_MS ? undefined : ms;
}

function connectTimeoutMs(value: string): number | undefined | null {
  if (!CONNECT_TIMEOUT.test(value)) return null;
  const ms = Number(value);
  return ms > MAX_TIMER_MS ? undefined : ms;
}

/**
 * Removes a well-formed deadline header that is too long for a timer, before
 * connect-es reads it: the call then runs with no deadline. Malformed values
 * stay, for connect-es to refuse as the protocol says.
 */
export function dropUnarmableDeadline(headers: IncomingHttpHeaders): void {
  const grpc = headers["grpc-timeout"];
  if (typeof grpc === "string" && GRPC_TIMEOUT.test(grpc) && grpcTimeoutMs(grpc) === undefined) {
    delete headers["grpc-timeout"];
  }
  const connect = headers["connect-timeout-ms"];
  if (typeof connect === "string" && CONNECT_TIMEOUT.test(connect) && connectTimeoutMs(connect) === undefined) {
    delete headers["connect-timeout-ms"];
  }
}
