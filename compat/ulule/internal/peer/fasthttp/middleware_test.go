// redlimit: ulule's own test, drivers/middleware/fasthttp/middleware_test.go of github.com/ulule/limiter/v3
// redlimit: v3.11.2, as its released module has it, run against this
// redlimit: module's store on a real Redis. Every line that differs from
// redlimit: it says why in a "redlimit:" comment, and TestPeerCopies (in
// redlimit: compat/ulule) holds the file to that; D1 is listed in the
// redlimit: package doc of compat/ulule. ulule's license:
//
// The MIT License (MIT)
//
// Copyright (c) 2015-2018 Ulule
//
// Permission is hereby granted, free of charge, to any person obtaining a copy
// of this software and associated documentation files (the "Software"), to deal
// in the Software without restriction, including without limitation the rights
// to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
// copies of the Software, and to permit persons to whom the Software is
// furnished to do so, subject to the following conditions:
//
// The above copyright notice and this permission notice shall be included in all
// copies or substantial portions of the Software.
//
// THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
// IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
// FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
// AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
// LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
// OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
// SOFTWARE.

package fasthttp_test

import (
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	libfasthttp "github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/fasthttp"
	// redlimit: adapted: no memory store; peer.Store, below, in its place

	"github.com/redlimit/redlimit/compat/ulule/internal/peer" // redlimit: adapted: for peer.Store
)

// nolint: gocyclo
func TestFasthttpMiddleware(t *testing.T) {
	is := require.New(t)

	store := peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)

	rate, err := limiter.NewRateFromFormatted("10-M")
	is.NoError(err)
	is.NotZero(rate)

	middleware := fasthttp.NewMiddleware(limiter.New(store, rate))

	requestHandler := func(ctx *libfasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/":
			ctx.SetStatusCode(libfasthttp.StatusOK)
			ctx.SetBodyString("hello")
		}
	}

	success := int64(10)
	clients := int64(100)

	//
	// Sequential
	//

	for i := int64(1); i <= clients; i++ {
		resp := libfasthttp.AcquireResponse()
		req := libfasthttp.AcquireRequest()
		req.Header.SetHost("localhost:8081")
		req.Header.SetRequestURI("/")
		err := serve(middleware.Handle(requestHandler), req, resp)
		is.NoError(err)

		if i <= success {
			is.Equal(resp.StatusCode(), libfasthttp.StatusOK)
		} else {
			is.Equal(resp.StatusCode(), libfasthttp.StatusTooManyRequests)
		}
	}

	//
	// Concurrent
	//

	store = peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)

	middleware = fasthttp.NewMiddleware(limiter.New(store, rate))

	requestHandler = func(ctx *libfasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/":
			ctx.SetStatusCode(libfasthttp.StatusOK)
			ctx.SetBodyString("hello")
		}
	}

	wg := &sync.WaitGroup{}
	counter := int64(0)

	for i := int64(1); i <= clients; i++ {
		wg.Add(1)

		go func() {
			resp := libfasthttp.AcquireResponse()
			req := libfasthttp.AcquireRequest()
			req.Header.SetHost("localhost:8081")
			req.Header.SetRequestURI("/")
			err := serve(middleware.Handle(requestHandler), req, resp)
			is.NoError(err)

			if resp.StatusCode() == libfasthttp.StatusOK {
				atomic.AddInt64(&counter, 1)
			}

			wg.Done()
		}()
	}

	wg.Wait()
	is.Equal(success, atomic.LoadInt64(&counter))

	//
	// Custom KeyGetter
	//

	store = peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)

	counter = int64(0)
	keyGetter := func(c *libfasthttp.RequestCtx) string {
		v := atomic.AddInt64(&counter, 1)
		return strconv.FormatInt(v, 10)
	}

	middleware = fasthttp.NewMiddleware(limiter.New(store, rate), fasthttp.WithKeyGetter(keyGetter))
	is.NotZero(middleware)

	requestHandler = func(ctx *libfasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/":
			ctx.SetStatusCode(libfasthttp.StatusOK)
			ctx.SetBodyString("hello")
		}
	}

	for i := int64(1); i <= clients; i++ {
		resp := libfasthttp.AcquireResponse()
		req := libfasthttp.AcquireRequest()
		req.Header.SetHost("localhost:8081")
		req.Header.SetRequestURI("/")
		err := serve(middleware.Handle(requestHandler), req, resp)
		is.NoError(err)
		is.Equal(libfasthttp.StatusOK, resp.StatusCode(), strconv.FormatInt(i, 10))
	}

	//
	// Test ExcludedKey
	//

	store = peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)

	counter = int64(0)
	keyGetterHandler := func(c *libfasthttp.RequestCtx) string {
		v := atomic.AddInt64(&counter, 1)
		return strconv.FormatInt(v%2, 10)
	}
	excludedKeyHandler := func(key string) bool {
		return key == "1"
	}

	middleware = fasthttp.NewMiddleware(limiter.New(store, rate),
		fasthttp.WithKeyGetter(keyGetterHandler), fasthttp.WithExcludedKey(excludedKeyHandler))
	is.NotZero(middleware)

	requestHandler = func(ctx *libfasthttp.RequestCtx) {
		switch string(ctx.Path()) {
		case "/":
			ctx.SetStatusCode(libfasthttp.StatusOK)
			ctx.SetBodyString("hello")
		}
	}

	success = 20
	for i := int64(1); i <= clients; i++ {
		resp := libfasthttp.AcquireResponse()
		req := libfasthttp.AcquireRequest()
		req.Header.SetHost("localhost:8081")
		req.Header.SetRequestURI("/")
		err := serve(middleware.Handle(requestHandler), req, resp)
		is.NoError(err)
		if i <= success || i%2 == 1 {
			is.Equal(libfasthttp.StatusOK, resp.StatusCode(), strconv.FormatInt(i, 10))
		} else {
			is.Equal(libfasthttp.StatusTooManyRequests, resp.StatusCode(), strconv.FormatInt(i, 10))
		}
	}
}

func serve(handler libfasthttp.RequestHandler, req *libfasthttp.Request, res *libfasthttp.Response) error {
	ln := fasthttputil.NewInmemoryListener()
	defer func() {
		err := ln.Close()
		if err != nil {
			panic(err)
		}
	}()

	go func() {
		err := libfasthttp.Serve(ln, handler)
		if err != nil {
			panic(err)
		}
	}()

	client := libfasthttp.Client{
		Dial: func(addr string) (net.Conn, error) {
			return ln.Dial()
		},
	}

	return client.Do(req, res)
}
