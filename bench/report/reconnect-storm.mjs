/**
 * Renders bench/scenarios/reconnect-storm.mjs's cells as its section of docs/performance.md.
 */
import os from "node:os";
import { measuredLine } from "./document.mjs";

/** @param {number} n */
const fmt = (n) => (Number.isFinite(n) ? n.toFixed(0) : "—");

/**
 * @param {{ results: { size: number, mode: string, live: number, p50: number, p99: number, max: number,
 *   allLiveMs: number, refused: number, failed: number }[], startedAt: Date, loadStart: number[],
 *   pinning: string, maxWatches: number }} r
 */
export function render(r) {
  const rows = r.results.map(
    (c) =>
      `| ${c.size} | ${c.mode} | ${c.live} | ${fmt(c.p50)} / ${fmt(c.p99)} / ${fmt(c.max)} | ${fmt(c.allLiveMs)} | ${c.refused} | ${c.failed} |`,
  );
  const load = (/** @type {number[]} */ xs) => xs.map((l) => l.toFixed(2)).join(" ");
  return [
    measuredLine("reconnect-storm", r.startedAt),
    "",
    `Load average ${load(r.loadStart)} at the start, ${load(os.loadavg())} at the end; ${r.pinning}; MAX_WATCHES ${r.maxWatches}.`,
    "Each cell: a fresh boardline; half the watches gRPC (20 HTTP/2 connections), half SSE (a connection each), two per channel, each resuming from before its channel's one event, so it is live when that event comes. Times in ms: from a watch's request until it is live, and from the first request until every watch is live.",
    "",
    "| watches | opened | live | to live p50 / p99 / max | all live after | refused (429) | failed |",
    "| ------: | ------ | ---: | ----------------------- | -------------: | ------------: | -----: |",
    ...rows,
  ].join("\n");
}
