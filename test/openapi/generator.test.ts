/**
 * The OpenAPI document (openapi/boardline.v1.json): the committed file is what
 * the generator makes from the protos, a maintained validator accepts it, and
 * it says what the contract says — every annotated method at the gateway's
 * route, the protovalidate rules as schema keywords, streams as server-sent
 * events, every error of the error table. The rule translation refuses what it
 * cannot say.
 */
import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, test } from "vitest";
import { FieldRulesSchema } from "../../gen/buf/validate/validate_pb.js";
import { ChannelAdminService } from "../../gen/channel/v1/channel_admin_pb.js";
import { PstnService } from "../../gen/channel/v1/pstn_pb.js";
import { WhiteboardService } from "../../gen/whiteboard/v1/whiteboard_pb.js";
import { VARIABLES } from "../../src/config/variables.js";
import { documentedJsonErrors } from "../../src/server/call/error-docs.js";
import { httpBinding, httpRuleOf } from "../../src/server/json/routes.js";
import { openApiDocument } from "../../tools/openapi/document.js";
import { loadProtos } from "../../tools/openapi/protos.js";
import { ruleKeywords } from "../../tools/openapi/rules.js";

const committedText = readFileSync("openapi/boardline.v1.json", "utf8");
// biome-ignore lint/suspicious/noExplicitAny: a parsed JSON document, read by path
const doc = JSON.parse(committedText) as any;
const schema = (name: string) => doc.components.schemas[name];

describe("the committed document", () => {
  test("is what `npm run generate` makes from the protos (else: run it and commit)", () => {
    expect(committedText).toBe(`${JSON.stringify(openApiDocument(loadProtos()), null, 2)}\n`);
  });

  test("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(doc.openapi).toMatch(/^3\.1\./);
  });
});

describe("what it says", () => {
  test("every annotated method of the three services, at the route the gateway serves", () => {
    const methods = [...PstnService.methods, ...WhiteboardService.methods, ...ChannelAdminService.methods];
    const expected = methods.flatMap((m) => {
      const rule = httpRuleOf(m);
      if (rule === undefined) return [];
      const b = httpBinding(m, rule);
      return [`${b.httpMethod} ${b.template} ${m.parent.name}_${m.name}`];
    });
    const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
      Object.entries(item as Record<string, { operationId: string }>).map(
        ([verb, op]) => `${verb.toUpperCase()} ${path} ${op.operationId}`,
      ),
    );
    expect(documented.sort()).toEqual(expected.sort());
    expect(expected).toContain("POST /v1/channel/pstn/mute PstnService_Mute");
    expect(expected.length).toBe(20);
  });

  test("request schemas carry the protovalidate rules, under the proto field names", () => {
    const mute = schema("channel.v1.MuteRequest");
    expect(mute.required).toEqual(["uid", "passphrase", "mute"]);
    expect(mute.properties.uid).toMatchObject({ type: "string", minLength: 1, maxLength: 255 });
    expect(new RegExp(mute.properties.uid.pattern, "u").test("a\u0007b")).toBe(false);
    expect(mute.properties.mute.type).toBe("boolean");

    const convert = schema("whiteboard.v1.ConvertFileRequest");
    expect(convert.required).toEqual(["resource_url", "passphrase", "conversion_type"]);
    expect(convert.properties.conversion_type.enum).toEqual(["static", "dynamic"]);
    expect(convert.properties.conversion_scale).toMatchObject({ type: "number", minimum: 0.1, maximum: 3 });
    expect(convert.properties.resource_url).toMatchObject({ format: "uri", maxLength: 2048 });
    expect(convert.properties.resource_url.description).toMatch(/must be an http or https URL/);

    const watch = schema("channel.v1.WatchPstnEventsRequest");
    expect(watch.properties.channel_ids).toMatchObject({ type: "array", minItems: 1, uniqueItems: true });
    expect(watch.properties.channel_ids.items).toMatchObject({ type: "string", minLength: 1, maxLength: 255 });

    const state = schema("channel.v1.GetPstnStateRequest");
    expect(state.allOf).toEqual([{ oneOf: [{ required: ["passphrase"] }, { required: ["channel_id"] }] }]);
    expect(state.description).toMatch(/Exactly one of `passphrase`, `channel_id`/);
  });

  test("response schemas require what boardline always writes; timestamps are RFC 3339 strings", () => {
    const conversion = schema("whiteboard.v1.Conversion");
    expect(conversion.required).toContain("pages");
    expect(conversion.required).not.toContain("created_at");
    expect(conversion.properties.created_at).toMatchObject({ type: "string", format: "date-time" });
    expect(conversion.properties.pages.items.$ref).toBe("#/components/schemas/whiteboard.v1.ConversionPage");
    expect(schema("channel.v1.MuteResponse").required).toEqual(["uid"]); // mute has explicit presence
  });

  test("path variables are path parameters; doc comments are descriptions", () => {
    const get = doc.paths["/v1/whiteboard/fileconvert/{task_uuid}"].get;
    expect(get.parameters).toEqual([
      expect.objectContaining({ name: "task_uuid", in: "path", required: true, description: "The task uuid." }),
    ]);
    expect(get.parameters[0].schema.pattern).toBe("^[A-Za-z0-9_-]{1,128}$");
    expect(get.requestBody).toBeUndefined();
    expect(get.description).toMatch(/^GetConversion answers where a conversion task stands/);
    expect(get.description).not.toMatch(/buf:lint/);
  });

  test("server-streaming methods answer text/event-stream", () => {
    const watch = doc.paths["/v1/whiteboard/fileconvert/{task_uuid}/watch"].get.responses["200"];
    expect(Object.keys(watch.content)).toEqual(["text/event-stream"]);
    expect(watch.description).toMatch(/`whiteboard.v1.Conversion`.*`event: error`/s);
    expect(watch.content["text/event-stream"].example).toMatch(/^data: \{"task_uuid":""/);
    expect(schema("whiteboard.v1.Conversion")).toBeDefined();
  });

  test("every error of the error table, with its body schema, headers and an example the server would send", () => {
    const errors = documentedJsonErrors(VARIABLES.MAX_BODY_BYTES.default);
    expect(errors.map((e) => e.status)).toEqual([400, 401, 403, 404, 409, 410, 413, 415, 422, 429, 500, 503, 504]);
    for (const e of errors) {
      const content = doc.components.responses[`Error${e.status}`].content["application/json"];
      if (e.examples.length === 1) expect(content.example).toEqual(JSON.parse(e.examples[0]?.body ?? ""));
      else
        expect(content.examples).toEqual(
          Object.fromEntries(e.examples.map((x) => [x.name, { value: JSON.parse(x.body) }])),
        );
      expect(content.schema.$ref).toBe("#/components/schemas/Error");
    }
    expect(doc.components.responses.Error401.headers).toHaveProperty("WWW-Authenticate");
    expect(doc.components.responses.Error429.headers).toHaveProperty("Retry-After");
    // Two rows share 409: a legacy task that cannot be cancelled, and an Idempotency-Key in use (with Retry-After).
    const conflict = doc.components.responses.Error409;
    expect(Object.keys(conflict.content["application/json"].examples)).toEqual([
      "FAILED_PRECONDITION",
      "ALREADY_EXISTS",
      "IDEMPOTENCY_KEY_IN_USE",
    ]);
    expect(conflict.headers).toHaveProperty("Retry-After");
    expect(conflict.description).toMatch(/current state.*Or: ConvertFile with an `Idempotency-Key`/s);
    expect(doc.components.responses.Error422.content["application/json"].example.error.code).toBe(422);
    expect(doc.components.responses.Error400.content["application/json"].example.error.code).toBe(611);
    const mute = doc.paths["/v1/channel/pstn/mute"].post.responses;
    const get = doc.paths["/v1/whiteboard/fileconvert/{task_uuid}"].get.responses;
    expect(Object.keys(mute)).toEqual(["200", ...errors.map((e) => String(e.status))]);
    expect(Object.keys(get)).not.toContain("415"); // no body, no Content-Type to refuse
  });

  test("ConvertFile and CreateChannel document the Idempotency-Key header; no other operation does", () => {
    const convert = doc.paths["/v1/whiteboard/fileconvert"].post;
    expect(convert.parameters).toEqual([
      expect.objectContaining({ name: "Idempotency-Key", in: "header", required: false }),
    ]);
    const key = convert.parameters[0];
    expect(key.schema).toMatchObject({ type: "string", minLength: 1, maxLength: 255 });
    expect(new RegExp(key.schema.pattern, "u").test("a\u0007b")).toBe(false);
    expect(new RegExp(key.schema.pattern, "u").test('"8e03978e-40d5"')).toBe(true);
    expect(key.description).toMatch(/IDEMPOTENCY_TTL_HOURS.*422.*409 with `Retry-After`.*`idempotency-key` metadata/s);
    const others = Object.values(doc.paths).flatMap((item) =>
      Object.values(item as Record<string, { parameters?: unknown[] }>),
    );
    const withHeader = others.filter((op) => (op.parameters ?? []).some((p) => (p as { in: string }).in === "header"));
    expect(withHeader).toHaveLength(2);
    expect(withHeader).toEqual(expect.arrayContaining([convert, doc.paths["/v1/channels"].post]));
  });

  test("the bearer JWT scheme applies to every operation", () => {
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({
      type: "http",
      scheme: "bearer",
      bearerFormat: "JWT",
    });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
  });
});

describe("rule translation", () => {
  const rules = (type: object) => create(FieldRulesSchema, { type } as never);

  test("numbers: gt/gte/lt/lte/in", () => {
    expect(
      ruleKeywords(rules({ case: "int32", value: { greaterThan: { case: "gt", value: 0 } } }), "f").keywords,
    ).toEqual({ exclusiveMinimum: 0 });
    const r = rules({ case: "uint32", value: { lessThan: { case: "lt", value: 10 }, in: [1, 2] } });
    expect(ruleKeywords(r, "f").keywords).toEqual({ exclusiveMaximum: 10, enum: [1, 2] });
  });

  test("a rule it cannot say stops the generator, naming the field", () => {
    expect(() => ruleKeywords(rules({ case: "string", value: { prefix: "x" } }), "pkg.M.f")).toThrow(
      /pkg\.M\.f.*prefix is not supported/,
    );
    expect(() => ruleKeywords(rules({ case: "timestamp", value: {} }), "pkg.M.t")).toThrow(/timestamp rules/);
    const outside = rules({
      case: "int32",
      value: { greaterThan: { case: "gt", value: 10 }, lessThan: { case: "lt", value: 5 } },
    });
    expect(() => ruleKeywords(outside, "pkg.M.n")).toThrow(/exclusive range/);
  });
});
