-- §1.1 operation guard: scripts.ts prepends this file to every guarded write script.
-- An op key is a hash beside the record it guards (same hash tag): field `r` holds the write's recorded result,
-- field `f:<token>` marks an attempt the resolver fenced. A fenced attempt must never apply, even when ioredis or
-- the server runs it late, so every guarded script calls op_prior() before it reads or writes anything else.
local FENCED = 'FENCED'

local function op_prior(op_key, token)
  local result = redis.call('HGET', op_key, 'r')
  if result then return result end
  if redis.call('HEXISTS', op_key, 'f:' .. token) == 1 then return FENCED end
  return nil
end

local function op_record(op_key, result, ttl_ms)
  redis.call('HSET', op_key, 'r', result)
  redis.call('PEXPIRE', op_key, ttl_ms)
  return result
end
