-- cap.lua: ends wrk after WRK_REQUESTS responses, for bench/cpu_per_request.sh's
-- counts under callgrind: every count of a route then makes the same requests
-- (and, on /updates, the same updates since its tables were vacuumed), however
-- fast the machine lets it run. With one thread (wrk -t1), as it is used.
--
-- Prints one line, "WRKJSON {...}", with the responses seen and those with
-- status >= 400 (report.lua's fields, those two only); if -d runs out first,
-- wrk's own count.

local limit = tonumber(os.getenv("WRK_REQUESTS") or "") or 0
local n, bad = 0, 0

local function line(requests, e)
   io.write(string.format('WRKJSON {"requests":%d,"errors":{"connect":%d,"read":%d,"write":%d,' ..
                          '"timeout":%d,"status":%d}}\n',
                          requests, e.connect, e.read, e.write, e.timeout, e.status))
   io.flush()
end

response = function(status, headers, body)
   n = n + 1
   if status >= 400 then bad = bad + 1 end
   if limit > 0 and n >= limit then
      line(n, {connect = 0, read = 0, write = 0, timeout = 0, status = bad})
      os.exit(0)
   end
end

done = function(summary, latency, requests)
   line(summary.requests, summary.errors)
end
