/**
 * The watch streams open at once on one instance, whatever they watch
 * (conversions, mute events): at most `max` (MAX_WATCHES) in all and at most
 * `perProject` (MAX_WATCHES_PER_PROJECT) of any one project, `rate_limited`
 * beyond either. The share is what keeps one tenant's burst (a gateway
 * reconnecting with too many watches, or a runaway client) from taking every
 * slot and refusing the first watch of every other project. Each watch takes a
 * slot when it opens and gives it back when it ends, however it ends.
 *
 * A refusal says when to come back (`Retry-After`), jittered over
 * `RETRY_SPREAD_SECONDS` so that a storm of refused clients does not come
 * back all in the same second; each refusal is counted (`refused`, the
 * metric) and told to `onRefused` (the log, at most once a second).
 */
import { Failure } from "./failure.js";

/** A refused watch is told to come back after 1 to this many seconds, at random. */
export const RETRY_SPREAD_SECONDS = 3;

/** Why a watch was refused: every slot of the instance is taken, or every slot of the project's share. */
export type Refusal = "instance" | "project";

export class WatchSlots {
  private taken = 0;
  private refusals = 0;
  /** Slots taken per project; a project with none has no entry, so the map stays as small as the projects watching. */
  private readonly byProject = new Map<string, number>();

  constructor(
    readonly max: number,
    /** The most one project may hold; `max` when there is no share. */
    readonly perProject: number = max,
    private readonly onRefused: (inUse: number, why: Refusal, project: string) => void = () => {},
    private readonly random: () => number = Math.random,
  ) {
    if (!(perProject >= 1 && perProject <= max)) throw new RangeError("a project's share must be 1 to max");
  }

  /** Takes a slot of `project`'s; the function it answers gives it back (once, however often it is called). */
  take(project: string): () => void {
    this.takeOne(project);
    let released = false;
    return () => {
      if (!released) this.giveBack(project);
      released = true;
    };
  }

  /**
   * Takes a slot that `giveBack(project)` returns, for a holder that gives it back exactly once itself (the
   * mute-event hub: a closure per watch would stay with each watch for hours).
   */
  takeOne(project: string): void {
    const ofProject = this.byProject.get(project) ?? 0;
    if (this.taken >= this.max) throw this.refuse(project, "instance", "too many watches on this server, retry later");
    if (ofProject >= this.perProject) {
      throw this.refuse(
        project,
        "project",
        "this project has its share of this server's watches open (MAX_WATCHES_PER_PROJECT), retry later",
      );
    }
    this.taken++;
    this.byProject.set(project, ofProject + 1);
  }

  /** Gives back a slot `takeOne(project)` took. */
  giveBack(project: string): void {
    this.taken--;
    const left = (this.byProject.get(project) ?? 1) - 1;
    if (left > 0) this.byProject.set(project, left);
    else this.byProject.delete(project);
  }

  /** Slots taken now. */
  get inUse(): number {
    return this.taken;
  }

  /** Slots `project` holds now. */
  heldBy(project: string): number {
    return this.byProject.get(project) ?? 0;
  }

  /** Watches refused so far, for either reason. */
  get refused(): number {
    return this.refusals;
  }

  private refuse(project: string, why: Refusal, detail: string): Failure {
    this.refusals++;
    this.onRefused(this.taken, why, project);
    return new Failure("rate_limited", {
      detail,
      retryAfterSeconds: 1 + Math.floor(this.random() * RETRY_SPREAD_SECONDS),
    });
  }
}
