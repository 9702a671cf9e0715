-- Logical Multicast: a Spot joins a Channel. KEYS[1]: the Channel's member hash, KEYS[2]: op key (same hash tag).
-- ARGV: ttl ms, token, spot id, type ('' = none). Replies '1' when the Spot was not a member before, else '0'.
local prior = op_prior(KEYS[2], ARGV[2])
if prior then return prior end
local added = redis.call('HSET', KEYS[1], ARGV[3], ARGV[4])
return op_record(KEYS[2], added == 1 and '1' or '0', ARGV[1])
