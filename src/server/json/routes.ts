/**
 * The JSON route table, read off the methods' `google.api.http` annotations —
 * there is no second route table. What it supports is what the contract uses
 * and nothing a reader could misread:
 *
 * - `get`, `post`, `put`, `patch`, `delete` (no `custom`, no additional bindings);
 * - a path of literal segments (`[A-Za-z0-9._-]`, a custom verb like `:watch`
 *   allowed at the end) and single-segment variables `{field}` naming a field
 *   of the request message (no `{field=pattern}`);
 * - `body: "*"` for a method with a body (POST, PUT, PATCH); none for GET and
 *   DELETE, whose request comes from the path variables alone.
 *
 * Anything else in an annotation stops start-up with the method's name.
 */
import { type DescMethod, getOption, hasOption } from "@bufbuild/protobuf";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import type { Served } from "../call/served-methods.js";

/** A method's `google.api.http` annotation, checked (see above). */
export interface HttpBinding {
  readonly httpMethod: string;
  /** The annotation's path, e.g. `/v1/whiteboard/fileconvert/{task_uuid}`. */
  readonly template: string;
  /** Whether the request message is the JSON body (else: the path variables). */
  readonly hasBody: boolean;
  /** The template's segments after its leading "/": literals, and variables naming a request field. */
  readonly segments: readonly Segment[];
}

export type Segment = { readonly literal: string } | { readonly field: string };

export interface JsonRoute {
  readonly httpMethod: string;
  /** The annotation's path, e.g. `/v1/whiteboard/fileconvert/{task_uuid}`. */
  readonly template: string;
  readonly served: Served;
  /** Whether the request message is the JSON body (else: the path variables). */
  readonly hasBody: boolean;
}

/** A route found for a request, with its path variables (field name → decoded value). */
export interface RouteMatch {
  readonly route: JsonRoute;
  readonly params: Readonly<Record<string, string>>;
}

interface Compiled {
  readonly route: JsonRoute;
  readonly segments: readonly Segment[];
}

const LITERAL = /^[A-Za-z0-9._-]+(:[A-Za-z0-9._-]+)?$/;
const VARIABLE = /^\{([a-z][a-z0-9_]*)\}$/;
const WITH_BODY = new Set(["POST", "PUT", "PATCH"]);

export class JsonRouteTable {
  /** Paths without variables, looked up whole (every route of today's mute and convert). */
  private readonly exact = new Map<string, Map<string, JsonRoute>>();
  private readonly templated: Compiled[] = [];

  /** The routes of the methods' `google.api.http` annotations. */
  static fromAnnotations(methods: readonly Served[]): JsonRouteTable {
    return new JsonRouteTable(
      methods.flatMap((served) => {
        const rule = httpRuleOf(served.method);
        return rule === undefined ? [] : [{ served, rule }];
      }),
    );
  }

  constructor(rules: ReadonlyArray<{ readonly served: Served; readonly rule: HttpRule }>) {
    for (const { served, rule } of rules) {
      const { httpMethod, template, hasBody, segments } = httpBinding(served.method, rule);
      this.add({ route: { httpMethod, template, served, hasBody }, segments });
    }
  }

  /**
   * The route for `method` and `path`; `{ allow }` when the path is known but
   * not with that method; undefined for a path no route has.
   */
  match(method: string, path: string): RouteMatch | { readonly allow: readonly string[] } | undefined {
    const byMethod = this.exact.get(path);
    if (byMethod !== undefined) {
      const route = byMethod.get(method);
      return route === undefined ? { allow: [...byMethod.keys()] } : { route, params: {} };
    }
    const parts = path.split("/");
    const allow: string[] = [];
    for (const c of this.templated) {
      const params = bind(c.segments, parts);
      if (params === undefined) continue;
      if (c.route.httpMethod === method) return { route: c.route, params };
      allow.push(c.route.httpMethod);
    }
    return allow.length > 0 ? { allow } : undefined;
  }

  private add(c: Compiled): void {
    const where = `${c.route.served.method.parent.typeName}.${c.route.served.method.name}`;
    if (c.segments.every((s) => "literal" in s)) {
      const byMethod = this.exact.get(c.route.template) ?? new Map<string, JsonRoute>();
      if (byMethod.has(c.route.httpMethod)) throw new Error(`${where}: duplicate route ${c.route.template}`);
      byMethod.set(c.route.httpMethod, c.route);
      this.exact.set(c.route.template, byMethod);
      return;
    }
    const clash = this.templated.find(
      (o) => o.route.httpMethod === c.route.httpMethod && sameShape(o.segments, c.segments),
    );
    if (clash !== undefined) throw new Error(`${where}: duplicate route ${c.route.template}`);
    this.templated.push(c);
  }
}

/** The method's `google.api.http` annotation; undefined when it has none. */
export function httpRuleOf(method: DescMethod): HttpRule | undefined {
  return hasOption(method, http) ? getOption(method, http) : undefined;
}

/**
 * What `rule` (an annotation of `method`) binds the method to. Throws, naming
 * the method, for anything this table does not support (see above).
 */
export function httpBinding(method: DescMethod, rule: HttpRule): HttpBinding {
  const where = `${method.parent.typeName}.${method.name}`;
  const { pattern } = rule;
  if (pattern.case === undefined || pattern.case === "custom" || rule.additionalBindings.length > 0) {
    throw new Error(`${where}: only get/post/put/patch/delete with one path is supported`);
  }
  const httpMethod = pattern.case.toUpperCase();
  const hasBody = WITH_BODY.has(httpMethod);
  if (rule.body !== (hasBody ? "*" : "")) {
    throw new Error(`${where}: ${httpMethod} needs body: ${hasBody ? '"*"' : "none"} (got "${rule.body}")`);
  }
  const template = pattern.value;
  if (!template.startsWith("/")) throw new Error(`${where}: the path must start with "/": ${template}`);
  const segments = template
    .slice(1)
    .split("/")
    .map((part): Segment => {
      if (LITERAL.test(part)) return { literal: part };
      const v = VARIABLE.exec(part);
      if (v === null) throw new Error(`${where}: unsupported path segment "${part}"`);
      const field = v[1] as string;
      if (method.input.fields.find((f) => f.name === field) === undefined) {
        throw new Error(`${where}: {${field}} is not a field of ${method.input.typeName}`);
      }
      return { field };
    });
  return { httpMethod, template, hasBody, segments };
}

/** The path variables when `parts` (the path split at "/", with its leading empty part) fits the segments. */
function bind(segments: readonly Segment[], parts: readonly string[]): Record<string, string> | undefined {
  if (parts.length !== segments.length + 1 || parts[0] !== "") return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i] as Segment;
    const part = parts[i + 1] as string;
    if ("literal" in s) {
      if (part !== s.literal) return undefined;
      continue;
    }
    let value: string;
    try {
      value = decodeURIComponent(part);
    } catch {
      return undefined;
    }
    if (value === "") return undefined;
    params[s.field] = value;
  }
  return params;
}

/** Two templates that match the same paths (literals equal, variables anywhere the other has one). */
function sameShape(a: readonly Segment[], b: readonly Segment[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((s, i) => {
    const o = b[i] as Segment;
    return "literal" in s ? "literal" in o && o.literal === s.literal : !("literal" in o);
  });
}
