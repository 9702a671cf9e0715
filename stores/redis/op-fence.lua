-- Resolver for lost replies (§1.1). KEYS: op keys of one hash slot. ARGV[1]: ttl ms; ARGV[1 + i]: the token of
-- the attempt whose reply was lost for KEYS[i]. Returns, per key, the recorded result (the write applied) or
-- FENCED (it did not, and now never will: the guarded script sees the fence first).
local out = {}
for i, op_key in ipairs(KEYS) do
  local result = redis.call('HGET', op_key, 'r')
  if not result then
    redis.call('HSET', op_key, 'f:' .. ARGV[i + 1], '1')
    redis.call('PEXPIRE', op_key, ARGV[1])
    result = 'FENCED'
  end
  out[i] = result
end
return out
