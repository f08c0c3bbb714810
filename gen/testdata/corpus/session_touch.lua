--- Stores a session field and keeps the session alive for ttl; answers
--- how long it now lives.
--- @key    session  hash of fields
--- @arg    field    string
--- @arg    value    string
--- @arg    ttl      s[1..]
--- @return left     ms
local session = KEYS[1]
local field = ARGV[1]
local value = ARGV[2]
local ttl = ARGV[3]
redis.call('HSET', session, field, value)
redis.call('EXPIRE', session, ttl)
return redis.call('PTTL', session)
