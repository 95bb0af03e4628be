/**
 * Conversion webhooks (docs/architecture.md, "Following conversions"): with
 * CONVERSION_WEBHOOK_BASE set, each projector task is created with a URL of
 * ours the backend may call when the task moves on. Netless does not sign its
 * webhooks, so the URL carries our own signature: a random id chosen before
 * the task exists, and `sig` = base64url(HMAC-SHA256(CONVERSION_WEBHOOK_SECRET,
 * id)). The id is mapped to the task once the backend has named it.
 *
 * A call with the right signature is only a hint: it makes the task due now
 * (if it is still followed) and wakes this instance's follower, which then asks
 * the backend as on any poll. Nothing the caller sends is believed. A wrong or
 * missing signature is `unauthenticated` and nothing is read or queried; a
 * right one for an id we do not know (yet, or any more) does nothing: the
 * follower's own schedule goes on. Transport-free: src/server shapes the URL
 * and the answers.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { Failure } from "../failure.js";
import type { Store } from "../ports.js";

export interface ConversionWebhooksOptions {
  /** The HMAC key (CONVERSION_WEBHOOK_SECRET): the same on every instance. */
  readonly secret: Uint8Array;
  /** The URL the backend is to call for a webhook id and its signature. */
  readonly endpoint: (id: string, sig: string) => string;
  readonly store: Store;
  /** Makes this instance's follower look for due tasks now. */
  readonly wakeFollower: () => void;
  readonly now?: () => number;
}

/** What ConvertFile hands the backend, and the id to map to the task it creates. */
export interface IssuedWebhook {
  readonly id: string;
  readonly url: string;
}

export class ConversionWebhooks {
  private readonly now: () => number;

  constructor(private readonly o: ConversionWebhooksOptions) {
    this.now = o.now ?? Date.now;
  }

  /** A fresh id (16 random bytes, base64url) and its signed URL. */
  issue(): IssuedWebhook {
    const id = randomBytes(16).toString("base64url");
    return { id, url: this.o.endpoint(id, this.sign(id)) };
  }

  /** Whether `sig` is the signature of `id`, compared in constant time. */
  verify(id: string, sig: string | undefined): boolean {
    if (sig === undefined) return false;
    const expected = Buffer.from(this.sign(id));
    const given = Buffer.from(sig);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** Throws `unauthenticated` unless `sig` is the signature of `id`; touches nothing else. */
  authenticate(id: string, sig: string | undefined): void {
    if (!this.verify(id, sig)) {
      throw new Failure("unauthenticated", { detail: "the webhook signature is missing or wrong" });
    }
  }

  /**
   * A call of the webhook `id` with signature `sig`: `unauthenticated` unless
   * the signature is right; then the task the id stands for, if it is still
   * followed, is due now and the follower is woken. Resolves either way.
   */
  async receive(id: string, sig: string | undefined): Promise<void> {
    this.authenticate(id, sig);
    const uuid = await this.o.store.conversions.webhookTask(id);
    if (uuid === undefined) return;
    if (await this.o.store.conversions.wakeConversion(uuid, this.now())) this.o.wakeFollower();
  }

  private sign(id: string): string {
    return createHmac("sha256", this.o.secret).update(id, "utf8").digest("base64url");
  }
}
