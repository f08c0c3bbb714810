--- Counts a hit against a quota of limit hits per window and says whether
--- it fits. Hits over the quota are not counted; mode peek counts nothing.
--- @key    counter  string counter; expires with its window
--- @arg    limit    int[1..1e9]       hits allowed per window
--- @arg    window   s[1..]            window length
--- @arg    mode     enum(count|peek)  peek answers without counting
--- @arg    now      unix_ms           caller clock; the zero time uses the server's
--- @return allowed  bool
--- @return used     int     hits counted in this window
--- @return reset    ms      until the window ends
--- @return at       unix_ms the clock the call was judged at
--- @error  BADARG   an argument is not what the header says
local counter = KEYS[1]
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local mode = ARGV[3]
local now = tonumber(ARGV[4])
if not limit or limit < 1 or not window or window < 1 or not now then
  return redis.error_reply('BADARG limit and window must be positive integers')
end
if mode ~= 'count' and mode ~= 'peek' then
  return redis.error_reply('BADARG mode must be count or peek')
end
if now == 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local used = tonumber(redis.call('GET', counter) or '0')
local reset = redis.call('PTTL', counter)
if reset < 0 then
  -- A later read of a bound index is fine: only the binding above must
  -- match the header.
  reset = tonumber(ARGV[2]) * 1000
end
if used >= limit then
  return {0, used, reset, now}
end
if mode == 'count' then
  used = redis.call('INCR', counter)
  if used == 1 then
    redis.call('EXPIRE', counter, string.format('%d', window))
  end
end
return {1, used, reset, now}
