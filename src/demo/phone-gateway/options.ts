/**
 * What the demo's telephone-gateway simulator is told: where boardline is,
 * which channel to dial into with which token, and its pace. Defaults make a
 * lively but readable roster; tests shorten the period and fix the seed.
 */
import type { Logger } from "../../log.js";

export interface PhoneGatewayOptions {
  /** boardline's loopback URL (`http://127.0.0.1:<port>`), reached as any gateway would. */
  readonly url: string;
  /** A token of scope `pstn.gateway` for the channel's project. */
  readonly token: string;
  readonly channel: string;
  /** How often a caller does something (ms). */
  readonly periodMs?: number;
  /** How often the whole roster is synced (SyncLine), well within the presence lease (ms). */
  readonly presenceMs?: number;
  /** How many callers are on the line at most. */
  readonly callers?: number;
  /** The seed of its choices: the same seed, the same moves. */
  readonly seed?: number;
  /** The first wait after a failed call (ms); it doubles up to `maxBackOffMs`. */
  readonly backOffMs?: number;
  readonly maxBackOffMs?: number;
  /** Each call's deadline (ms): a slow boardline is waited for this long, then retried. */
  readonly callTimeoutMs?: number;
  /** Extra TLS options of the connection (the `ca` of a demo served over TLS). */
  readonly tls?: { readonly ca?: string | Buffer };
  readonly logger: Logger;
}

export type GatewaySettings = Required<Omit<PhoneGatewayOptions, "tls">> & Pick<PhoneGatewayOptions, "tls">;

export function gatewaySettings(o: PhoneGatewayOptions): GatewaySettings {
  const periodMs = o.periodMs ?? 2000;
  return {
    ...o,
    periodMs,
    presenceMs: o.presenceMs ?? 20_000,
    callers: o.callers ?? 4,
    seed: o.seed ?? 1,
    backOffMs: o.backOffMs ?? 200,
    maxBackOffMs: o.maxBackOffMs ?? 5000,
    callTimeoutMs: o.callTimeoutMs ?? 5000,
  };
}
