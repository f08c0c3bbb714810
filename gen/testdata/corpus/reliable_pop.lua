--- Moves the oldest job to a processing list, so a worker that crashes does
--- not lose it, and answers it.
--- @key    queue       list of jobs, newest first
--- @key    processing  list of jobs being worked on
--- @return found       bool
--- @return job         string  "" when the queue is empty
local queue = KEYS[1]
local processing = KEYS[2]
local job = redis.call('RPOPLPUSH', queue, processing)
if not job then
  return {0, ''}
end
return {1, job}
