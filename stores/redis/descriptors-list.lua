-- Every descriptor whose lease is live, as one snapshot (one script = one point in time). Nodes whose lease
-- expired are pruned from the index. KEYS[1]: node index. ARGV: lease key base, descriptor key base (same tag).
local out = {}
for _, node in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local descriptor = redis.call('EXISTS', ARGV[1] .. node) == 1 and redis.call('HGET', ARGV[2] .. node, 'd')
  if descriptor then
    out[#out + 1] = descriptor
  else
    redis.call('SREM', KEYS[1], node)
    redis.call('DEL', ARGV[2] .. node)
  end
end
return out
