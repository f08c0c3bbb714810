// redlimit: ulule's own test, drivers/middleware/gin/middleware_test.go of github.com/ulule/limiter/v3
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

package gin_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	libgin "github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/gin"
	// redlimit: adapted: no memory store; peer.Store, below, in its place

	"github.com/redlimit/redlimit/compat/ulule/internal/peer" // redlimit: adapted: for peer.Store
)

func TestHTTPMiddleware(t *testing.T) {
	is := require.New(t)
	libgin.SetMode(libgin.TestMode)

	request, err := http.NewRequest("GET", "/", nil)
	is.NoError(err)
	is.NotNil(request)

	store := peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)

	rate, err := limiter.NewRateFromFormatted("10-M")
	is.NoError(err)
	is.NotZero(rate)

	middleware := gin.NewMiddleware(limiter.New(store, rate))
	is.NotZero(middleware)

	router := libgin.New()
	router.Use(middleware)
	router.GET("/", func(c *libgin.Context) {
		c.String(http.StatusOK, "hello")
	})

	success := int64(10)
	clients := int64(100)

	//
	// Sequential
	//

	for i := int64(1); i <= clients; i++ {

		resp := httptest.NewRecorder()
		router.ServeHTTP(resp, request)

		if i <= success {
			is.Equal(resp.Code, http.StatusOK)
		} else {
			is.Equal(resp.Code, http.StatusTooManyRequests)
		}
	}

	//
	// Concurrent
	//

	store = peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)

	middleware = gin.NewMiddleware(limiter.New(store, rate))
	is.NotZero(middleware)

	router = libgin.New()
	router.Use(middleware)
	router.GET("/", func(c *libgin.Context) {
		c.String(http.StatusOK, "hello")
	})

	wg := &sync.WaitGroup{}
	counter := int64(0)

	for i := int64(1); i <= clients; i++ {
		wg.Add(1)
		go func() {

			resp := httptest.NewRecorder()
			router.ServeHTTP(resp, request)

			if resp.Code == http.StatusOK {
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
	keyGetter := func(c *libgin.Context) string {
		v := atomic.AddInt64(&counter, 1)
		return strconv.FormatInt(v, 10)
	}

	middleware = gin.NewMiddleware(limiter.New(store, rate), gin.WithKeyGetter(keyGetter))
	is.NotZero(middleware)

	router = libgin.New()
	router.Use(middleware)
	router.GET("/", func(c *libgin.Context) {
		c.String(http.StatusOK, "hello")
	})

	for i := int64(1); i <= clients; i++ {
		resp := httptest.NewRecorder()
		router.ServeHTTP(resp, request)
		// We should always be ok as the key changes for each request
		is.Equal(http.StatusOK, resp.Code, strconv.FormatInt(i, 10))
	}

	//
	// Test ExcludedKey
	//
	store = peer.Store(t) // redlimit: adapted: this module's store on a real Redis
	is.NotZero(store)
	counter = int64(0)
	excludedKeyFn := func(key string) bool {
		return key == "1"
	}
	middleware = gin.NewMiddleware(limiter.New(store, rate),
		gin.WithKeyGetter(func(c *libgin.Context) string {
			v := atomic.AddInt64(&counter, 1)
			return strconv.FormatInt(v%2, 10)
		}),
		gin.WithExcludedKey(excludedKeyFn),
	)
	is.NotZero(middleware)

	router = libgin.New()
	router.Use(middleware)
	router.GET("/", func(c *libgin.Context) {
		c.String(http.StatusOK, "hello")
	})
	success = 20
	for i := int64(1); i < clients; i++ {
		resp := httptest.NewRecorder()
		router.ServeHTTP(resp, request)
		if i <= success || i%2 == 1 {
			is.Equal(http.StatusOK, resp.Code, strconv.FormatInt(i, 10))
		} else {
			is.Equal(resp.Code, http.StatusTooManyRequests)
		}
	}
}
