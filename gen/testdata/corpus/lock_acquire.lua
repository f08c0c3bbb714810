--- Takes a lock for ttl unless someone else holds it; the holder taking it
--- again extends it.
--- @key    lock   string holding the owner's token
--- @arg    token  string  the owner's random token
--- @arg    ttl    ms      how long the lock lives
--- @return taken  bool
local lock = KEYS[1]
local token = ARGV[1]
local ttl = ARGV[2]
local holder = redis.call('GET', lock)
if holder and holder ~= token then
  return 0
end
redis.call('SET', lock, token, 'PX', ttl)
return 1
