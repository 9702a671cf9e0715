-- §10.3 SpotWide aggregate CAS: verify the staged list against its header, then the Spot's and every member's
-- authority generation, then flip the Spot and all members to the new owner -- or change nothing.
-- KEYS[1]: Spot record, KEYS[2]: op key, KEYS[3]: header. ARGV: ttl ms, token, page key base, member key base,
-- spot id, new owner nodeId, new owner lifecycle generation, expected total, sha256 list joined by ','.
-- Page and member keys are derived from the bases; they share the Spot's hash tag, so the script stays in one slot.
--
-- Checksums: Redis Lua offers sha1 (redis.sha1hex) but no sha256. The stager stores, beside the sha256 list it
-- reports (AggregateHeader), the sha1 of the same page bytes. Here the caller's sha256 list must equal the stored
-- one (it pins which staging the caller means) and every page's sha1 is recomputed and compared (it pins the
-- bytes). The threat is corruption and lost or stale pages, not an attacker who can rewrite both a page and its
-- header -- such a writer could rewrite owner records directly.
local spot_key, op_key, header_key, ttl = KEYS[1], KEYS[2], KEYS[3], ARGV[1]
local prior = op_prior(op_key, ARGV[2])
if prior then return prior end

local DATA_LOST = '{"status":"data-lost"}'
local raw_header = redis.call('GET', header_key)
if not raw_header then return op_record(op_key, DATA_LOST, ttl) end
local header = cjson.decode(raw_header)
if header.total ~= tonumber(ARGV[8]) or table.concat(header.sha256, ',') ~= ARGV[9] then
  return op_record(op_key, DATA_LOST, ttl)
end
local keys, expected = {}, {}
for page_no, sha1 in ipairs(header.sha1) do
  local page = redis.call('GET', ARGV[3] .. page_no)
  if not page or redis.sha1hex(page) ~= sha1 then return op_record(op_key, DATA_LOST, ttl) end
  for id, ag in string.gmatch(page, '([^\t\n]+)\t(%d+)\n') do
    local n = #keys + 1
    keys[n] = ARGV[4] .. id
    expected[n] = tonumber(ag)
  end
end
if #keys ~= header.total then return op_record(op_key, DATA_LOST, ttl) end

local raw_spot = redis.call('GET', spot_key)
local spot = raw_spot and cjson.decode(raw_spot)
if not spot or spot.s ~= 'L' then return op_record(op_key, '{"status":"conflict"}', ttl) end
local conflict = cjson.encode({ status = 'conflict', v = spot })
if spot.ag ~= header.esag then return op_record(op_key, conflict, ttl) end
local members = {}
for n, key in ipairs(keys) do
  local raw = redis.call('GET', key)
  local member = raw and cjson.decode(raw)
  if not member or member.s ~= 'L' or member.ag ~= expected[n] or member.sp ~= ARGV[5] or not member.sw then
    return op_record(op_key, conflict, ttl)
  end
  members[n] = member
end

-- Everything checked: from here on the script only writes, so the flip is all or nothing.
local node, generation = ARGV[6], tonumber(ARGV[7])
spot.n, spot.g, spot.ag = node, generation, spot.ag + 1
redis.call('SET', spot_key, cjson.encode(spot))
for n, key in ipairs(keys) do
  local member = members[n]
  member.n, member.g, member.ag = node, generation, member.ag + 1
  redis.call('SET', key, cjson.encode(member))
end
return op_record(op_key, cjson.encode({ status = 'applied', v = spot }), ttl)
