-- Create an owner record when absent. KEYS[1]: the object's home key, KEYS[2]: op key.
-- ARGV: ttl ms, token, new live record (JSON, without generations), target key (KEYS[1], or the Spot-tag member
-- key of a SpotWide member: then KEYS[1] becomes a forward the provider installs there).
-- A tombstone's generations continue (§12): the re-created object gets og + 1 and a never-seen fencing token.
local key, op_key, ttl = KEYS[1], KEYS[2], ARGV[1]
local prior = op_prior(op_key, ARGV[2])
if prior then return prior end
local raw = redis.call('GET', key)
local cur = raw and cjson.decode(raw)
if cur and cur.s == 'F' then return cjson.encode({ status = 'moved', to = cur.to, v = cur.v }) end
if cur and cur.s == 'L' then return op_record(op_key, cjson.encode({ status = 'exists', v = cur }), ttl) end
local rec = cjson.decode(ARGV[3])
rec.og = cur and cur.og + 1 or 1
rec.ag = cur and cur.ag + 1 or 1
local to = ARGV[4]
if to == key then
  redis.call('SET', key, cjson.encode(rec))
  return op_record(op_key, cjson.encode({ status = 'created', v = rec }), ttl)
end
redis.call('SET', key, cjson.encode({ s = 'F', to = to, ag = rec.ag, v = rec }))
return op_record(op_key, cjson.encode({ status = 'created', v = rec, to = to }), ttl)
