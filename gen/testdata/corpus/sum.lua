--- Adds up numbers kept in several keys: a gist's "sum my counters".
--- @key    ...counters  string counters to add
--- @return total        int
local counters = KEYS
local total = 0
for i = 1, #counters do
  local v = redis.call('GET', counters[i])
  if v and not tonumber(v) then
    return redis.error_reply('BADARG ' .. counters[i] .. ' is not a number')
  end
  total = total + (tonumber(v) or 0)
end
return total
