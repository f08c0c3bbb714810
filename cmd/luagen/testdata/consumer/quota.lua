--- Counts a hit against a quota of limit hits per window and says whether
--- it fits. Hits over the quota are not counted.
--- @key    counter  string counter; expires with its window
--- @arg    limit    int    hits allowed per window (>= 1)
--- @arg    window   s      window length (>= 1 s)
--- @return allowed  bool
--- @return used     int    hits counted in this window
--- @return reset    ms     until the window ends
--- @error  BADARG   limit or window is not a positive integer
local counter = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
if not limit or limit < 1 or not window or window < 1 then
  return redis.error_reply('BADARG limit and window must be positive integers')
end
local used = redis.call('INCR', counter)
if used == 1 then
  redis.call('EXPIRE', counter, string.format('%d', window))
end
local reset = redis.call('PTTL', counter)
if used > limit then
  redis.call('DECR', counter)
  return {0, used - 1, reset}
end
return {1, used, reset}
