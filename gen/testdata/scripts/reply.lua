--- Replies with an error, or with n copies of a value, so the Go side's
--- checks of replies can be tried against a real server.
--- @arg    err    string  an error reply to give, or '' for none
--- @arg    n      int     how many elements to reply with
--- @arg    value  string  the value of each element
--- @return wait   s       the single element, in seconds
local err = ARGV[1]
local n = tonumber(ARGV[2])
local value = ARGV[3]
if err ~= '' then
  return redis.error_reply(err)
end
local reply = {}
for i = 1, n do
  reply[i] = value
end
return reply
