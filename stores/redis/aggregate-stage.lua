-- §10.3 stage: write the relocation target list pages and their header in one step, so a header never
-- describes pages that were only partly written. KEYS[1]: header key, KEYS[2]: op key (the Spot's hash tag).
-- ARGV: ttl ms, token, stored header JSON, result JSON, page key base, page 1 .. page n.
-- Page keys are derived here from the base (same hash tag as KEYS[1]).
local header_key, op_key, ttl = KEYS[1], KEYS[2], ARGV[1]
local prior = op_prior(op_key, ARGV[2])
if prior then return prior end
local base = ARGV[5]
local old = redis.call('GET', header_key)
if old then
  for i = 1, #cjson.decode(old).sha1 do redis.call('DEL', base .. i) end
end
for i = 6, #ARGV do
  redis.call('SET', base .. (i - 5), ARGV[i], 'PX', ttl)
end
redis.call('SET', header_key, ARGV[3], 'PX', ttl)
return op_record(op_key, ARGV[4], ttl)
