--- A sliding-window log limiter as blogs write it: one sorted-set member per
--- request, scored by its time in ms; old ones are trimmed first.
--- @key    log      sorted set of requests
--- @arg    limit    int
--- @arg    window   ms
--- @arg    id       string  unique per request
--- @return allowed  bool
--- @return count    int     requests in the window after this call
local log = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local id = ARGV[3]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', log, '-inf', now - window)
local count = redis.call('ZCARD', log)
if count >= limit then
  return {0, count}
end
redis.call('ZADD', log, now, id)
redis.call('PEXPIRE', log, window)
return {1, count + 1}
