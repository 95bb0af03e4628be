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

  async createTask(request: ConversionRequest): Promise<ConversionTask> {
    if (this.failWith !== undefined) throw this.failWith;
    this.created.push(request);
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
