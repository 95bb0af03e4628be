/**
 * The in-memory store's idempotency records, in its key space under the
 * documented keys and fields (idempotency-records.ts). Each operation runs to
 * its end without yielding, so it is as atomic as the Redis scripts.
 */
import type { ClaimRequest, IdempotencyClaim, IdempotencyScope, IdempotencyStore } from "../../services/ports.js";
import { doneFields, existingClaim, heldBy, pendingFields } from "../schema/idempotency-records.js";
import type { KeySchema } from "../schema/keys.js";
import type { MemoryKeyspace } from "./keyspace.js";
import type { Fields } from "../schema/channel-records.js";

export class MemoryIdempotency implements IdempotencyStore {
  constructor(
    private readonly data: MemoryKeyspace,
    private readonly keys: KeySchema,
    private readonly guard: () => void,
    private readonly ttlSeconds: number,
  ) {}

  async claim(scope: IdempotencyScope, request: ClaimRequest): Promise<IdempotencyClaim> {
    this.guard();
    const key = this.keyOf(scope);
    const entry = this.data.get(key);
    if (entry?.type === "hash") {
      const left = entry.expiresAt === undefined ? 0 : entry.expiresAt - this.data.now();
      const found = existingClaim(Object.fromEntries(entry.fields), left);
      if (found !== undefined) return found;
    }
    this.write(key, pendingFields(request), request.lockMs);
    return { kind: "claimed" };
  }

  async complete(scope: IdempotencyScope, request: Omit<ClaimRequest, "lockMs">, answer: string): Promise<boolean> {
    this.guard();
    const key = this.keyOf(scope);
    if (this.data.get(key) !== undefined && !heldBy(this.data.hashFields(key), request.owner)) return false;
    this.write(key, doneFields(request, answer), this.ttlSeconds * 1000);
    return true;
  }

  async markUnknown(scope: IdempotencyScope, owner: string, lockMs: number): Promise<boolean> {
    this.guard();
    const key = this.keyOf(scope);
    if (!heldBy(this.data.hashFields(key), owner)) return false;
    this.data.writableHash(key).set("state", "unknown");
    this.data.expireIn(key, lockMs);
    return true;
  }

  async release(scope: IdempotencyScope, owner: string): Promise<boolean> {
    this.guard();
    const key = this.keyOf(scope);
    if (!heldBy(this.data.hashFields(key), owner)) return false;
    return this.data.delete(key);
  }

  private keyOf(scope: IdempotencyScope): string {
    return this.keys.idempotency(scope.project, scope.subject, scope.key);
  }

  /** Replaces whatever the key held with a hash of `fields` expiring after `ms`. */
  private write(key: string, fields: Fields, ms: number): void {
    this.data.set(key, { type: "hash", fields: new Map(Object.entries(fields)), expiresAt: this.data.now() + ms });
  }
}
