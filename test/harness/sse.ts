/**
 * A server-sent events client on plain `fetch`, as a gateway without an SSE
 * library would write one: POSTs the JSON body (with `Last-Event-ID` when
 * resuming), then parses the stream into events (`id`, `event`, `data`) as
 * they arrive.
 */

export interface SseEvent {
  readonly id: string | undefined;
  /** "message" unless the event named itself (`event: error`). */
  readonly event: string;
  readonly data: unknown;
}

export interface SseStream {
  readonly status: number;
  readonly headers: Headers;
  /** The body of an answer that is not an event stream (an error answer). */
  readonly body: unknown;
  /** The next event; undefined when the stream ended. */
  next(): Promise<SseEvent | undefined>;
  /** Every event seen so far. */
  readonly seen: readonly SseEvent[];
  /** Comment lines seen so far (`: keep-alive`). */
  readonly comments: readonly string[];
  /** Goes away (aborts the request). */
  close(): void;
}

export async function openSse(
  url: string,
  o: { token: string; body: unknown; lastEventId?: string },
): Promise<SseStream> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${o.token}`, "content-type": "application/json" };
  if (o.lastEventId !== undefined) headers["last-event-id"] = o.lastEventId;
  const res = await fetch(url, { method: "POST", headers, body: JSON.stringify(o.body), signal: abort.signal });
  const seen: SseEvent[] = [];
  const comments: string[] = [];
  if (!(res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: text === "" ? undefined : JSON.parse(text),
      next: async () => undefined,
      seen,
      comments,
      close: () => abort.abort(),
    };
  }
  const reader = (res.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  const next = async (): Promise<SseEvent | undefined> => {
    for (;;) {
      const end = buffer.indexOf("\n\n");
      if (end !== -1) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const event = parseBlock(block, comments);
        if (event === undefined) continue;
        seen.push(event);
        return event;
      }
      let chunk: Awaited<ReturnType<typeof reader.read>>;
      try {
        chunk = await reader.read();
      } catch {
        return undefined; // aborted or cut off
      }
      if (chunk.done) return undefined;
      buffer += decoder.decode(chunk.value, { stream: true });
    }
  };
  return {
    status: res.status,
    headers: res.headers,
    body: undefined,
    next,
    seen,
    comments,
    close: () => abort.abort(),
  };
}

function parseBlock(block: string, comments: string[]): SseEvent | undefined {
  let id: string | undefined;
  let event = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) comments.push(line);
    else if (line.startsWith("id: ")) id = line.slice(4);
    else if (line.startsWith("event: ")) event = line.slice(7);
    else if (line.startsWith("data: ")) data.push(line.slice(6));
  }
  if (data.length === 0) return undefined;
  return { id, event, data: JSON.parse(data.join("\n")) as unknown };
}
