/**
 * Small readers for JSON the conversion backend sends: each says whether a
 * value has the shape we rely on, so that the answer readers can refuse
 * anything else instead of passing half-understood data along.
 */
import type { ConversionType } from "../services/ports.js";

/** The text as a JSON object, or undefined when it is not JSON or not an object. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return isRecord(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Non-empty, bounded, and safe to use as a path segment and a Redis key part. */
export function isUuid(value: unknown): value is string {
  return typeof value === "string" && /^[A-Za-z0-9_-]{1,128}$/.test(value);
}

export function isConversionType(value: unknown): value is ConversionType {
  return value === "static" || value === "dynamic";
}

/** A whole number, zero or more. */
export function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

export function isPercentage(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 && value <= 100;
}

/** An http(s) URL, as the backend gives for converted files and previews. */
export function isHttpUrl(value: unknown): value is string {
  if (typeof value !== "string") return false;
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
