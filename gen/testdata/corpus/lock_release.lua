--- Releases a lock only if the token still holds it (the classic
--- compare-and-delete from the Redis docs).
--- @key    lock      string holding the owner's token
--- @arg    token     string
--- @return released  bool
local lock = KEYS[1]
local token = ARGV[1]
if redis.call('GET', lock) == token then
  return redis.call('DEL', lock)
else
  return 0
end
