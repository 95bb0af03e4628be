/**
 * The projector API's webhook, simulated: a task created with a
 * `webhookEndpoint` gets one POST of its answer (projector-answer.ts) there
 * when it ends — at the time its progress reaches Finished or Fail, or at once
 * when it is cancelled (Abort). The simulator never calls out of the machine:
 * an endpoint that is not on loopback is recorded as skipped. One try, at most
 * 5 s; every delivery is recorded for the tests. Timers are cleared at close.
 */
import { isLoopbackHost } from "../../loopback.js";
import { projectorAnswer } from "./projector-answer.js";
import { endsAt, isTerminal, type SimulatedTaskSpec, taskProgress } from "./tasks.js";

const DELIVERY_TIMEOUT_MS = 5_000;

export interface WebhookDelivery {
  readonly uuid: string;
  readonly url: string;
  /** The HTTP status the endpoint answered, or why there is none. */
  readonly outcome: number | "skipped (not loopback)" | "failed";
  /** When it was sent (ms since the epoch, the simulator's clock). */
  readonly at: number;
}

export class WebhookCaller {
  readonly deliveries: WebhookDelivery[] = [];
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #closing = new AbortController();

  constructor(
    private readonly tasks: ReadonlyMap<string, SimulatedTaskSpec>,
    private readonly now: () => number,
  ) {}

  /** Calls the task's webhook when it ends (nothing without a webhookEndpoint). */
  scheduleEnd(task: SimulatedTaskSpec): void {
    if (task.webhookEndpoint === undefined || this.#closing.signal.aborted) return;
    const timer = setTimeout(() => this.#atEnd(task.uuid), Math.max(1, endsAt(task) - this.now()));
    timer.unref();
    this.#timers.set(task.uuid, timer);
  }

  /** A timer may fire a little early by the clock: then it waits for the end proper. */
  #atEnd(uuid: string): void {
    const task = this.tasks.get(uuid);
    if (task !== undefined && !isTerminal(taskProgress(task, this.now()).status)) this.scheduleEnd(task);
    else this.callNow(uuid);
  }

  /** Calls the task's webhook now with its current answer (a cancel); its end is not called again. */
  callNow(uuid: string): void {
    clearTimeout(this.#timers.get(uuid));
    this.#timers.delete(uuid);
    const task = this.tasks.get(uuid);
    if (task?.webhookEndpoint === undefined || this.#closing.signal.aborted) return;
    void this.deliver(task, task.webhookEndpoint);
  }

  /** Clears every timer and aborts the deliveries under way. */
  close(): void {
    this.#closing.abort();
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  private async deliver(task: SimulatedTaskSpec, url: string): Promise<void> {
    const at = this.now();
    if (!isLoopbackHost(new URL(url).hostname)) {
      this.deliveries.push({ uuid: task.uuid, url, outcome: "skipped (not loopback)", at });
      return;
    }
    let outcome: WebhookDelivery["outcome"] = "failed";
    try {
      const res = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(projectorAnswer(task, taskProgress(task, at))),
        signal: AbortSignal.any([this.#closing.signal, AbortSignal.timeout(DELIVERY_TIMEOUT_MS)]),
      });
      await res.arrayBuffer();
      outcome = res.status;
    } catch {
      // Refused, reset, timed out or closing: recorded as failed, never retried.
    }
    this.deliveries.push({ uuid: task.uuid, url, outcome, at });
  }
}
