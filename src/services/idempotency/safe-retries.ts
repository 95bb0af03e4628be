/**
 * Safe retries (docs/architecture.md, "Safe retries"): a call sent with an
 * Idempotency-Key does its work once, and a retry with the same key and the
 * same request gets the first answer again. Transport-free: the key and the
 * request come from the call, the record lives in the store (IdempotencyStore).
 *
 * - The key is claimed before any work (one store step). A key already held
 *   answers at once: another request under it → `idempotency_key_reused`
 *   (422); its answer → that answer; a call still working, or one whose
 *   outcome is unknown → `idempotency_key_busy` (409) with `retryAfterSeconds`.
 * - A call that fails before it asks its backend (for ConvertFile the queue,
 *   for CreateChannel the store) is not stored: the key is released, and a
 *   retry does the work. So is one refused outright (`invalid`, a full queue,
 *   `unavailable` with `retryAfterSeconds`, …) — nothing was made, and the
 *   same request would fail again.
 * - Any other failure after that (a time-out, a reset connection, the record
 *   not written) leaves the outcome unknown: the key is marked `unknown` and
 *   stays locked for `lockMs` from then; after that it is free, and a retry
 *   does the work again.
 * - A store failure while releasing or marking is not the caller's: the claim
 *   still expires after `lockMs` by itself.
 */
import { createHash, randomUUID } from "node:crypto";
import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { Failure } from "../failure.js";
import type { IdempotencyClaim, IdempotencyScope, IdempotencyStore } from "./ports.js";

/** One call under a key: the work, and how its answer is kept as text. */
export interface KeyedCall<A> {
  readonly scope: IdempotencyScope;
  /** The request's fingerprint (`fingerprintOf`). */
  readonly fingerprint: string;
  /** Does the work; calls `askingBackend()` right before it asks the backend. */
  work(askingBackend: () => void): Promise<A>;
  encode(answer: A): string;
  /** Undefined when the stored text is not an answer. */
  decode(text: string): A | undefined;
}

/**
 * How long a claim holds a key: longer than a call can take — the backend's
 * deadline, four store calls at theirs (two before the backend, the task's
 * record and the completion after it), and 1 s to spare. 15 s by default.
 */
export function retryLockMs(backendTimeoutMs: number, storeTimeoutMs: number): number {
  return backendTimeoutMs + 4 * storeTimeoutMs + 1000;
}

/**
 * sha256 hex of the method's name and the request's deterministic binary
 * encoding (unknown fields left out), so a request decoded from JSON and the
 * same one from protobuf have one fingerprint.
 */
export function fingerprintOf<D extends DescMessage>(schema: D, request: MessageShape<D>): string {
  return createHash("sha256")
    .update(schema.typeName)
    .update("\0")
    .update(toBinary(schema, request, { writeUnknownFields: false }))
    .digest("hex");
}

export class SafeRetries {
  constructor(
    private readonly store: IdempotencyStore,
    /** How long a claim (and an unknown outcome) holds a key (`retryLockMs`). */
    private readonly lockMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async run<A>(call: KeyedCall<A>): Promise<A> {
    const request = { owner: randomUUID(), fingerprint: call.fingerprint, lockMs: this.lockMs, at: this.now() };
    const found = await this.store.claim(call.scope, request);
    if (found.kind !== "claimed") return answerFound(found, call);
    let asked = false;
    let answer: A;
    try {
      answer = await call.work(() => {
        asked = true;
      });
    } catch (e) {
      await this.settleFailure(call.scope, request.owner, asked && !isRefusal(e));
      throw e;
    }
    // The work is done: the caller gets its answer even if keeping it fails (the claim then runs out).
    await this.store.complete(call.scope, request, call.encode(answer)).catch(() => false);
    return answer;
  }

  private async settleFailure(scope: IdempotencyScope, owner: string, unknown: boolean): Promise<void> {
    const settled = unknown ? this.store.markUnknown(scope, owner, this.lockMs) : this.store.release(scope, owner);
    await settled.catch(() => false);
  }
}

/** The answer to a call whose key was already claimed. */
function answerFound<A>(found: Exclude<IdempotencyClaim, { kind: "claimed" }>, call: KeyedCall<A>): A {
  if (found.fingerprint !== call.fingerprint) {
    throw new Failure("idempotency_key_reused", {
      detail: "this Idempotency-Key was used with a different request; use a new key for a new request",
    });
  }
  if (found.kind === "done") {
    const answer = call.decode(found.answer);
    if (answer === undefined) throw new Failure("internal", { cause: new Error("unreadable stored answer") });
    return answer;
  }
  if (found.kind === "pending") {
    throw new Failure("idempotency_key_busy", {
      detail: "a request with this Idempotency-Key is still in progress, retry later",
      retryAfterSeconds: 1,
    });
  }
  throw new Failure("idempotency_key_busy", {
    detail: "the outcome of the request with this Idempotency-Key is unknown; retry after Retry-After seconds",
    retryAfterSeconds: Math.max(1, Math.ceil(found.expiresInMs / 1000)),
  });
}

/**
 * The backend refused the request outright: nothing was made
 * (ConversionBackend.createTask; a full conversion queue takes nothing in; for
 * CreateChannel the store is the backend, and a channel that exists or a
 * passphrase taken leave nothing behind).
 */
function isRefusal(e: unknown): boolean {
  if (!(e instanceof Failure)) return false;
  if (e.kind === "unavailable") return e.retryAfterSeconds !== undefined;
  return (
    e.kind === "invalid" || e.kind === "already_exists" || e.kind === "failed_precondition" || e.kind === "queue_full"
  );
}
