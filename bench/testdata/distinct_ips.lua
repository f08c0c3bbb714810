-- wrk script of TestHTTP's "_ips" rows: every request from a client
-- address of its own, as a proxy in front of the server records it in
-- X-Forwarded-For. 100 000 addresses, 10.0.0.0 to 10.1.134.159: each of
-- wrk's two threads (-t2) walks its half in order, one from 10.0.0.0, the
-- other from 10.0.195.80, so no address repeats before 100 000 requests,
-- and then they come round again.
local addresses = 100000
local threads = 0

function setup(thread)
	thread:set("id", threads)
	threads = threads + 1
end

local cursor

function init(args)
	local share = math.floor(addresses / 2)
	cursor = id * share
end

function request()
	local k = cursor % addresses
	cursor = cursor + 1
	return wrk.format(nil, nil, {
		["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.floor(k / 65536), math.floor(k / 256) % 256, k % 256),
	})
end
