/**
 * Whether a host names this machine's loopback interface (`localhost`,
 * 127.0.0.0/8, `::1`): the only places the demo and the tests may send to over
 * plain http, and the only ones the conversion simulator calls webhooks on.
 */
import { isIPv4 } from "node:net";

/** `hostname` as `URL#hostname` gives it (IPv6 in brackets). */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase();
  if (host === "localhost" || host === "[::1]" || host === "::1") return true;
  return isIPv4(host) && host.startsWith("127.");
}
