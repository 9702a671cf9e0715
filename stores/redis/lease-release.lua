-- Remove descriptor and lease when the token still matches (idempotent). KEYS: lease, descriptor, node index.
-- ARGV: lease value, encoded node id.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[2])
return 1
