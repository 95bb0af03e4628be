/**
 * The simulator's route table lookup on its own: path templates, 404 versus
 * 405, and what a `:name` segment comes out as.
 */
import { describe, expect, it } from "vitest";
import { errorAnswer } from "../../src/demo/simulator/http-io.js";
import { matchPath, matchRoute, type Route } from "../../src/demo/simulator/router.js";

const route = (method: string, path: string): Route => ({
  method,
  path,
  operation: "query",
  okStatus: 200,
  write: false,
  handle: () => errorAnswer(418, "unused"),
});

const TABLE = [route("POST", "/v1/tasks"), route("GET", "/v1/tasks/:uuid"), route("DELETE", "/v1/tasks/:uuid")];

describe("matchPath", () => {
  it("matches literal segments exactly", () => {
    expect(matchPath("/v1/tasks", "/v1/tasks")).toEqual({});
    expect(matchPath("/v1/tasks", "/v1/tasks/")).toBeUndefined();
    expect(matchPath("/v1/tasks", "/v1/task")).toBeUndefined();
  });

  it("captures one non-empty segment per :name, percent-decoded", () => {
    expect(matchPath("/v1/tasks/:uuid", "/v1/tasks/ab%20c")).toEqual({ uuid: "ab c" });
    expect(matchPath("/v1/tasks/:uuid", "/v1/tasks/")).toBeUndefined();
    expect(matchPath("/v1/tasks/:uuid", "/v1/tasks/a/b")).toBeUndefined();
  });

  it("gives an empty param for a segment that does not decode", () => {
    expect(matchPath("/v1/tasks/:uuid", "/v1/tasks/%E0%A4%A")).toEqual({ uuid: "" });
  });
});

describe("matchRoute", () => {
  it("finds the route of the method and path", () => {
    const match = matchRoute(TABLE, "DELETE", "/v1/tasks/x");
    expect(match.kind === "found" && match.route).toBe(TABLE[2]);
    expect(match.kind === "found" && match.params).toEqual({ uuid: "x" });
  });

  it("tells a wrong method (with the methods the path has) from an unknown path", () => {
    expect(matchRoute(TABLE, "GET", "/v1/tasks")).toEqual({ kind: "wrong-method", allow: "POST" });
    expect(matchRoute(TABLE, "PUT", "/v1/tasks/x")).toEqual({ kind: "wrong-method", allow: "GET, DELETE" });
    expect(matchRoute(TABLE, undefined, "/v1/tasks")).toEqual({ kind: "wrong-method", allow: "POST" });
    expect(matchRoute(TABLE, "GET", "/v1/rooms")).toEqual({ kind: "not-found" });
  });
});
