-- A relocation target's owner commit (§13; OwnerCommitRequest in stores/types.ts): every entry's record goes from its
-- expected authority generation to the call's owner, in ONE guarded write — one op record for the whole call, not one
-- per record (owner-cas.lua keeps one per entry, ~470 bytes of Redis memory each for the op TTL; issue [6/10]).
-- KEYS[1..n]: the records (of ONE hash slot on a cluster); KEYS[n + 1]: the call's op key (same slot).
-- ARGV[1]: ttl ms, ARGV[2]: the attempt's token (guarded.ts), ARGV[3] / ARGV[4]: the owner (nodeId, lifecycle
-- generation), ARGV[3 + 2i] / ARGV[4 + 2i]: entry i's expected authority generation and ObjectGeneration.
-- Returns, and records under the op key, one JSON array with one reply per entry, in order:
--   applied, or applied again without a write when the record already names the owner at expected + 1 with the same
--   ObjectGeneration (this commit's own change: a retry whose earlier reply was lost — only that change can produce
--   it, the generation moves on with every other): [og, t] or [og, t, sp, sw], only what the caller cannot know of the
--   new record (its kind, id, owner and authority generation are in the call); a 128-entry reply is ~2 KB, not ~15 KB
--   of whole records for the provider to parse (issue [6/10]);
--   conflict (the current record); missing; or moved (a forward: the provider follows it with another call).
local n = #KEYS - 1
local op_key = KEYS[n + 1]
local ttl = ARGV[1]
local prior = op_prior(op_key, ARGV[2])
if prior then return prior end
local owner_n = ARGV[3]
local owner_g = tonumber(ARGV[4])

local out = {}
for i = 1, n do
  local key = KEYS[i]
  local expected = tonumber(ARGV[3 + 2 * i])
  local og = tonumber(ARGV[4 + 2 * i])
  local raw = redis.call('GET', key)
  local cur = raw and cjson.decode(raw)
  local applied = false
  if cur and cur.s == 'F' then
    out[i] = cjson.encode({ status = 'moved', to = cur.to, v = cur.v })
  elseif not cur or cur.s ~= 'L' then
    out[i] = '{"status":"missing"}'
  elseif cur.ag == expected then
    cur.n = owner_n
    cur.g = owner_g
    cur.ag = expected + 1
    redis.call('SET', key, cjson.encode(cur))
    applied = true
  elseif cur.ag == expected + 1 and cur.n == owner_n and cur.g == owner_g and cur.og == og then
    applied = true
  else
    out[i] = cjson.encode({ status = 'conflict', v = cur })
  end
  if applied then
    if cur.sp == nil and cur.sw == nil then
      out[i] = '[' .. cur.og .. ',' .. cjson.encode(cur.t) .. ']'
    else
      out[i] = cjson.encode({ cur.og, cur.t, cur.sp or cjson.null, cur.sw or false })
    end
  end
end
return op_record(op_key, '[' .. table.concat(out, ',') .. ']', ttl)
