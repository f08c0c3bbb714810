--- Reads a key: a no-writes script, sent as EVALSHA_RO where the server
--- has it.
--- @key    name    any string key
--- @return value   string  the key's value, or "" when it is missing
--- @flags  no-writes
local name = KEYS[1]
local v = redis.call('GET', name)
if not v then
  return ''
end
return v
