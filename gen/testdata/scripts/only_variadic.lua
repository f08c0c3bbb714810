--- Reports, for each key, whether it exists and lives at least as long as
--- the matching minimum.
--- @key    ...keys      keys to look at
--- @arg    ...min_ttls  ms    one per key
--- @return ...fresh     bool
--- @flags  no-writes
local reply = {}
for i = 1, #KEYS do
  local ttl = redis.call('PTTL', KEYS[i])
  reply[i] = (ttl == -1 or ttl >= tonumber(ARGV[i])) and 1 or 0
end
return reply
