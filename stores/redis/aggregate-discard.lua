-- Remove a staged list (after commit, or when the move is abandoned). Idempotent, so a lost reply is simply
-- retried. KEYS[1]: header key. ARGV[1]: page key base (same hash tag).
local raw = redis.call('GET', KEYS[1])
if raw then
  for i = 1, #cjson.decode(raw).sha1 do redis.call('DEL', ARGV[1] .. i) end
end
redis.call('DEL', KEYS[1])
return 1
