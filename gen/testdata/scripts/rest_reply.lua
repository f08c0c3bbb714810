--- Pushes the weights onto the first key, keeping the last limit of them,
--- and reports which of the other keys exist.
--- @key    first       list the weights are pushed to
--- @key    ...others   keys checked for existence
--- @arg    limit       int    most weights kept
--- @arg    ...weights  float  weights to push
--- @return count       int    length of the list
--- @return ...found    string the other keys that exist
local first = KEYS[1]
local limit = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('RPUSH', first, ARGV[i])
end
redis.call('LTRIM', first, string.format('%d', -limit), '-1')
local reply = {redis.call('LLEN', first)}
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    reply[#reply + 1] = KEYS[i]
  end
end
return reply
