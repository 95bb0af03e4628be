/**
 * The phone line end to end (helpers/line-suite.ts) on the in-memory store
 * and on one real Redis.
 */
import { describe } from "vitest";
import { startBoardline } from "../harness/boardline.js";
import { lineSuite } from "./helpers/line-suite.js";

describe("on one Redis", () => lineSuite((o) => startBoardline(o)));
describe("in memory", () => lineSuite((o) => startBoardline({ ...o, store: "memory" })));
