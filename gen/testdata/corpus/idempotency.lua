--- Records a request's response under its idempotency key the first time;
--- a retry gets the stored response back.
--- @key    entry     string: the first response
--- @arg    response  string
--- @arg    ttl       ms
--- @return first     bool
--- @return stored    string  the response kept for this key
local entry = KEYS[1]
local response = ARGV[1]
local ttl = ARGV[2]
local old = redis.call('GET', entry)
if old then
  return {0, old}
end
redis.call('SET', entry, response, 'PX', ttl)
return {1, response}
