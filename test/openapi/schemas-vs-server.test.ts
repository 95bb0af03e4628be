/**
 * The document's schemas agree with the server: real answers of a running
 * boardline validate against the schemas the document gives them (Ajv, JSON
 * Schema 2020-12 as OpenAPI 3.1 uses it), and for a set of request bodies the
 * schema and the server give the same verdict — what the schema refuses, the
 * server answers 400; what it accepts, the server accepts.
 */
import { readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Boardline, startBoardline } from "../harness/boardline.js";
import { eventually } from "../harness/eventually.js";
import { postJson } from "../harness/http.js";
import { convertBody, muteBody } from "../harness/request-bodies.js";

// ajv-formats is CommonJS: its default export arrives wrapped under ESM.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default;
const doc = JSON.parse(readFileSync("openapi/boardline.v1.json", "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, "boardline");
const validator = (name: string) => ajv.getSchema(`boardline#/components/schemas/${name}`) ?? fail(name);
function fail(name: string): never {
  throw new Error(`no schema ${name}`);
}

/** Whether `value` fits the schema; the errors when it does not. */
function check(name: string, value: unknown): { ok: boolean; errors: unknown } {
  const v = validator(name);
  const ok = v(value) as boolean;
  return { ok, errors: v.errors };
}

let bl: Boardline;
beforeAll(async () => {
  bl = await startBoardline({ store: "memory" });
});
afterAll(async () => {
  await bl?.close();
});

describe("answers fit their schemas", () => {
  test("a mute, a conversion followed to its end, and error bodies", async () => {
    const mute = await postJson(bl, "/v1/channel/pstn/mute", muteBody(bl, { mute: false }));
    expect(mute.status).toBe(200);
    expect(check("channel.v1.MuteResponse", JSON.parse(mute.text))).toMatchObject({ ok: true });

    const convert = await postJson(bl, "/v1/whiteboard/fileconvert", convertBody(bl));
    expect(convert.status).toBe(200);
    const task = JSON.parse(convert.text);
    expect(check("whiteboard.v1.ConvertFileResponse", task)).toMatchObject({ ok: true });
    let conversion: { status?: string; pages?: unknown[] } = {};
    await eventually(
      async () => {
        const res = await postJson(bl, `/v1/whiteboard/fileconvert/${task.task_uuid}`, undefined, { method: "GET" });
        conversion = JSON.parse(res.text);
        return conversion.status === "Finished";
      },
      10_000,
      "the conversion to finish",
    );
    expect(conversion.pages?.length).toBeGreaterThan(0);
    expect(check("whiteboard.v1.Conversion", conversion)).toMatchObject({ ok: true });

    const errors = await Promise.all([
      postJson(bl, "/v1/channel/pstn/mute", muteBody(bl), { token: null }),
      postJson(bl, "/v1/channel/pstn/mute", "{", {}),
      postJson(bl, "/v1/channel/pstn/mute", muteBody(bl), { contentType: "text/plain" }),
      postJson(bl, "/v1/whiteboard/fileconvert/nope", undefined, { method: "GET" }),
    ]);
    expect(errors.map((e) => e.status)).toEqual([401, 400, 415, 404]);
    for (const e of errors) expect(check("Error", JSON.parse(e.text))).toMatchObject({ ok: true });
  });

  test("a schema is not a rubber stamp", () => {
    expect(check("channel.v1.MuteResponse", { mute: true }).ok).toBe(false); // uid is always written
    expect(check("Error", { error: { code: "611" } }).ok).toBe(false);
  });
});

describe("requests: the schema's verdict is the server's", () => {
  const long = (n: number) => "x".repeat(n);
  const mutes: ReadonlyArray<[string, (bl: Boardline) => Record<string, unknown>, boolean]> = [
    ["a valid mute", (b) => muteBody(b), true],
    ["unmute", (b) => muteBody(b, { mute: false }), true],
    ["uid of 255 characters", (b) => muteBody(b, { uid: long(255) }), true],
    ["no mute", (b) => muteBody(b, { mute: undefined }), false],
    ["empty uid", (b) => muteBody(b, { uid: "" }), false],
    ["uid of 256 characters", (b) => muteBody(b, { uid: long(256) }), false],
    ["a control character in uid", (b) => muteBody(b, { uid: "a\u0001b" }), false],
    ["mute as a string", (b) => muteBody(b, { mute: "yes" }), false],
    ["passphrase of 257 characters", (b) => muteBody(b, { passphrase: long(257) }), false],
  ];
  test.each(mutes)("mute: %s", async (_, body, valid) => {
    const request = JSON.parse(JSON.stringify(body(bl)));
    expect(check("channel.v1.MuteRequest", request).ok).toBe(valid);
    const res = await postJson(bl, "/v1/channel/pstn/mute", request);
    expect(res.status).toBe(valid ? 200 : 400);
  });

  const converts: ReadonlyArray<[string, (bl: Boardline) => Record<string, unknown>, boolean]> = [
    ["a valid conversion", (b) => convertBody(b), true],
    ["scale 0.1", (b) => convertBody(b, { conversion_scale: 0.1 }), true],
    ["scale 3", (b) => convertBody(b, { conversion_scale: 3 }), true],
    ["scale 3.5", (b) => convertBody(b, { conversion_scale: 3.5 }), false],
    ["scale 0.05", (b) => convertBody(b, { conversion_scale: 0.05 }), false],
    ["an unknown conversion type", (b) => convertBody(b, { conversion_type: "animated" }), false],
    ["no resource_url", (b) => convertBody(b, { resource_url: undefined }), false],
    [
      "a resource_url over 2048 characters",
      (b) => convertBody(b, { resource_url: `https://e.com/${long(2040)}` }),
      false,
    ],
  ];
  test.each(converts)("convert: %s", async (_, body, valid) => {
    const request = JSON.parse(JSON.stringify(body(bl)));
    expect(check("whiteboard.v1.ConvertFileRequest", request).ok).toBe(valid);
    const res = await postJson(bl, "/v1/whiteboard/fileconvert", request);
    expect(res.status).toBe(valid ? 200 : 400);
  });
});
