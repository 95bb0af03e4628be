/**
 * Routes as a table of method + path template → handler, and the lookup that
 * tells "no such path" (404) from "no such method on this path" (405).
 */
import type http from "node:http";
import type { Region } from "../../services/ports.js";
import type { SimulatorOperation } from "./faults.js";
import type { Answer } from "./http-io.js";
import type { SimulatorState } from "./state.js";

/** A request that passed the fault, token and region checks. */
export interface RouteRequest {
  readonly req: http.IncomingMessage;
  readonly url: URL;
  /** Parsed JSON, the raw text when it is not JSON, or undefined when empty. */
  readonly body: unknown;
  /** The `:name` segments of the path, percent-decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly region: Region;
  /** The token's project (credentials.ts): what the creates limit is kept per. */
  readonly project: string;
}

export interface Route {
  readonly method: string;
  /** `/`-separated; a `:name` segment matches any one non-empty segment. */
  readonly path: string;
  /** What it does; faults can be aimed at one operation. */
  readonly operation: SimulatorOperation;
  /** The status of a successful answer (what a "garbage" fault answers with). */
  readonly okStatus: number;
  /** Whether the token's role must allow starting conversions. */
  readonly write: boolean;
  readonly handle: (request: RouteRequest, state: SimulatorState) => Answer;
}

export type RouteMatch =
  | { readonly kind: "found"; readonly route: Route; readonly params: Readonly<Record<string, string>> }
  /** The path exists, not with this method: the methods it has, for `allow`. */
  | { readonly kind: "wrong-method"; readonly allow: string }
  | { readonly kind: "not-found" };

export function matchRoute(routes: readonly Route[], method: string | undefined, pathname: string): RouteMatch {
  const allowed: string[] = [];
  for (const route of routes) {
    const params = matchPath(route.path, pathname);
    if (params === undefined) continue;
    if (route.method === method) return { kind: "found", route, params };
    allowed.push(route.method);
  }
  return allowed.length === 0 ? { kind: "not-found" } : { kind: "wrong-method", allow: allowed.join(", ") };
}

/** The params when `pathname` fits the template, else undefined. */
export function matchPath(template: string, pathname: string): Record<string, string> | undefined {
  const want = template.split("/");
  const got = pathname.split("/");
  if (want.length !== got.length) return undefined;
  const params: Record<string, string> = {};
  for (const [i, segment] of want.entries()) {
    const actual = got[i] ?? "";
    if (segment.startsWith(":")) {
      if (actual === "") return undefined;
      params[segment.slice(1)] = safeDecode(actual);
    } else if (segment !== actual) {
      return undefined;
    }
  }
  return params;
}

/** A segment that does not decode comes out as "", which names nothing. */
function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return "";
  }
}
