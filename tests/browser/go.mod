module github.com/redlimit/redlimit/tests/browser

go 1.25

require github.com/chromedp/chromedp v0.23.0

require (
	github.com/cespare/xxhash/v2 v2.2.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/chromedp/cdproto v0.159.0
	github.com/google/go-cmp v0.6.0
	github.com/redis/go-redis/v9 v9.7.3
	github.com/redlimit/redlimit v0.0.0
)

replace github.com/redlimit/redlimit => ../..
