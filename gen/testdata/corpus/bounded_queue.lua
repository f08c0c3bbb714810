--- Pushes jobs onto a queue that keeps at most max jobs, dropping the
--- oldest, and answers the queue's length.
--- @key    queue   list of jobs, newest first
--- @arg    max     int[1..]
--- @arg    ...jobs string
--- @return length  int
local queue = KEYS[1]
local max = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('LPUSH', queue, ARGV[i])
end
redis.call('LTRIM', queue, 0, max - 1)
return redis.call('LLEN', queue)
