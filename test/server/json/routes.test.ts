/** The JSON route table read off google.api.http rules: what it matches, what it refuses at start-up. */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { PstnService } from "../../../gen/channel/v1/pstn_pb.js";
import { type HttpRule, HttpRuleSchema } from "../../../gen/google/api/http_pb.js";
import { WhiteboardService } from "../../../gen/whiteboard/v1/whiteboard_pb.js";
import { JsonRouteTable } from "../../../src/server/json/routes.js";
import type { ServedMethod } from "../../../src/server/call/served-methods.js";

const served = (method: ServedMethod["method"]): ServedMethod => ({ method, invoke: async () => ({}) });
const mute = served(PstnService.method.mute as ServedMethod["method"]);
const convert = served(WhiteboardService.method.convertFile as ServedMethod["method"]);
const rule = (r: Parameters<typeof create<typeof HttpRuleSchema>>[1]): HttpRule => create(HttpRuleSchema, r);

describe("JSON routes", () => {
  it("the annotated routes of the contract are POST routes with a body", () => {
    const table = JsonRouteTable.fromAnnotations([mute, convert]);
    const found = table.match("POST", "/v1/channel/pstn/mute");
    expect(found !== undefined && "route" in found && found.route.served).toBe(mute);
    expect(table.match("GET", "/v1/channel/pstn/mute")).toEqual({ allow: ["POST"] });
    expect(table.match("POST", "/v1/channel/pstn/mute/")).toBeUndefined();
    expect(table.match("POST", "/nothing")).toBeUndefined();
  });

  it("binds single-segment path variables to request fields, percent-decoded", () => {
    const table = new JsonRouteTable([
      { served: mute, rule: rule({ pattern: { case: "get", value: "/v1/things/{uid}" } }) },
      { served: convert, rule: rule({ pattern: { case: "delete", value: "/v1/things/{passphrase}" } }) },
      { served: mute, rule: rule({ pattern: { case: "get", value: "/v1/things/{uid}/watch" } }) },
    ]);
    expect(table.match("GET", "/v1/things/a%2Fb")).toMatchObject({ params: { uid: "a/b" } });
    expect(table.match("DELETE", "/v1/things/x")).toMatchObject({
      route: { served: convert },
      params: { passphrase: "x" },
    });
    expect(table.match("GET", "/v1/things/x/watch")).toMatchObject({ params: { uid: "x" } });
    expect(table.match("PUT", "/v1/things/x")).toEqual({ allow: ["GET", "DELETE"] });
    expect(table.match("GET", "/v1/things/")).toBeUndefined(); // an empty variable is no match
    expect(table.match("GET", "/v1/things/%E0%A4%A")).toBeUndefined(); // nor a malformed escape
    expect(table.match("GET", "/v1/things/a/b/c")).toBeUndefined();
  });

  it("a custom verb is part of a literal segment", () => {
    const table = new JsonRouteTable([
      { served: mute, rule: rule({ pattern: { case: "post", value: "/v1/channel/pstn/events:watch" }, body: "*" }) },
    ]);
    expect(table.match("POST", "/v1/channel/pstn/events:watch")).toMatchObject({ params: {} });
  });

  it.each<[string, HttpRule, RegExp]>([
    ["custom pattern", rule({ pattern: { case: "custom", value: { kind: "HEAD", path: "/x" } } }), /only get/],
    ["no pattern", rule({}), /only get/],
    [
      "additional bindings",
      rule({ pattern: { case: "post", value: "/x" }, body: "*", additionalBindings: [rule({})] }),
      /only get/,
    ],
    ["POST without body", rule({ pattern: { case: "post", value: "/x" } }), /needs body/],
    ["GET with a body", rule({ pattern: { case: "get", value: "/x" }, body: "*" }), /needs body/],
    ["a variable pattern", rule({ pattern: { case: "get", value: "/x/{uid=**}" } }), /unsupported path segment/],
    ["an unknown field", rule({ pattern: { case: "get", value: "/x/{nope}" } }), /not a field/],
    ["a relative path", rule({ pattern: { case: "get", value: "x" } }), /must start/],
  ])("refuses %s at start-up", (_, r, message) => {
    expect(() => new JsonRouteTable([{ served: mute, rule: r }])).toThrow(message);
  });

  it("refuses two routes for the same method and path shape", () => {
    expect(
      () =>
        new JsonRouteTable([
          { served: mute, rule: rule({ pattern: { case: "get", value: "/x/{uid}" } }) },
          { served: convert, rule: rule({ pattern: { case: "get", value: "/x/{passphrase}" } }) },
        ]),
    ).toThrow(/duplicate route/);
  });
});
