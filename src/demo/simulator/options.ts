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
  /**
   * Duration of one progress step (Waiting, each page, …): a task is Finished
   * after (pageCount + 1) steps. Default 500 ms.
   */
  readonly progressMs?: number;
  /** Pages of every simulated document. Default 3. */
  readonly pageCount?: number;
  /** Resources whose conversion ends in `Fail`. Default: those whose URL path contains `fail`. */
  readonly failWhen?: (resource: string) => boolean;
  /** Resources that convert slowly (a step of `slowProgressMs`). Default: those whose URL path contains `slow`. */
  readonly slowWhen?: (resource: string) => boolean;
  /** Duration of one progress step of a slow resource. Default one minute. */
  readonly slowProgressMs?: number;
  /**
   * Serve the converted pages' images itself (page-images.ts), naming them under its own
   * `<url>/files`, so a browser shows them (the demo). Default: named at FILES_BASE, never served.
   */
  readonly serveFiles?: boolean;
  /**
   * Creates (conversions started) a second per project, as the backend limits them: a token
   * bucket (create-limit.ts); a create over it answers 400 with TOO_MANY_TASKS_ERROR_CODE. The
   * project is the credential: an opaque token, or a signed token's access key. Default (or
   * `Infinity`): no limit. The real backend's default is 1.
   */
  readonly createsPerSecond?: number;
  /** Clock for token expiry, task progress and the creates limit. Default `Date.now`. */
  readonly now?: () => number;
  readonly logger?: Logger;
}

/** The options with their defaults, as the routes and the server use them. */
export interface SimulatorSettings {
  readonly now: () => number;
  readonly progressMs: number;
  readonly slowProgressMs: number;
  readonly pageCount: number;
  readonly failWhen: (resource: string) => boolean;
  readonly slowWhen: (resource: string) => boolean;
  readonly logger: Logger | undefined;
  readonly serveFiles: boolean;
  /** `Infinity` when there is no limit. */
  readonly createsPerSecond: number;
}

export function resolveSettings(options: SimulatorOptions): SimulatorSettings {
  const progressMs = options.progressMs ?? 500;
  const slowProgressMs = options.slowProgressMs ?? 60_000;
  const pageCount = options.pageCount ?? 3;
  if (!(progressMs > 0) || !(slowProgressMs > 0) || !Number.isSafeInteger(pageCount) || pageCount < 1) {
    throw new RangeError("progressMs and slowProgressMs must be positive and pageCount a positive integer");
  }
  const createsPerSecond = options.createsPerSecond ?? Number.POSITIVE_INFINITY;
  if (!(createsPerSecond > 0)) throw new RangeError("createsPerSecond must be positive (Infinity: no limit)");
  return {
    now: options.now ?? Date.now,
    progressMs,
    slowProgressMs,
    pageCount,
    failWhen: options.failWhen ?? pathContains("fail"),
    slowWhen: options.slowWhen ?? pathContains("slow"),
    logger: options.logger,
    serveFiles: options.serveFiles ?? false,
    createsPerSecond,
  };
}

/** Whether the resource URL's path contains `word` (any case). */
function pathContains(word: string): (resource: string) => boolean {
  return (resource) => {
    try {
      return new URL(resource).pathname.toLowerCase().includes(word);
    } catch {
      return false;
    }
  };
}
