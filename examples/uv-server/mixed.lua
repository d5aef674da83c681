-- wrk script: a fixed, repeating mix of the server's routes, so that two runs record the
-- same kind of trace.  wrk -s examples/uv-server/mixed.lua ...
--   1 in 1000  /work?ms=15   a slow request: 15 ms of CPU on the loop thread
--   1 in 50    /lookup       uv_getaddrinfo on the thread pool
--   1 in 20    /file         uv_fs_open/read/close on the thread pool
--   1 in 100   /work?ms=1
--   otherwise  /
local counter = 0
local threads = 0

-- runs in wrk's main Lua state, once per thread: number the threads
function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

-- runs in each thread's own state: a fixed, different phase per thread, so that threads do
-- not send their slow requests at the same moment (and two runs send the same sequence)
function init(args)
  counter = (id or 0) * 487
end

request = function()
  counter = counter + 1
  local path
  if counter % 1000 == 0 then path = "/work?ms=15"
  elseif counter % 50 == 0 then path = "/lookup"
  elseif counter % 20 == 0 then path = "/file"
  elseif counter % 100 == 7 then path = "/work?ms=1"
  else path = "/" end
  return wrk.format("GET", path)
end

-- MIX_PACE_MS=N: each connection waits N ms before its next request (an open-ish load that
-- leaves the CPUs room, for demos); unset: as fast as the server answers (benchmarks)
local pace = tonumber(os.getenv("MIX_PACE_MS") or "0") or 0
if pace > 0 then
  delay = function() return pace end
end
