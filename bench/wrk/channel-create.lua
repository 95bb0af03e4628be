-- wrk script for CreateChannel: POST /v1/channels with a channel id no other
-- request of the run uses (BENCH_RUN, the thread's number and a counter), the
-- passphrases left to the server to generate. Writes the same JSON summary as
-- bench/wrk/post.lua to BENCH_OUT.
--   BENCH_AUTH    file with the JWT (scope channels.admin)
--   BENCH_RUN     a word of this run (ids of earlier runs stay distinct)
--   BENCH_OUT     where done() writes its summary (optional)
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return (s:gsub("%s+$", ""))
end

local threads = 0
function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

local counter = 0
local run = os.getenv("BENCH_RUN") or "run"
wrk.method = "POST"
wrk.path = "/v1/channels"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. slurp(os.getenv("BENCH_AUTH"))

function request()
  counter = counter + 1
  local body = string.format('{"channel_id":"bench-%s-%d-%d"}', run, tid or 0, counter)
  return wrk.format(nil, nil, nil, body)
end

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
