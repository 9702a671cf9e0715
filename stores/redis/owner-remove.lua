-- Remove a record only with the current authority generation (§14 cleanup step 2). KEYS[1]: record key,
-- KEYS[2]: op key. ARGV: ttl ms, token, expected authority generation, the object's home key.
-- Leaves a tombstone (generations only) at the home key, so a re-created object continues them (§12).
local key, op_key, ttl = KEYS[1], KEYS[2], ARGV[1]
local prior = op_prior(op_key, ARGV[2])
if prior then return prior end
local raw = redis.call('GET', key)
local cur = raw and cjson.decode(raw)
if cur and cur.s == 'F' then return cjson.encode({ status = 'moved', to = cur.to, v = cur.v }) end
if not cur or cur.s ~= 'L' then return op_record(op_key, '{"status":"missing"}', ttl) end
if cur.ag ~= tonumber(ARGV[3]) then return op_record(op_key, cjson.encode({ status = 'conflict', v = cur }), ttl) end
local tomb = { s = 'R', k = cur.k, id = cur.id, og = cur.og, ag = cur.ag + 1 }
local home = ARGV[4]
if key == home then
  redis.call('SET', key, cjson.encode(tomb))
  return op_record(op_key, '{"status":"applied"}', ttl)
end
redis.call('SET', key, cjson.encode({ s = 'F', to = home, ag = tomb.ag, v = tomb }))
return op_record(op_key, cjson.encode({ status = 'applied', v = tomb, to = home }), ttl)
