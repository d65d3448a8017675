-- soak.lua: mixed traffic for the soak tier, one path chosen per request:
--   RAISE_PCT % /bench/raise  (handler raises: expect 500)
--   SLEEP_PCT % /bench/sleep  (handler sleeps past webgres.handler_timeout: expect 504)
--   the rest    /db           (expect 200)
-- Counts requests sent per path and responses per status (responses on
-- different connections interleave, so a status cannot be tied to a path; the
-- counts are compared instead). Each thread stops after PER_THREAD
-- responses and, if MARKER is given, creates the file MARKER.<thread> so the
-- caller can end wrk early with SIGINT (wrk then prints its summary); wrk's -d
-- bounds the time. `done` adds "sent" and "statuses" to
-- the WRKJSON line.
--
--   wrk -t T ... -s bench/wrk/soak.lua http://127.0.0.1:PORT -- PER_THREAD RAISE_PCT SLEEP_PCT [MARKER]

local src = debug.getinfo(1, "S").source
dofile(((src:sub(1, 1) == "@" and src:sub(2):match("(.*/)")) or "./") .. "report.lua")

local threads = {}

setup = function(thread)
   table.insert(threads, thread)
   thread:set("tid", #threads)
end

local raise_pct, sleep_pct, quota, marker
local reqs = {}
sent = { ["/db"] = 0, ["/bench/raise"] = 0, ["/bench/sleep"] = 0 }
statuses = {}
received = 0

init = function(args)
   quota = tonumber(args[1]) or 500000
   raise_pct = tonumber(args[2]) or 10
   sleep_pct = tonumber(args[3]) or 1
   marker = args[4]
   math.randomseed(os.time() * 1000 + (tid or 0))
   for p, _ in pairs(sent) do
      reqs[p] = wrk.format(nil, p)
   end
end

request = function()
   local x = math.random() * 100
   local p
   if x < sleep_pct then
      p = "/bench/sleep"
   elseif x < sleep_pct + raise_pct then
      p = "/bench/raise"
   else
      p = "/db"
   end
   sent[p] = sent[p] + 1
   return reqs[p]
end

response = function(status, headers, body)
   local k = tostring(status)
   statuses[k] = (statuses[k] or 0) + 1
   received = received + 1
   if received == quota then
      if marker then
         local f = io.open(marker .. "." .. tostring(tid), "w")
         if f then f:close() end
      end
      wrk.thread:stop()
   end
end

local function obj(t)
   local s = {}
   for k, n in pairs(t) do
      table.insert(s, string.format('"%s":%d', k, n))
   end
   return "{" .. table.concat(s, ",") .. "}"
end

done = function(summary, latency, requests)
   local st, se = {}, {}
   for _, t in ipairs(threads) do
      for k, n in pairs(t:get("statuses") or {}) do st[k] = (st[k] or 0) + n end
      for k, n in pairs(t:get("sent") or {}) do se[k] = (se[k] or 0) + n end
   end
   report_json(summary, latency, '"sent":' .. obj(se) .. ',"statuses":' .. obj(st))
end
