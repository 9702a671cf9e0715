-- Logical Multicast: a Spot leaves a Channel. KEYS[1]: the Channel's member hash, KEYS[2]: op key (same hash tag).
-- ARGV: ttl ms, token, spot id. Replies '1' when the Spot was a member, else '0'.
local prior = op_prior(KEYS[2], ARGV[2])
if prior then return prior end
local removed = redis.call('HDEL', KEYS[1], ARGV[3])
return op_record(KEYS[2], removed == 1 and '1' or '0', ARGV[1])
