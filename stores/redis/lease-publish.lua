-- Replace the descriptor under a held lease. KEYS: lease, descriptor. ARGV: lease value, sequence, descriptor JSON.
-- The sequence only grows within the publishing process, so a late replay of an older publish never overwrites a
-- newer descriptor. Returns 0 when the lease is not held.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
local stored = tonumber(redis.call('HGET', KEYS[2], 'q') or '-1')
if stored >= tonumber(ARGV[2]) then return 1 end
redis.call('HSET', KEYS[2], 'q', ARGV[2], 'd', ARGV[3])
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
return 1
