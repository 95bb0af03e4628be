-- wrk script for bench/scenarios/pstn-watchers.mjs: POSTs mutes whose bodies take turns
-- through the lines of a file (one JSON body per line: channels and uids), with
-- a Bearer token, and writes the same JSON summary as bench/wrk/post.lua.
--   BENCH_BODIES  file with one request body per line
--   BENCH_AUTH    file with the JWT
--   BENCH_OUT     where done() writes its summary (optional)
local function slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return (s:gsub("%s+$", ""))
end

local prepared = {}
local next_request = 0

-- Built in init, which wrk calls once it has set the Host header (wrk.format copies it in).
function init(args)
  local auth = "Bearer " .. slurp(os.getenv("BENCH_AUTH"))
  for line in io.lines(os.getenv("BENCH_BODIES")) do
    if line ~= "" then
      local headers = { ["Content-Type"] = "application/json", ["Authorization"] = auth }
      prepared[#prepared + 1] = wrk.format("POST", nil, headers, line)
    end
  end
  assert(#prepared > 0, "BENCH_BODIES has no body")
end

function request()
  next_request = next_request % #prepared + 1
  return prepared[next_request]
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
