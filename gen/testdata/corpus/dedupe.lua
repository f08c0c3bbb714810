--- Marks events as seen and answers, per event, whether it is new: a
--- dedupe filter for webhooks.
--- @key    seen      set of event ids
--- @arg    ...ids    string
--- @return ...fresh  bool
local seen = KEYS[1]
local ids = ARGV
local out = {}
for i = 1, #ids do
  out[i] = redis.call('SADD', seen, ids[i])
end
redis.call('EXPIRE', seen, 86400)
return out
