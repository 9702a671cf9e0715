-- Compare the lease token and pexpire lease and descriptor (callers renew about every lease/3, through Draining:
-- §14). Repeating it is harmless, so a lost reply is retried. KEYS: lease, descriptor. ARGV: lease value, lease ms.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[2])
return 1
