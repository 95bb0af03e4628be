/**
 * A tiny OpenTelemetry collector for tests: an HTTP server on loopback taking
 * OTLP over HTTP/JSON (`POST /v1/traces`, `OTEL_EXPORTER_OTLP_PROTOCOL=http/json`),
 * keeping every body as it came and every span flattened.
 */
import http from "node:http";
import type { AddressInfo } from "node:net";

export type AttributeValue = string | number | boolean | readonly AttributeValue[];

export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** "" for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** 1 internal, 2 server, 3 client. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  /** 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  /** The resource's attributes (service.name…). */
  readonly resource: Readonly<Record<string, AttributeValue>>;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  /** The request bodies, as they came. */
  bodies(): readonly string[];
  spans(): readonly ReceivedSpan[];
  close(): Promise<void>;
}

interface OtlpAttribute {
  readonly key: string;
  readonly value: OtlpValue;
}
interface OtlpValue {
  readonly stringValue?: string;
  readonly intValue?: number | string;
  readonly doubleValue?: number;
  readonly boolValue?: boolean;
  readonly arrayValue?: { readonly values?: readonly OtlpValue[] };
}
interface OtlpSpan {
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId?: string;
  readonly name: string;
  readonly kind: number;
  readonly attributes?: readonly OtlpAttribute[];
  readonly status?: { readonly code?: number };
}
interface OtlpTraces {
  readonly resourceSpans?: ReadonlyArray<{
    readonly resource?: { readonly attributes?: readonly OtlpAttribute[] };
    readonly scopeSpans?: ReadonlyArray<{ readonly spans?: readonly OtlpSpan[] }>;
  }>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const bodies: string[] = [];
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      if (req.method !== "POST" || req.url !== "/v1/traces" || !/json/.test(req.headers["content-type"] ?? "")) {
        res.writeHead(404).end();
        return;
      }
      bodies.push(body);
      spans.push(...flatten(JSON.parse(body) as OtlpTraces));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies: () => bodies,
    spans: () => spans,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function flatten(traces: OtlpTraces): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of traces.resourceSpans ?? []) {
    const resource = attributesOf(rs.resource?.attributes);
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? "",
          name: s.name,
          kind: s.kind,
          attributes: attributesOf(s.attributes),
          statusCode: s.status?.code ?? 0,
          resource,
        });
      }
    }
  }
  return out;
}

function attributesOf(list: readonly OtlpAttribute[] | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const a of list ?? []) out[a.key] = plainValue(a.value);
  return out;
}

function plainValue(v: OtlpValue): AttributeValue {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  return (v.arrayValue?.values ?? []).map(plainValue);
}
