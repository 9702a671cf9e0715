-- Take a MeshNode's owner lease for one run and publish its descriptor under it (§14). Guarded: a late replay
-- of an acquire the resolver fenced must not resurrect a lease. KEYS[1]: lease, KEYS[2]: descriptor hash,
-- KEYS[3]: node index set, KEYS[4]: op key. ARGV: ttl ms, token, lifecycle generation, lease token, lease ms,
-- descriptor JSON, encoded node id. Exclusive: any live lease wins, whatever its generation (a duplicate nodeId must
-- not take a live run's lease); nothing is written and the reply is { held = generation, pttl = ms left }.
local lease_key, desc_key, nodes_key, op_key, ttl = KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1]
local prior = op_prior(op_key, ARGV[2])
if prior then return prior end
local current = redis.call('GET', lease_key)
if current then
  local held = tonumber(string.match(current, '^(%d+):'))
  return op_record(op_key, cjson.encode({ held = held, pttl = redis.call('PTTL', lease_key) }), ttl)
end
redis.call('SET', lease_key, ARGV[3] .. ':' .. ARGV[4], 'PX', ARGV[5])
redis.call('DEL', desc_key)
redis.call('HSET', desc_key, 'q', '0', 'd', ARGV[6])
redis.call('PEXPIRE', desc_key, ARGV[5])
redis.call('SADD', nodes_key, ARGV[7])
return op_record(op_key, '{"ok":true}', ttl)
