/**
 * A conversion backend for the conversion classes' unit tests: it keeps what
 * it was asked, answers new tasks with uuids of its own counting, and fails
 * with whatever the test sets in `failWith`.
 */
import type {
  ConversionApi,
  ConversionBackend,
  ConversionRequest,
  ConversionState,
  ConversionTask,
  ConversionTaskRef,
} from "../../../src/services/ports.js";

export class FakeBackend implements ConversionBackend {
  readonly created: ConversionRequest[] = [];
  readonly cancelled: ConversionTaskRef[] = [];
  /** The API new tasks are created on. */
  api: ConversionApi = "projector";
  /** Thrown by the next calls while set. */
  failWith: Error | undefined;
  /** What a cancel answers. */
  cancelState: ConversionState = { status: "Abort", percent: 40, pages: [] };
  /** How long a create takes to answer; the task is made when it is asked, as the real backend makes it. */
  createMs = 0;
  /** When (Date.now) each create was asked, in order. */
  readonly askedAt: number[] = [];

  async createTask(request: ConversionRequest): Promise<ConversionTask> {
    if (this.failWith !== undefined) throw this.failWith;
    this.askedAt.push(Date.now());
    this.created.push(request);
    if (this.createMs > 0) await new Promise((resolve) => setTimeout(resolve, this.createMs));
    const uuid = `task${String(this.created.length).padStart(28, "0")}`;
    return { uuid, type: request.type, status: "Waiting", api: this.api };
  }

  async queryTask(): Promise<ConversionState> {
    throw new Error("the classes under test never query");
  }

  async cancelTask(ref: ConversionTaskRef): Promise<ConversionState> {
    if (this.failWith !== undefined) throw this.failWith;
    this.cancelled.push(ref);
    return this.cancelState;
  }
}
