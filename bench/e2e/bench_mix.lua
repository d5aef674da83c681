-- wrk script for the end-to-end benchmark: the uv-server's routes in fixed proportions
-- (no slow /work requests: they would make p99 a constant). Deterministic per thread.
--   94 in 100  /          answered on the loop
--    5 in 100  /file      uv_fs_open/read/close on the thread pool
--    1 in 100  /lookup    uv_getaddrinfo("localhost") on the thread pool
local counter = 0
request = function()
  counter = counter + 1
  local n = counter % 100
  local path = "/"
  if n < 5 then path = "/file" elseif n == 5 then path = "/lookup" end
  return wrk.format("GET", path)
end

-- BENCH_PACE_MS=N: each connection waits N ms before its next request (a paced load, to
-- measure latency below saturation); unset: as fast as the server answers
local pace = tonumber(os.getenv("BENCH_PACE_MS") or "0") or 0
if pace > 0 then
  delay = function() return pace end
end
