/**
 * Streams that wait for hours without holding promises.
 *
 * A watch stays open for hours between two events. Through the plain async-iterator protocol, every
 * layer between the domain and the socket would keep a pending promise, its reaction and their closures
 * for that whole time, and an AbortSignal with its listener per call on top; with many watches open,
 * that idle state is most of a server's heap. So a stream here can hand its next result to a taker
 * (`PushIterator.nextTo`) instead of answering a promise of it, and a call's cancellation ends a thing
 * (`Ending`) instead of running a closure. Every layer still speaks `AsyncIterator` to callers that
 * don't know about pushing (`canPush` tells them apart).
 */

/**
 * A call's cancellation as a watch sees it (the client went away, or the call's deadline passed): lighter
 * than an AbortSignal, which a watch would hold for hours along with its controller and listener; the
 * transport's cancellation object keeps a listener in a field instead.
 */
export interface Cancellation {
  readonly aborted: boolean;
  /**
   * Ends `what` once when the call is cancelled; at once if it is already. The thing itself, not a
   * closure that ends it: a watch would keep the closure and its context for hours.
   */
  onAbort(what: Ending): void;
}

/** What a cancellation ends (a watch). */
export interface Ending {
  end(): void;
}

/**
 * Takes the next result of a stream handed to it (`PushIterator.nextTo`): exactly one of the two
 * is called, once, never from within `nextTo` itself.
 */
export interface NextTaker<T> {
  took(result: IteratorResult<T>): void;
  failed(e: unknown): void;
}

/**
 * An async iterator that can also hand its next result to a taker rather than answer a promise of
 * it. A watch waits hours for its next event; through a promise, every layer between the domain
 * and the socket would keep a promise, its reaction and their closures for as long.
 */
export interface PushIterator<T> extends AsyncIterator<T> {
  nextTo(taker: NextTaker<T>): void;
}

/** Whether `it` can hand its results to a taker. */
export function canPush<T>(it: AsyncIterator<T>): it is PushIterator<T> {
  return typeof (it as Partial<PushIterator<T>>).nextTo === "function";
}
