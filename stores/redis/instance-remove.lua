-- Removes an Instance Spot creation record of one ObjectGeneration (the Spot closed, or its owner record was removed).
-- KEYS[1]: record hash. ARGV[1]: ObjectGeneration. A record of another generation is kept. Replies 1 when removed.
local value = redis.call('HGET', KEYS[1], 'v')
if not value then return 0 end
if tonumber(cjson.decode(value).objectGeneration) ~= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
return 1
