package rls

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/redlimit/redlimit/ratelimit"
)

// A Service answers Envoy's RateLimitService (RLS v3) from the Config it
// holds. It is safe for concurrent use; SetConfig swaps the Config under
// calls in flight.
type Service struct {
	rlpb.UnimplementedRateLimitServiceServer
	lims   *limiters
	config atomic.Pointer[Config]
	// noConfig says why no configuration serves, before the first loads.
	noConfig atomic.Pointer[noConfig]
	metrics  *metrics // nil without Prometheus
	opts     serviceOptions
}

// serviceOptions are the environment's settings for answers.
type serviceOptions struct {
	headers          bool // LIMIT_RESPONSE_HEADERS_ENABLED
	limitHeader      string
	remainingHeader  string
	resetHeader      string
	nearLimitRatio   float32
	globalShadowMode bool
	globalQuotaMode  bool
	now              func() time.Time
}

type noConfig struct{ err error }

// SetConfig makes c the configuration every later call is answered by.
func (s *Service) SetConfig(c *Config) { s.config.Store(c) }

// Config is the configuration calls are answered by; nil before the first
// SetConfig.
func (s *Service) Config() *Config { return s.config.Load() }

// ShouldRateLimit decides a request: each descriptor is matched against
// the domain's rules and counted, and the request is OVER_LIMIT when any
// descriptor is (unless shadow or quota mode says otherwise). A request
// that is denied counts nothing: when it has several descriptors to
// count, each is reserved, and given back if one denies. Bad
// input is codes.InvalidArgument, a Redis that fails or does not answer
// in time codes.Unavailable (unless a fallback decides).
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlpb.RateLimitRequest) (*rlpb.RateLimitResponse, error) {
	resp, err := s.shouldRateLimit(ctx, req)
	if err != nil && s.metrics != nil {
		kind := "service_error"
		if status.Code(err) == codes.Unavailable {
			kind = "redis_error"
		}
		s.metrics.callError(kind)
	}
	return resp, err
}

func (s *Service) shouldRateLimit(ctx context.Context, req *rlpb.RateLimitRequest) (*rlpb.RateLimitResponse, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	cfg := s.config.Load()
	if cfg == nil {
		why := errNoConfig.Error()
		if nc := s.noConfig.Load(); nc != nil {
			why += ": " + nc.err.Error()
		}
		return nil, status.Error(codes.Unavailable, why)
	}
	n := len(req.Descriptors)
	ms := make([]*match, n)
	unlimited := make([]bool, n)
	replacing := map[string]bool{}
	for i, d := range req.Descriptors {
		m, err := cfg.match(req.Domain, d)
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
		}
		if m == nil {
			if cfg.domains[req.Domain] == nil && s.metrics != nil {
				s.metrics.domainNotFound(req.Domain)
			}
			continue
		}
		if m.rule.sent {
			if err := s.lims.bind(m.rule); err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "descriptor %d: the limit override: %v", i, err)
			}
		}
		for _, r := range m.rule.Replaces {
			replacing[r] = true
		}
		if m.rule.Unlimited {
			unlimited[i] = true
			continue
		}
		ms[i] = m
	}
	for i, m := range ms {
		if m != nil && m.rule.Name != "" && replacing[m.rule.Name] {
			ms[i] = nil
		}
	}
	hits := hitsAddends(req)
	outs, err := s.decideAll(ctx, req, ms, hits)
	if err != nil {
		return nil, err
	}
	now := s.opts.now()
	resp := &rlpb.RateLimitResponse{OverallCode: rlpb.RateLimitResponse_OK, Statuses: make([]*rlpb.RateLimitResponse_DescriptorStatus, n)}
	var binding *rlpb.RateLimitResponse_DescriptorStatus // for the headers, as the reference picks it
	var bindingMatch *match
	minRemaining := uint32(math.MaxUint32)
	for i := range req.Descriptors {
		switch {
		case unlimited[i]:
			resp.Statuses[i] = &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
			continue
		case ms[i] == nil:
			resp.Statuses[i] = &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK}
			continue
		}
		m, o := ms[i], outs[i]
		st := s.status(m.rule, o, now)
		if s.metrics != nil {
			s.metrics.observe(m, o, hits[i], s.opts.nearLimitRatio)
		}
		if st.CurrentLimit != nil && st.LimitRemaining < minRemaining {
			binding, bindingMatch, minRemaining = st, m, st.LimitRemaining
		}
		if st.Code == rlpb.RateLimitResponse_OVER_LIMIT {
			if s.opts.globalQuotaMode || m.rule.QuotaMode {
				st = &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK, CurrentLimit: st.CurrentLimit, LimitRemaining: st.LimitRemaining}
			} else {
				resp.OverallCode = rlpb.RateLimitResponse_OVER_LIMIT
				binding, bindingMatch, minRemaining = st, m, 0
			}
		}
		resp.Statuses[i] = st
	}
	if s.opts.headers && binding != nil {
		resp.ResponseHeadersToAdd = s.headers(binding, bindingMatch)
	}
	if resp.OverallCode == rlpb.RateLimitResponse_OVER_LIMIT && s.opts.globalShadowMode {
		resp.OverallCode = rlpb.RateLimitResponse_OK
		if s.metrics != nil {
			s.metrics.globalShadowMode.Inc()
		}
	}
	return resp, nil
}

// status is a descriptor's answer. Shadow mode answers OK where the limit
// denies.
func (s *Service) status(r *Rule, o outcome, now time.Time) *rlpb.RateLimitResponse_DescriptorStatus {
	st := &rlpb.RateLimitResponse_DescriptorStatus{Code: rlpb.RateLimitResponse_OK}
	if !o.allowed {
		st.Code = rlpb.RateLimitResponse_OVER_LIMIT
		if r.ShadowMode {
			st.Code = rlpb.RateLimitResponse_OK
		}
	}
	if o.fallback {
		return st // Redis said nothing: no limit to report
	}
	st.CurrentLimit = &rlpb.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: r.Unit}
	if r.UnitMultiplier != 0 {
		st.CurrentLimit.UnitMultiplier = wrapperspb.UInt32(r.UnitMultiplier)
	}
	st.LimitRemaining = uint32(min(o.remaining, math.MaxUint32))
	st.DurationUntilReset = &durationpb.Duration{Seconds: resetSeconds(r, o, now)}
	return st
}

// resetSeconds is the duration_until_reset, in whole seconds rounded up as
// the reference's are: for a fixed window, the seconds until the window
// ends (the reference's unit - now % unit); for the other algorithms the
// wait of a denial that can pass, else the time until the limit is full
// again.
func resetSeconds(r *Rule, o outcome, now time.Time) int64 {
	t := o.resetAfter
	if r.Algorithm != "fixed_window" && !o.allowed && o.retryAfter != never {
		t = o.retryAfter
	}
	if t == 0 && r.loc != nil {
		// Nothing counted this period: the seconds to the calendar's next
		// period (package ratelimit places the same boundary with time.Date).
		return int64((periodEnd(r, now).Sub(now) + time.Second - 1) / time.Second)
	}
	if t == 0 && (r.Algorithm == "fixed_window" || r.lim == nil) {
		p := int64(r.Period / time.Second)
		return p - now.Unix()%p
	}
	return int64((t + time.Second - 1) / time.Second)
}

// periodEnd is the start of the calendar period after the one of r that
// holds now: the next midnight, Monday, 1st or January 1st in r's zone.
func periodEnd(r *Rule, now time.Time) time.Time {
	t := now.In(r.loc)
	y, m, d := t.Date()
	switch r.Unit {
	case rlpb.RateLimitResponse_RateLimit_WEEK:
		d += 7 - (int(t.Weekday())+6)%7
	case rlpb.RateLimitResponse_RateLimit_MONTH:
		m, d = m+1, 1
	case rlpb.RateLimitResponse_RateLimit_YEAR:
		y, m, d = y+1, time.January, 1
	default:
		d++
	}
	return time.Date(y, m, d, 0, 0, 0, 0, r.loc)
}

// hitsAddends is the reference's GetHitsAddends: a descriptor's own
// hits_addend (0 only looks), else the request's, at least 1.
func hitsAddends(req *rlpb.RateLimitRequest) []uint64 {
	hits := make([]uint64, len(req.Descriptors))
	for i, d := range req.Descriptors {
		if h := d.GetHitsAddend(); h != nil {
			hits[i] = h.GetValue()
		} else {
			hits[i] = uint64(max(1, req.HitsAddend))
		}
	}
	return hits
}

// checkRequest refuses what no rule can answer.
func checkRequest(req *rlpb.RateLimitRequest) error {
	if req.GetDomain() == "" {
		return status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.Descriptors) == 0 {
		return status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	for i, d := range req.Descriptors {
		if len(d.GetEntries()) == 0 {
			return status.Errorf(codes.InvalidArgument, "descriptor %d has no entries", i)
		}
		for j, e := range d.Entries {
			if e.GetKey() == "" {
				return status.Errorf(codes.InvalidArgument, "descriptor %d, entry %d: the key is empty", i, j)
			}
		}
		if d.IsNegativeHits {
			return status.Errorf(codes.InvalidArgument, "descriptor %d: is_negative_hits is not supported: a denied request counts nothing here, so there is nothing to give back", i)
		}
	}
	return nil
}

// decideAll decides every descriptor with a limit, all or nothing: a
// request that is denied counts nothing. A request with several
// descriptors to count reserves them all at once (different keys
// concurrently, so that the client's pipeline, or the limiters' send stage
// across keys when the client is not the AutoPipeliner, carries them
// together) and, when one that can deny it does, gives the
// others' reservations back (Reservation.Cancel, atomic in the script):
// one round of calls, a second only for a denial. Meanwhile a concurrent
// request may see those units counted and be denied by them: it errs
// towards denial, never admission past a limit. A request that a rule of
// 0 per unit denies already is only looked at. Shadow and quota mode
// rules never deny a request.
func (s *Service) decideAll(ctx context.Context, req *rlpb.RateLimitRequest, ms []*match, hits []uint64) ([]outcome, error) {
	outs := make([]outcome, len(ms))
	var redis []int // descriptors Redis decides
	localDeny := false
	for i, m := range ms {
		switch {
		case m == nil:
		case m.rule.lim == nil: // 0 per unit
			outs[i] = outcome{allowed: false, retryAfter: never}
			localDeny = localDeny || s.canDeny(m.rule)
		default:
			redis = append(redis, i)
		}
	}
	if len(redis) == 0 {
		return outs, nil
	}
	counting := 0
	for _, i := range redis {
		if hits[i] > 0 {
			counting++
		}
	}
	noDeny := s.opts.globalShadowMode || s.opts.globalQuotaMode // nothing denies
	switch {
	case localDeny && !noDeny:
		// Denied already: each descriptor only says what it would.
		if err := s.run(ctx, req, ms, redis, make([]uint64, len(ms)), outs, nil); err != nil {
			return nil, err
		}
		for _, i := range redis {
			if o := &outs[i]; o.allowed && hits[i] > uint64(o.remaining) && !o.fallback {
				o.allowed, o.retryAfter = false, never
			}
		}
		return outs, nil
	case noDeny || counting < 2:
		return outs, s.run(ctx, req, ms, redis, hits, outs, nil)
	}
	held := make([]*ratelimit.Reservation, len(ms))
	err := s.run(ctx, req, ms, redis, hits, outs, held)
	if err == nil && !s.denied(ms, redis, outs) {
		return outs, nil
	}
	back := s.giveBack(ctx, held)
	if err != nil {
		return nil, err
	}
	for _, i := range back {
		outs[i].remaining += int64(hits[i]) // as it was: nothing counted
	}
	// A descriptor whose key an earlier one of the request names too was
	// judged after that one counted; the reference judges each alone
	// (GET, then INCRBY), so that only its count denies the repeat. Judge
	// the repeats alone, now that nothing is counted: if the request is
	// still denied it stands; else only its own repeats denied it, and it
	// counts in order as the reference's does.
	var repeats []int
	seen := make(map[string]bool, len(redis))
	for _, i := range redis {
		k := ms[i].rule.lim.name + key(req.Domain, req.Descriptors[i].Entries, ms[i].values)
		if seen[k] {
			repeats = append(repeats, i)
		}
		seen[k] = true
	}
	if len(repeats) == 0 {
		return outs, nil
	}
	if err := s.run(ctx, req, ms, repeats, make([]uint64, len(ms)), outs, nil); err != nil {
		return nil, err
	}
	for _, i := range repeats {
		if o := &outs[i]; o.allowed && hits[i] > uint64(o.remaining) && !o.fallback {
			o.allowed, o.retryAfter = false, never
		}
	}
	if s.denied(ms, redis, outs) {
		return outs, nil
	}
	var count []int
	for _, i := range redis {
		if hits[i] > 0 {
			count = append(count, i)
		}
	}
	return outs, s.run(ctx, req, ms, count, hits, outs, nil)
}

// denied reports whether a descriptor of which that can deny the
// request does.
func (s *Service) denied(ms []*match, which []int, outs []outcome) bool {
	for _, i := range which {
		if !outs[i].allowed && s.canDeny(ms[i].rule) {
			return true
		}
	}
	return false
}

// giveBack cancels the reservations held, concurrently, and returns the
// descriptors whose units went back. A refund that fails leaves its units
// counted until their window ends: a denial too many later, never an
// admission.
func (s *Service) giveBack(ctx context.Context, held []*ratelimit.Reservation) (back []int) {
	ctx = context.WithoutCancel(ctx) // Envoy gone or not, the units go back
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, r := range held {
		if r == nil || !r.Decision.Allowed || r.Decision.Cause != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.Cancel(ctx) == nil {
				mu.Lock()
				back = append(back, i)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return back
}

func (s *Service) canDeny(r *Rule) bool { return !r.ShadowMode && !r.QuotaMode }

// run decides descriptors which (hits 0 looks): descriptors with one key
// in the order of the request, as the reference counts them (it sends them
// in one pipeline), and different keys at once. With held it reserves
// (held[i] is descriptor i's reservation) and goes on past a failure, so
// that everything counted can be given back.
func (s *Service) run(ctx context.Context, req *rlpb.RateLimitRequest, ms []*match, which []int, hits []uint64, outs []outcome, held []*ratelimit.Reservation) error {
	one := func(i int, key string) error {
		o, r, err := ms[i].rule.lim.decide(ctx, key, hits[i], held != nil)
		if err != nil {
			return describeError(i, err)
		}
		outs[i] = o
		if held != nil {
			held[i] = r
		}
		return nil
	}
	if len(which) == 1 {
		i := which[0]
		return one(i, key(req.Domain, req.Descriptors[i].Entries, ms[i].values))
	}
	var groups [][]int
	keys := make(map[string]int, len(which))
	names := make([]string, len(ms))
	for _, i := range which {
		k := ms[i].rule.lim.name + key(req.Domain, req.Descriptors[i].Entries, ms[i].values)
		names[i] = k
		if g, ok := keys[k]; ok {
			groups[g] = append(groups[g], i)
			continue
		}
		keys[k] = len(groups)
		groups = append(groups, []int{i})
	}
	errs := make([]error, len(ms))
	group := func(g []int) {
		for _, i := range g {
			if errs[i] = one(i, names[i][len(ms[i].rule.lim.name):]); errs[i] != nil && held == nil {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for _, g := range groups[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			group(g)
		}()
	}
	group(groups[0]) // on this goroutine, whose stack has grown already
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func describeError(i int, err error) error {
	switch errorKind(err) {
	case "unavailable":
		return status.Errorf(codes.Unavailable, "descriptor %d: %v", i, err)
	case "state":
		return status.Errorf(codes.Internal, "descriptor %d: %v (the Redis key holds data that is not this rule's; it was left alone)", i, err)
	}
	return status.Errorf(codes.InvalidArgument, "descriptor %d: %v", i, err)
}

// headers are the response headers of the binding descriptor: the
// reference's three (the limit, the remaining count, the seconds to the
// reset), then the IETF RateLimit-Policy and RateLimit fields.
func (s *Service) headers(st *rlpb.RateLimitResponse_DescriptorStatus, m *match) []*core.HeaderValue {
	reset := st.DurationUntilReset.GetSeconds()
	name := m.rule.Name
	if name == "" {
		name = m.statKey
	}
	window := int64(m.rule.Period / time.Second)
	return []*core.HeaderValue{
		{Key: s.opts.limitHeader, Value: fmt.Sprint(st.CurrentLimit.RequestsPerUnit)},
		{Key: s.opts.remainingHeader, Value: fmt.Sprint(st.LimitRemaining)},
		{Key: s.opts.resetHeader, Value: fmt.Sprint(reset)},
		{Key: "RateLimit-Policy", Value: fmt.Sprintf("%s;q=%d;w=%d", sfString(name), st.CurrentLimit.RequestsPerUnit, window)},
		{Key: "RateLimit", Value: fmt.Sprintf("%s;r=%d;t=%d", sfString(name), st.LimitRemaining, reset)},
	}
}

// sfString is a Structured Field String (RFC 9651): printable ASCII, '"'
// and '\' escaped; any other byte becomes '?'.
func sfString(s string) string {
	b := []byte{'"'}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}
