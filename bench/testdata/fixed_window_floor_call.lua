-- Floors under fixed_window.lua's cost inside Redis (docs/envoy.md, with
-- make bench-cost; the name tells scriptcost to send the fixed window's key
-- and five arguments): the script call alone, answering one integer.
return 1
