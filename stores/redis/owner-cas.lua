-- Owner/membership CAS on the authority generation, for one or many independent records (of ONE hash slot on a cluster)
-- (casMany sends one call, or one per slot group on a cluster). KEYS[2i-1]: record key, KEYS[2i]: its op key.
-- ARGV[1]: ttl ms, ARGV[2]: the attempt's token (guarded.ts: one per attempt, shared by its entries), ARGV[3]/ARGV[4]:
-- the call's new owner (nodeId, lifecycle generation; '' when no entry uses it), ARGV[4 + i]: entry i's change, either
--   a decimal number: the expected authority generation of an owner change to ARGV[3]/ARGV[4] that leaves the record
--   at its key (every relocation commit: no JSON to build or decode per entry), or
--   a JSON object { e = expected authority generation, n/g = new owner, m = membership given, sp/sw = new
--   membership, to = key the record lives at afterwards (absent: the record stays at its key) }.
-- One reply per entry, in order.
local ttl = ARGV[1]
local token = ARGV[2]
local call_owner = { n = ARGV[3], g = tonumber(ARGV[4]) }

local function is_json(arg) return string.byte(arg, 1) == 123 end -- '{'

local function cas(key, op_key, change)
  local prior = op_prior(op_key, token)
  if prior then return prior end
  local raw = redis.call('GET', key)
  local cur = raw and cjson.decode(raw)
  -- Not recorded: nothing changed here; the provider follows the forward and retries with a new token.
  if cur and cur.s == 'F' then return cjson.encode({ status = 'moved', to = cur.to, v = cur.v }) end
  if not cur or cur.s ~= 'L' then return op_record(op_key, '{"status":"missing"}', ttl) end
  if cur.ag ~= change.e then return op_record(op_key, cjson.encode({ status = 'conflict', v = cur }), ttl) end
  if change.n then
    cur.n = change.n
    cur.g = change.g
  end
  if change.m then
    cur.sp = change.sp
    cur.sw = change.sw
  end
  cur.ag = cur.ag + 1
  local to = change.to or key
  if to == key then
    -- The record is encoded once, for the key and for the reply (every relocation commit takes this path).
    local record = cjson.encode(cur)
    redis.call('SET', key, record)
    return op_record(op_key, '{"status":"applied","v":' .. record .. '}', ttl)
  end
  -- SpotWide membership changed: the record moves to another hash tag. Leave a forward carrying the new record;
  -- the provider installs it at `to` (owner-install.lua), and any reader rolls it forward if that step was lost.
  redis.call('SET', key, cjson.encode({ s = 'F', to = to, ag = cur.ag, v = cur }))
  return op_record(op_key, cjson.encode({ status = 'applied', v = cur, to = to }), ttl)
end

-- A compact change needs the call's owner: checked before any entry writes (a script error does not undo writes).
if ARGV[3] == '' then
  for i = 1, #KEYS / 2 do
    if not is_json(ARGV[i + 4]) then return redis.error_reply('owner-cas: compact change without the call owner') end
  end
end

local out = {}
for i = 1, #KEYS / 2 do
  local arg = ARGV[i + 4]
  local change
  if is_json(arg) then
    change = cjson.decode(arg)
  else
    change = { e = tonumber(arg), n = call_owner.n, g = call_owner.g }
  end
  out[i] = cas(KEYS[2 * i - 1], KEYS[2 * i], change)
end
return out
