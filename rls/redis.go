package rls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redlimit/redlimit/ratelimit"
)

// newRedis connects as the reference's REDIS_* settings say. Retries are
// off (MaxRetries -1): after a read timeout go-redis would send a script
// again, and a request Redis counted once would count twice.
func newRedis(s Settings) (redis.UniversalClient, error) {
	var tc *tls.Config
	if s.RedisTLS {
		var err error
		if tc, err = redisTLS(s); err != nil {
			return nil, err
		}
	}
	user, pass := "", s.RedisAuth
	if u, p, ok := strings.Cut(s.RedisAuth, ":"); ok {
		user, pass = u, p
	}
	t := s.RedisTimeout
	switch s.RedisType {
	case "cluster":
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: strings.Split(s.RedisURL, ","), Username: user, Password: pass, TLSConfig: tc,
			PoolSize: s.RedisPoolSize, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: -1,
		}), nil
	case "sentinel":
		parts := strings.Split(s.RedisURL, ",")
		if len(parts) < 2 {
			return nil, errors.New("REDIS_URL: expected master name and a list of urls for the sentinels, in the format: <redis master name>,<sentinel1>,...,<sentineln>")
		}
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: parts[0], SentinelAddrs: parts[1:], SentinelPassword: s.RedisSentinelAuth,
			Username: user, Password: pass, TLSConfig: tc,
			PoolSize: s.RedisPoolSize, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: -1,
		}), nil
	}
	return redis.NewClient(&redis.Options{
		Network: s.RedisSocketType, Addr: s.RedisURL, Username: user, Password: pass, TLSConfig: tc,
		PoolSize: s.RedisPoolSize, DialTimeout: t, ReadTimeout: t, WriteTimeout: t, MaxRetries: -1,
	}), nil
}

// pipeliner is what the limiters send their scripts through: for a
// single Redis, go-redis's AutoPipeliner over rdb, which sends the calls
// of concurrent requests in one write (REDIS_PIPELINE_WINDOW waits that
// long for more), unless REDLIMIT_AUTOPIPELINE is false. A Cluster or
// Sentinel client is used as it is: ratelimit's failover guard (a READONLY
// resend, a slot map reloaded after a failover) wraps the client, not an
// AutoPipeliner over it.
func pipeliner(rdb redis.UniversalClient, s Settings) (ratelimit.Client, func(), error) {
	if !s.AutoPipeline || s.RedisType != "single" {
		return rdb, func() {}, nil
	}
	opts := redis.DefaultAutoPipelineOptions()
	opts.MaxFlushDelay = s.PipelineWindow
	ap, err := rdb.(*redis.Client).AutoPipelineWithOptions(opts)
	if err != nil {
		return nil, nil, fmt.Errorf("the AutoPipeliner: %w", err)
	}
	return ap, func() { _ = ap.Close() }, nil
}

// redisTLS is the reference's TlsConfigFromFiles for a Redis server: a
// client certificate when one is given, the server's checked against the
// CA file (else the system's roots), with or without its host name.
func redisTLS(s Settings) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.RedisTLSCert != "" || s.RedisTLSKey != "" {
		cert, err := tls.LoadX509KeyPair(s.RedisTLSCert, s.RedisTLSKey)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	if s.RedisTLSCACert != "" {
		pool, err := certPool(s.RedisTLSCACert)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CACERT: %w", err)
		}
		tc.RootCAs = pool
	}
	if s.RedisTLSSkipHost {
		// Check the chain, not the name: Go has no switch for that alone.
		roots := tc.RootCAs
		tc.InsecureSkipVerify = true
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the Redis server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return tc, nil
}

func certPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}

// pingRedis reports whether Redis answers: every master of a cluster that
// has one answering.
func pingRedis(ctx context.Context, c redis.UniversalClient) error {
	if cc, ok := c.(*redis.ClusterClient); ok {
		var answered bool
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			if m.Ping(ctx).Err() == nil {
				answered = true
			}
			return nil
		})
		if answered {
			return nil
		}
		if err == nil {
			err = errors.New("no master answered PING")
		}
		return err
	}
	return c.Ping(ctx).Err()
}
