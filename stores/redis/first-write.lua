-- First write wins (§9 Relocation Store). KEYS[1]: record hash. ARGV: writer token, value JSON, ttl ms ('0' = none).
-- Replies 1 when this writer's value is the stored one -- also on a replay of the winning write -- else 0, so a
-- lost reply is resolved by simply running it again.
local writer = redis.call('HGET', KEYS[1], 'w')
if writer then return writer == ARGV[1] and 1 or 0 end
redis.call('HSET', KEYS[1], 'w', ARGV[1], 'v', ARGV[2])
if ARGV[3] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return 1
