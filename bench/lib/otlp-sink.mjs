/**
 * A local OpenTelemetry collector stand-in for the bench: accepts OTLP over
 * HTTP (`POST /v1/traces`, protobuf or JSON), answers 200, keeps nothing.
 * On SIGTERM it prints how many export requests and bytes it took.
 *   PORT=4318 node bench/lib/otlp-sink.mjs
 */
import http from "node:http";

let requests = 0;
let bytes = 0;
const server = http.createServer((req, res) => {
  req.on("data", (chunk) => {
    bytes += chunk.length;
  });
  req.on("end", () => {
    if (req.method === "POST" && req.url === "/v1/traces") requests += 1;
    res.writeHead(200, { "content-type": req.headers["content-type"] ?? "application/x-protobuf" }).end();
  });
});
server.listen(Number(process.env.PORT ?? 4318), "127.0.0.1");
process.on("SIGTERM", () => {
  console.log(JSON.stringify({ exports: requests, bytes }));
  process.exit(0);
});
