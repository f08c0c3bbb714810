package gen

// The multi-key form (@multi): one call that runs several calls of a script,
// each on its own keys, one after another, inside one EVALSHA. It is the
// script's own text, unchanged, as the body of a local function whose
// parameters are named KEYS and ARGV (as a Functions callback is, so the
// same chunk checks apply), and a driver after it:
//
//	KEYS: every call's keys, call after call
//	ARGV: for each call, its number of keys, its number of arguments, then
//	      its arguments
//	reply: one element per call, that call's own reply, or its error reply
//
// Each call runs as a call of its own at that instant would: the script
// cannot tell it apart (it sees its own KEYS and ARGV), and an error in one
// call (a BADARG, a key of the wrong type) is that call's element, while the
// calls before and after it run; a Lua error without a code gets ERR, as
// Redis gives one. What a call would change for the calls after it in the
// same EVALSHA (redis.setresp, redis.set_repl) is refused with @multi. The layout itself is checked before any
// call runs; a bad one is a BADARG and nothing runs. On a Cluster every key
// of one multi-key call must share one slot (the form carries no #! line,
// so no allow-cross-slot-keys flag).

// MultiCalls is the most calls one multi-key call runs.
const MultiCalls = 64

// multiBefore and multiAfter wrap a script's text into its multi-key form.
// A script that ends without a newline may end in a comment: multiAfter
// starts on a line of its own.
const (
	multiBefore = "local one = function(KEYS, ARGV)\n"
	multiAfter  = `
end
-- luagen's multi-key form: ARGV is, per call, its key count, its argument
-- count and its arguments; KEYS, every call's keys in turn. The reply is
-- each call's own reply or error, in order.
local calls, nargv, nkeys, a, k = {}, #ARGV, #KEYS, 1, 0
local function count(s)
  return s == '0' or string.find(s, '^[1-9]%d?%d?%d?$')
end
while a <= nargv do
  local nk, na = ARGV[a], ARGV[a + 1]
  if #calls == 64 or not (nk and na and count(nk) and count(na)) then
    return redis.error_reply('BADARG multi-key call: ARGV must be, for each of 1 to 64 calls, its key count, its argument count and its arguments')
  end
  nk, na = tonumber(nk), tonumber(na)
  if k + nk > nkeys or a + 1 + na > nargv then
    return redis.error_reply('BADARG multi-key call: call ' .. (#calls + 1) .. ' names more keys or arguments than were sent')
  end
  calls[#calls + 1] = {k, nk, a + 1, na}
  k, a = k + nk, a + 2 + na
end
if #calls == 0 or k ~= nkeys then
  return redis.error_reply('BADARG multi-key call: ' .. nkeys .. ' keys sent and ' .. k .. ' named, in ' .. #calls .. ' calls (1 to 64)')
end
local out = {}
for i = 1, #calls do
  local c, ks, as = calls[i], {}, {}
  for j = 1, c[2] do
    ks[j] = KEYS[c[1] + j]
  end
  for j = 1, c[4] do
    as[j] = ARGV[c[3] + j]
  end
  local ok, r = pcall(one, ks, as)
  if not ok then
    if type(r) ~= 'table' or type(r.err) ~= 'string' then
      r = string.gsub(tostring(r), '^[^:]*:%d+: ', '')
      if not string.find(r, '^%u[%u%d_]* ') then
        r = 'ERR ' .. r
      end
      r = {err = r}
    end
  elseif r == nil then
    r = false
  end
  out[i] = r
end
return out
`
)

// multiSource is s's multi-key form.
func multiSource(s *Script) []byte {
	return []byte(multiBefore + string(s.Source) + multiAfter)
}
