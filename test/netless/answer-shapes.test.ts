/**
 * The readers of the backend's answers on their own: shapes the simulator
 * never sends (bare image URLs, pages out of order, numeric error codes, the
 * docs' cancel acknowledgement), and how "not found" and "over capacity"
 * answers are told apart from other errors.
 */
import { describe, expect, it } from "vitest";
import { isOverCapacity, isTaskNotFound } from "../../src/netless/answer-failures.js";
import { type ConversionTaskStatus, type ConvertedFile, legacyState } from "../../src/netless/legacy-shapes.js";
import {
  parseCancelAcknowledgement,
  parseProjectorCreated,
  parseProjectorState,
} from "../../src/netless/projector-shapes.js";

const json = (value: unknown) => JSON.stringify(value);

describe("parseProjectorState", () => {
  it("merges images and previews by page number, sorted, and takes bare image URLs", () => {
    const state = parseProjectorState(
      json({
        uuid: "abc",
        type: "static",
        status: "Converting",
        convertedPercentage: 40,
        pageCount: 10,
        images: {
          "10": "https://cdn.example/10.png",
          "2": { url: "https://cdn.example/2.png", width: 800, height: 600 },
        },
        previews: { "2": "https://cdn.example/p2.png" },
        note: "https://cdn.example/note.json",
      }),
    );
    expect(state).toEqual({
      status: "Converting",
      percent: 40,
      pageCount: 10,
      pages: [
        {
          page: 2,
          url: "https://cdn.example/2.png",
          width: 800,
          height: 600,
          previewUrl: "https://cdn.example/p2.png",
        },
        { page: 10, url: "https://cdn.example/10.png" },
      ],
    });
  });

  it("fills in a missing percentage, keeps it within 0–100, and ignores an empty prefix", () => {
    expect(parseProjectorState(json({ status: "Waiting" }))).toEqual({ status: "Waiting", percent: 0, pages: [] });
    expect(parseProjectorState(json({ status: "Finished", prefix: "" }))).toEqual({
      status: "Finished",
      percent: 100,
      pages: [],
    });
    expect(parseProjectorState(json({ status: "Converting", convertedPercentage: 140 }))?.percent).toBe(100);
    expect(parseProjectorState(json({ status: "Converting", convertedPercentage: -3 }))?.percent).toBe(0);
    // null is as good as absent.
    const nulls = { convertedPercentage: null, pageCount: null, prefix: null, images: null, errorCode: null };
    expect(parseProjectorState(json({ status: "Fail", errorMessage: "x", ...nulls }))).toEqual({
      status: "Fail",
      percent: 0,
      pages: [],
      failedReason: "x",
    });
  });

  it("says why a task failed from its error message and code, whichever it has", () => {
    const reason = (fields: object) => parseProjectorState(json({ status: "Fail", ...fields }))?.failedReason;
    expect(reason({ errorCode: 2110101, errorMessage: "download file failed" })).toBe(
      "download file failed (error 2110101)",
    );
    expect(reason({ errorCode: "2050102" })).toBe("error 2050102");
    expect(reason({ errorMessage: "file is empty" })).toBe("file is empty");
    expect(reason({})).toBeUndefined();
    // Only a failed task has a reason.
    expect(parseProjectorState(json({ status: "Abort", errorMessage: "x" }))?.failedReason).toBeUndefined();
  });

  it.each([
    ["not JSON", "<html>"],
    ["no status", json({ uuid: "abc" })],
    ["a lower-case status", json({ status: "finished" })],
    ["a uuid that is no path segment", json({ status: "Waiting", uuid: "../x" })],
    ["an unknown type", json({ status: "Waiting", type: "pdf" })],
    ["a negative page count", json({ status: "Waiting", pageCount: -1 })],
    ["a prefix that is not a URL", json({ status: "Finished", prefix: "dynamicConvert" })],
    ["page 0", json({ status: "Finished", previews: { "0": "https://cdn.example/0.png" } })],
    ["an image without a URL", json({ status: "Finished", images: { "1": { width: 1, height: 1 } } })],
    ["an error code that is an object", json({ status: "Fail", errorCode: { code: 1 } })],
    ["previews as a string", json({ status: "Finished", previews: "https://cdn.example/" })],
  ])("refuses an answer with %s", (_what, text) => {
    expect(parseProjectorState(text)).toBeUndefined();
  });
});

describe("parseProjectorCreated and parseCancelAcknowledgement", () => {
  it("reads a create answer with or without its type", () => {
    expect(parseProjectorCreated(json({ uuid: "abc", status: "Waiting" }))).toEqual({ uuid: "abc", status: "Waiting" });
    expect(parseProjectorCreated(json({ uuid: "abc", type: "dynamic", status: "Waiting" }))).toEqual({
      uuid: "abc",
      type: "dynamic",
      status: "Waiting",
    });
    expect(parseProjectorCreated(json({ uuid: "", status: "Waiting" }))).toBeUndefined();
    expect(parseProjectorCreated(json({ uuid: "abc", type: 1, status: "Waiting" }))).toBeUndefined();
  });

  it("tells the docs' {taskId, success} cancel answer from a task", () => {
    expect(parseCancelAcknowledgement(json({ taskId: "abc", success: true }))).toEqual({ success: true });
    expect(parseCancelAcknowledgement(json({ taskId: "abc", success: false }))).toEqual({ success: false });
    expect(parseCancelAcknowledgement(json({ uuid: "abc", status: "Abort", success: true }))).toBeUndefined();
    expect(parseCancelAcknowledgement(json({ success: "yes" }))).toBeUndefined();
  });
});

describe("legacyState", () => {
  const dynamicFile = (uuid: string, page: number, preview?: string) => ({
    width: 1280,
    height: 720,
    conversionFileUrl: `pptx://cdn.example/team/dynamicConvert/${uuid}/${page}.slide`,
    ...(preview === undefined ? {} : { preview }),
  });
  const task = (fields: Partial<ConversionTaskStatus>): ConversionTaskStatus => ({
    uuid: "u1",
    type: "dynamic",
    status: "Finished",
    ...fields,
  });
  const progress = (files: ConvertedFile[]) => ({
    totalPageSize: files.length,
    convertedPageSize: files.length,
    convertedPercentage: 100,
    convertedFileList: files,
  });

  it("derives a dynamic task's prefix from its pptx:// file names, and lists previews when there are some", () => {
    const state = legacyState(
      task({ progress: progress([dynamicFile("u1", 1, "https://cdn.example/p1.png"), dynamicFile("u1", 2)]) }),
    );
    expect(state).toEqual({
      status: "Finished",
      percent: 100,
      pageCount: 2,
      pages: [{ page: 1, previewUrl: "https://cdn.example/p1.png" }],
      prefix: "https://cdn.example/team/dynamicConvert",
    });
  });

  it("leaves the prefix out when the file names are of another form or of another task", () => {
    expect(legacyState(task({ progress: progress([dynamicFile("other", 1)]) }))?.prefix).toBeUndefined();
    const xml = { width: 1, height: 1, conversionFileUrl: "https://cdn.example/dynamicConvert/u1/slide/slide1.xml" };
    expect(legacyState(task({ progress: progress([xml]) }))?.prefix).toBeUndefined();
  });

  it("without progress: percent from the status, no page count, no pages", () => {
    expect(legacyState(task({ type: "static", status: "Finished" }))).toEqual({
      status: "Finished",
      percent: 100,
      pages: [],
    });
    expect(legacyState(task({ status: "Fail", failedReason: "bad file" }))).toEqual({
      status: "Fail",
      percent: 0,
      pages: [],
      failedReason: "bad file",
    });
  });

  it("refuses a static page whose URL is not http(s)", () => {
    const file = { width: 1, height: 1, conversionFileUrl: "file:///etc/passwd" };
    expect(legacyState(task({ type: "static", progress: progress([file]) }))).toBeUndefined();
  });
});

describe("not found and over capacity", () => {
  const answer = (status: number, body: unknown = {}) => ({ status, body: json(body) });

  it("a task is not found on 404, or on a 4xx that says so by code or in words", () => {
    expect(isTaskNotFound(answer(404))).toBe(true);
    expect(isTaskNotFound({ status: 404, body: "<html>" })).toBe(true);
    expect(isTaskNotFound(answer(400, { errorCode: "2010605" }))).toBe(true);
    expect(isTaskNotFound(answer(400, { code: 2011301, message: "x" }))).toBe(true);
    expect(isTaskNotFound(answer(400, { message: "Task not found" }))).toBe(true);
    expect(isTaskNotFound(answer(400, { errorCode: "2010201" }))).toBe(false);
    expect(isTaskNotFound(answer(500, { message: "task not found" }))).toBe(false);
    expect(isTaskNotFound(answer(200, { message: "task not found" }))).toBe(false);
  });

  it("the backend is over capacity on 429, or on an error answer with code 2010203", () => {
    expect(isOverCapacity(answer(429))).toBe(true);
    expect(isOverCapacity(answer(400, { errorCode: 2010203 }))).toBe(true);
    expect(
      isOverCapacity(answer(503, { errorCode: "2010203", errorMessage: "the number of tasks exceeds limit" })),
    ).toBe(true);
    expect(isOverCapacity(answer(400, { errorCode: 2010201 }))).toBe(false);
    expect(isOverCapacity(answer(201, { errorCode: 2010203 }))).toBe(false);
    expect(isOverCapacity({ status: 503, body: "upstream down" })).toBe(false);
  });
});
