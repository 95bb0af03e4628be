/**
 * The check of CONVERSION_WEBHOOK_BASE (variables.ts): boardline's public base
 * URL, which the conversion backend is given inside every webhook URL. An
 * absolute https URL (plain http only for a loopback host, for the demo and
 * the tests), without a query or a fragment (the webhook path and its `sig`
 * are appended) and without credentials (the backend would store them).
 * The value is never echoed: it might hold what it must not.
 */
import { isLoopbackHost } from "../loopback.js";

/** What is wrong with the value, or undefined when nothing is. */
export function checkWebhookBase(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "must be an absolute https URL";
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLoopbackHost(url.hostname))) {
    return "must be an https URL (http only for a loopback host: localhost, 127.0.0.1, [::1])";
  }
  if (value.includes("?") || value.includes("#")) return "must not have a query or a fragment";
  if (url.username !== "" || url.password !== "") return "must not carry a user name or password";
  return undefined;
}
