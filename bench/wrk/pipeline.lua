-- pipeline.lua: HTTP/1.1 pipelining as TechEmpower's plaintext test does it
-- (toolset/wrk/pipeline.lua): DEPTH copies of the request in one write.
--
--   wrk ... -s bench/wrk/pipeline.lua URL -- 16
--
-- wrk counts every response, so req/s are responses per second.

local src = debug.getinfo(1, "S").source
dofile(((src:sub(1, 1) == "@" and src:sub(2):match("(.*/)")) or "./") .. "report.lua")

local req

init = function(args)
   local depth = tonumber(args[1]) or 16
   local r = {}
   for i = 1, depth do
      r[i] = wrk.format()
   end
   req = table.concat(r)
end

request = function()
   return req
end
