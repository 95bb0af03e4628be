/**
 * What the simulator is started with, and the settings those options come to
 * once defaults are filled in and checked.
 */
import type { Logger } from "../../log.js";

export interface SimulatorCredentials {
  /** Opaque tokens accepted as they are (any role). */
  readonly sdkTokens?: readonly string[];
  /** Key pairs whose signed `NETLESSSDK_` tokens are accepted. */
  readonly keys?: readonly { readonly accessKey: string; readonly secretKey: string }[];
}

export interface SimulatorOptions {
  readonly host?: string;
  readonly port?: number;
  readonly credentials: SimulatorCredentials;
  /** Duration of one progress step (Waiting, each page, …). Default 500 ms. */
  readonly progressMs?: number;
  /** Pages of every simulated document. Default 3. */
  readonly pageCount?: number;
  /** Resources whose conversion ends in `Fail`. Default: none. */
  readonly failWhen?: (resource: string) => boolean;
  /** Clock for token expiry and task progress. Default `Date.now`. */
  readonly now?: () => number;
  readonly logger?: Logger;
}

/** The options with their defaults, as the routes and the server use them. */
export interface SimulatorSettings {
  readonly now: () => number;
  readonly progressMs: number;
  readonly pageCount: number;
  readonly failWhen: (resource: string) => boolean;
  readonly logger: Logger | undefined;
}

export function resolveSettings(options: SimulatorOptions): SimulatorSettings {
  const progressMs = options.progressMs ?? 500;
  const pageCount = options.pageCount ?? 3;
  if (!(progressMs > 0) || !Number.isSafeInteger(pageCount) || pageCount < 1) {
    throw new RangeError("progressMs must be positive and pageCount a positive integer");
  }
  return {
    now: options.now ?? Date.now,
    progressMs,
    pageCount,
    failWhen: options.failWhen ?? (() => false),
    logger: options.logger,
  };
}
