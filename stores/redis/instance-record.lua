-- Instance Spot creation record (§9 Relocation Store). KEYS[1]: record hash. ARGV: writer token (the opId), value
-- JSON, ObjectGeneration. First write wins per ObjectGeneration: replies 1 when this writer's value is the stored one
-- (also on a replay of the winning write, so a lost reply is resolved by running it again), 0 when a record of this
-- generation or a newer one is stored. A record of an older generation (an instance that ended without its record
-- being removed) is replaced.
local writer = redis.call('HGET', KEYS[1], 'w')
if writer then
  if writer == ARGV[1] then return 1 end
  local stored = cjson.decode(redis.call('HGET', KEYS[1], 'v'))
  if tonumber(stored.objectGeneration) >= tonumber(ARGV[3]) then return 0 end
end
redis.call('HSET', KEYS[1], 'w', ARGV[1], 'v', ARGV[2])
return 1
