-- report.lua: wrk's `done` hook for the webgres bench harness.
--
-- Prints one line, "WRKJSON {...}", after wrk's own text summary: the request
-- count, duration, bytes, socket errors (connect/read/write/timeout), the
-- responses with status >= 400 (what wrk's text calls "Non-2xx or 3xx
-- responses") and latency percentiles in microseconds. bench/run.sh keeps the
-- whole output; bench/report.py reads the line.
--
-- Other scripts here load it with `report_dir()` so they share one format.

function report_dir()
   local src = debug.getinfo(1, "S").source
   return (src:sub(1, 1) == "@" and src:sub(2):match("(.*/)")) or "./"
end

local function pct(latency, p)
   return latency:percentile(p)
end

function report_json(summary, latency, extra)
   local e = summary.errors
   local parts = {
      string.format('"requests":%d', summary.requests),
      string.format('"duration_us":%d', summary.duration),
      string.format('"bytes":%d', summary.bytes),
      string.format('"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}',
                    e.connect, e.read, e.write, e.timeout, e.status),
      string.format('"latency_us":{"min":%d,"mean":%.1f,"stdev":%.1f,"max":%d,' ..
                    '"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p99.9":%d}',
                    latency.min, latency.mean, latency.stdev, latency.max,
                    pct(latency, 50), pct(latency, 75), pct(latency, 90),
                    pct(latency, 99), pct(latency, 99.9)),
   }
   if extra then table.insert(parts, extra) end
   io.write("WRKJSON {" .. table.concat(parts, ",") .. "}\n")
end

done = function(summary, latency, requests)
   report_json(summary, latency)
end
