-- Second step of a record moving between hash tags (SpotWide join/leave): write the forward's carried value at
-- its target. KEYS[1]: target key, KEYS[2]: op key there. ARGV: value JSON, recorded result ('' = none, a reader's
-- roll-forward), ttl ms. Authority generations only grow, so the value is installed only over an older
-- tombstone/forward: replays and stale roll-forwards change nothing. The result is recorded here too, so a replay
-- of the opId that finds the record at its new place still gets it. Returns 1 when installed.
if ARGV[2] ~= '' then op_record(KEYS[2], ARGV[2], ARGV[3]) end
local value = cjson.decode(ARGV[1])
local raw = redis.call('GET', KEYS[1])
if raw then
  local cur = cjson.decode(raw)
  if cur.s == 'L' or cur.ag >= value.ag then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
