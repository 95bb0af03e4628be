-- wrk script: POSTs one JSON body with a Bearer token (or GETs, with
-- BENCH_METHOD=GET), and writes a JSON summary (requests, duration, errors,
-- latency percentiles in µs) to BENCH_OUT.
--   BENCH_BODY    file with the request body (not read for GET)
--   BENCH_AUTH    file with the JWT
--   BENCH_OUT     where done() writes its summary (optional)
--   BENCH_METHOD  POST (default) or GET
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return (s:gsub("%s+$", ""))
end

local method = os.getenv("BENCH_METHOD")
wrk.method = (method == nil or method == "") and "POST" or method
if wrk.method ~= "GET" then
  wrk.body = slurp(os.getenv("BENCH_BODY"))
  wrk.headers["Content-Type"] = "application/json"
end
wrk.headers["Authorization"] = "Bearer " .. slurp(os.getenv("BENCH_AUTH"))

function done(summary, latency, requests)
  local out = os.getenv("BENCH_OUT")
  if out == nil or out == "" then return end
  local e = summary.errors
  local f = assert(io.open(out, "w"))
  f:write(string.format(
    '{"requests":%d,"duration_us":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.1f,"max":%d,"p50":%d,"p90":%d,"p99":%d}}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.max,
    latency:percentile(50), latency:percentile(90), latency:percentile(99)))
  f:close()
end
