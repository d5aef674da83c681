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

-- BENCH_REQUESTS=N: a fixed amount of work per round: after N answers the script prints
-- "bench_answered=N bench_elapsed_ns=T" (T: first request to the Nth answer, CLOCK_MONOTONIC
-- through LuaJIT's ffi) and sends wrk SIGINT, which ends the run early (wrk's own summary
-- then covers every answer). Run wrk with -t1 so the count is global.
local limit = tonumber(os.getenv("BENCH_REQUESTS") or "0") or 0
if limit > 0 then
  local ffi = require("ffi")
  ffi.cdef[[
    typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
    int clock_gettime(int clk, bench_timespec *ts);
    int getpid(void);
    int kill(int pid, int sig);
  ]]
  local ts = ffi.new("bench_timespec")
  local function now_ns()
    ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
    return tonumber(ts.tv_sec) * 1e9 + tonumber(ts.tv_nsec)
  end
  local started, answered = nil, 0
  local plain_request = request
  request = function()
    if not started then started = now_ns() end
    return plain_request()
  end
  response = function()
    answered = answered + 1
    if answered == limit then
      io.write(string.format("bench_answered=%d bench_elapsed_ns=%.0f\n", answered, now_ns() - started))
      io.flush()
      wrk.thread:stop() -- no request after the Nth answer
      ffi.C.kill(ffi.C.getpid(), 2) -- SIGINT: wrk ends its run now and prints its summary
    end
  end
end
