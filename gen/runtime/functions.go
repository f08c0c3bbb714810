package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// FunctionsCode returns the library byte for byte, as FUNCTION LOAD takes
// it: each script's own text, unchanged, as the body of a callback whose
// parameters are named KEYS and ARGV.
func FunctionsCode() string { return functionsCode }

// ErrFunctionsMissing is what CheckFunctions reports for a server that does
// not hold the library.
var ErrFunctionsMissing = errors.New("luagen: the server does not hold the Functions library " + FunctionsLibrary)

// ErrFunctionsStale is reported for a server that holds other code under
// the library's name: another version of these scripts, or someone else's
// library. LoadFunctions replaces it; a call never does, it fails instead
// when its function is missing there.
var ErrFunctionsStale = errors.New("luagen: the server holds other code under the Functions library name " + FunctionsLibrary)

// ErrFunctionsConflict matches a *FunctionsConflictError: another library
// holds a function of this one.
var ErrFunctionsConflict = errors.New("luagen: another Functions library holds a function of " + FunctionsLibrary)

// FunctionsConflictError reports a function of the library that another
// library holds. Function names are one namespace per server, and Redis
// compares them without regard to case, so while the other library holds
// the name this library cannot be loaded, and FCALL of the name would run
// the other library's code: calls refuse it instead. Resolve it by
// deleting the other library (FUNCTION DELETE Library) if it is not
// needed, or by calling the scripts without Functions (EVALSHA, a plain
// client); luagen -functions NAME gives your own scripts another prefix.
type FunctionsConflictError struct {
	Function string // this library's function, as it calls it
	Library  string // the library that holds it
	Holds    string // the name as that library registered it (case may differ)
}

func (e *FunctionsConflictError) Error() string {
	return fmt.Sprintf("luagen: the function %s belongs to the Functions library %s (as %s), not %s: delete it (FUNCTION DELETE %s) or call the scripts without Functions",
		e.Function, e.Library, e.Holds, FunctionsLibrary, e.Library)
}

// Is makes errors.Is(err, ErrFunctionsConflict) hold.
func (e *FunctionsConflictError) Is(target error) bool { return target == ErrFunctionsConflict }

// FunctionsRecheck is how long a FunctionsClient trusts that a primary's
// functions of these names are this library's before it looks again
// (FUNCTION LIST LIBRARYNAME, one small reply): a call never runs another
// library's function that was there when it last looked, and one
// registered since (after FUNCTION FLUSH or DELETE took this library away)
// runs for at most this long. Looking on every call would cost a round
// trip per decision.
const FunctionsRecheck = time.Second

// checkRetry is how long a primary whose check failed (it did not answer,
// or refused FUNCTION LIST) is not asked again: its keys' calls fail with
// that error meanwhile, at once. It bounds how long calls stay failed
// after the primary is back (a restart that lost the library).
const checkRetry = 25 * time.Millisecond

// checkTimeout bounds one check of a primary. A check is every caller's
// of that primary, so it runs on past the deadline of the call that began
// it (one caller's tight deadline cut every check short, and a freshly
// promoted primary, slow to answer under load, then never passed one
// while its keys' calls kept failing); that caller stops waiting at its
// deadline.
const checkTimeout = 2 * time.Second

// FunctionsCmdable is what the library needs of a client, and Del, which a
// FunctionsClient passes on: *redis.Client, *redis.ClusterClient,
// *redis.Ring, redis.UniversalClient and *redis.Tx have it.
type FunctionsCmdable interface {
	redis.Scripter
	PipelineClient
	FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
	FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
	FunctionLoad(ctx context.Context, code string) *redis.StringCmd
	FunctionLoadReplace(ctx context.Context, code string) *redis.StringCmd
	FunctionList(ctx context.Context, q redis.FunctionListQuery) *redis.FunctionListCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
}

// FunctionsClient is a redis.Scripter and PipelineClient whose calls of
// this package's scripts go as FCALL (FCALL_RO for no-writes scripts)
// through the Functions library: pass WithFunctions(rdb) wherever the
// package takes a client. Before a call first reaches a primary, and once
// FunctionsRecheck has passed, it checks that primary's functions of these
// names are this library's (a Ring's: every shard's): another library's
// fail calls with a *FunctionsConflictError; a missing library is loaded;
// other code under its name is ErrFunctionsStale. A primary that fails the
// check (down, say) fails its keys' calls at once for 25 ms, then is
// asked again; other primaries' keys never notice. Keep one per client.
type FunctionsClient struct {
	c   FunctionsCmdable
	own *ownership // shared with the clients Wrap makes
}

// WithFunctions returns a FunctionsClient over c.
func WithFunctions(c FunctionsCmdable) *FunctionsClient {
	return &FunctionsClient{c: c, own: &ownership{}}
}

// Wrap returns a FunctionsClient that sends through wrap(c), where c is
// f's client, and shares f's checks of the primaries: for a layer between
// the library and the client, such as a breaker per node. The layer over a
// *redis.ClusterClient must have its ForEachMaster and ReloadState, and
// PrimaryFor(ctx, key) (addr string, node FunctionsCmdable, err error),
// which gives the client the check of key's primary goes through ("*" and
// nil for every primary).
func (f *FunctionsClient) Wrap(wrap func(FunctionsCmdable) FunctionsCmdable) *FunctionsClient {
	return &FunctionsClient{c: wrap(f.c), own: f.own}
}

// Eval sends EVAL to the client unchanged.
func (f *FunctionsClient) Eval(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return f.c.Eval(ctx, script, keys, args...)
}

// Del sends DEL to the client unchanged (ratelimit's Reset).
func (f *FunctionsClient) Del(ctx context.Context, keys ...string) *redis.IntCmd {
	return f.c.Del(ctx, keys...)
}

// EvalSha sends EVALSHA to the client unchanged.
func (f *FunctionsClient) EvalSha(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return f.c.EvalSha(ctx, sha1, keys, args...)
}

// EvalRO sends EVAL_RO to the client unchanged.
func (f *FunctionsClient) EvalRO(ctx context.Context, script string, keys []string, args ...interface{}) *redis.Cmd {
	return f.c.EvalRO(ctx, script, keys, args...)
}

// EvalShaRO sends EVALSHA_RO to the client unchanged.
func (f *FunctionsClient) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...interface{}) *redis.Cmd {
	return f.c.EvalShaRO(ctx, sha1, keys, args...)
}

// ScriptExists sends SCRIPT EXISTS to the client unchanged.
func (f *FunctionsClient) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	return f.c.ScriptExists(ctx, hashes...)
}

// ScriptLoad sends SCRIPT LOAD to the client unchanged.
func (f *FunctionsClient) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	return f.c.ScriptLoad(ctx, script)
}

// Pipeline returns the client's pipeline; Batch.Exec on f sends FCALL on it.
func (f *FunctionsClient) Pipeline() redis.Pipeliner { return f.c.Pipeline() }

// LoadFunctions makes every primary hold the library: FUNCTION LOAD where
// it is missing, FUNCTION LOAD REPLACE where other code holds its name (an
// older version, say), nothing where it is already there. Where another
// library holds one of its functions it loads nothing there and returns a
// *FunctionsConflictError naming that library. On a
// *redis.ClusterClient that is every master (go-redis sends FUNCTION LOAD
// itself to one node only), on a *redis.Ring every shard; replicas get it
// from their master. Calls load a missing library themselves; run this
// when you deploy, so a new version replaces the old one. FUNCTION LOAD
// needs Redis 7.0 or later, and managed services may keep it for admins.
func LoadFunctions(ctx context.Context, c FunctionsCmdable) error {
	return eachPrimary(ctx, c, func(ctx context.Context, node FunctionsCmdable) error {
		return syncLibrary(ctx, node, true)
	})
}

// CheckFunctions reports, per primary, a function of the library that
// another library holds (a *FunctionsConflictError naming it), a missing
// library (ErrFunctionsMissing) or other code under its name
// (ErrFunctionsStale), and changes nothing. It reads the libraries with
// FUNCTION LIST.
func CheckFunctions(ctx context.Context, c FunctionsCmdable) error {
	return eachPrimary(ctx, c, func(ctx context.Context, node FunctionsCmdable) error {
		if err := conflicts(ctx, node); err != nil {
			return err
		}
		code, found, err := libraryCode(ctx, node)
		switch {
		case err != nil:
			return err
		case !found:
			return ErrFunctionsMissing
		case !sameCode(code, functionsCode):
			return ErrFunctionsStale
		}
		return nil
	})
}

// functionCaller is a client or a pipeline.
type functionCaller interface {
	FCall(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
	FCallRO(ctx context.Context, function string, keys []string, args ...interface{}) *redis.Cmd
}

func fcall(ctx context.Context, c functionCaller, cl *call) *redis.Cmd {
	if cl.s.readOnly {
		return c.FCallRO(ctx, functionOf[cl.s], cl.keys, cl.args...)
	}
	return c.FCall(ctx, functionOf[cl.s], cl.keys, cl.args...)
}

// client is the client f sends through, for isPipeline.
func (f *FunctionsClient) client() redis.Scripter { return f.c }

// ownership is what a FunctionsClient knows of its primaries, by address
// ("" for a client's one server, "*" for every primary at once).
type ownership struct {
	nodes sync.Map // string -> *nodeCheck
}

// nodeCheck is one primary's last check.
type nodeCheck struct {
	until atomic.Int64 // UnixNano until which its functions are this library's
	mu    sync.Mutex
	err   error         // the last check's failure, until retry
	retry time.Time     // no check before
	done  chan struct{} // closed when the check under way ends; nil when none is
}

// primary returns the address of the primary that serves key and a client
// of it, or "*" and nil where every primary is checked: a *redis.Ring's
// shards (go-redis cannot say which one holds a key) and a call without
// keys on a cluster.
func (f *FunctionsClient) primary(ctx context.Context, key string) (string, FunctionsCmdable, error) {
	switch c := f.c.(type) {
	case interface {
		PrimaryFor(ctx context.Context, key string) (string, FunctionsCmdable, error)
	}:
		return c.PrimaryFor(ctx, key) // a layer of Wrap's
	case interface {
		MasterForKey(ctx context.Context, key string) (*redis.Client, error)
	}:
		if key == "" {
			return "*", nil, nil
		}
		m, err := c.MasterForKey(ctx, key)
		if err != nil {
			return "", nil, err
		}
		return m.Options().Addr, m, nil
	case interface {
		ForEachShard(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
	}:
		return "*", nil, nil
	}
	return "", f.c, nil
}

func (o *ownership) node(addr string) *nodeCheck {
	if n, ok := o.nodes.Load(addr); ok {
		return n.(*nodeCheck)
	}
	n, _ := o.nodes.LoadOrStore(addr, &nodeCheck{})
	return n.(*nodeCheck)
}

// owned makes sure, at most once per FunctionsRecheck, that the functions
// of these names on key's primary are this library's, loading it where it
// is missing. Calls between two checks cost a look at the slot map (on a
// cluster), a map lookup and a clock read.
func (f *FunctionsClient) owned(ctx context.Context, key string) error {
	addr, node, err := f.primary(ctx, key)
	if err != nil {
		return err
	}
	n := f.own.node(addr)
	for {
		now := time.Now()
		if now.UnixNano() < n.until.Load() {
			return nil
		}
		n.mu.Lock()
		switch {
		case now.UnixNano() < n.until.Load():
			n.mu.Unlock()
			return nil // another call checked meanwhile
		case n.err != nil && (now.Before(n.retry) || n.done != nil):
			err := n.err // failed, and not due again (or checked by another call)
			n.mu.Unlock()
			return err
		case n.done != nil: // another call checks: wait for it
			done := n.done
			n.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		done := make(chan struct{})
		n.done = done
		n.mu.Unlock()
		res := make(chan error, 1)
		go func() { res <- f.check(context.WithoutCancel(ctx), n, node, done) }()
		select {
		case err := <-res:
			return err
		case <-ctx.Done():
			return ctx.Err() // the check goes on for the others
		}
	}
}

// check runs one check of n's primary (node, or every primary when nil),
// records its outcome and ends n's check under way (done).
func (f *FunctionsClient) check(ctx context.Context, n *nodeCheck, node FunctionsCmdable, done chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	var err error
	if node != nil {
		err = ownOrLoad(ctx, node)
	} else {
		err = eachPrimary(ctx, f.c, ownOrLoad)
	}
	n.mu.Lock()
	n.done = nil
	close(done)
	switch {
	case err == nil:
		n.err = nil
		n.until.Store(time.Now().Add(FunctionsRecheck).UnixNano())
	case errors.Is(err, ErrFunctionsConflict), errors.Is(err, ErrFunctionsStale):
		// Checked again by the next call: the fix (FUNCTION DELETE,
		// LoadFunctions) must take at once.
	default:
		n.err, n.retry = err, time.Now().Add(checkRetry)
	}
	n.mu.Unlock()
	if err != nil {
		if r, ok := f.c.(interface{ ReloadState(context.Context) }); ok {
			r.ReloadState(ctx) // a primary replaced: find its successor
		}
	}
	return err
}

// lost makes key's primary checked again: its function was not found.
func (f *FunctionsClient) lost(ctx context.Context, key string) {
	if addr, _, err := f.primary(ctx, key); err == nil {
		f.own.node(addr).until.Store(0)
	}
}

// ownOrLoad checks one node: the library there holds every function of
// this one (so no other library can: names are unique per server), or it
// is loaded, which checks for other libraries first.
func ownOrLoad(ctx context.Context, node FunctionsCmdable) error {
	libs, err := node.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: FunctionsLibrary}).Result()
	if err != nil {
		return err
	}
	for _, l := range libs {
		if l.Name == FunctionsLibrary && holdsAll(l) {
			return nil
		}
	}
	return syncLibrary(ctx, node, false)
}

// holdsAll reports whether l registers every function of this library.
func holdsAll(l redis.Library) bool {
	for _, fn := range functionOf {
		found := false
		for _, g := range l.Functions {
			found = found || strings.EqualFold(g.Name, fn)
		}
		if !found {
			return false
		}
	}
	return true
}

// conflicts returns a *FunctionsConflictError for each function of this
// library that another library on node holds, joined, or nil.
func conflicts(ctx context.Context, node FunctionsCmdable) error {
	libs, err := node.FunctionList(ctx, redis.FunctionListQuery{}).Result()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range libs {
		if l.Name == FunctionsLibrary {
			continue
		}
		for _, g := range l.Functions {
			for _, fn := range functionOf {
				if strings.EqualFold(g.Name, fn) {
					errs = append(errs, &FunctionsConflictError{Function: fn, Library: l.Name, Holds: g.Name})
				}
			}
		}
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// firstKey is the key a call is routed by, "" for none.
func firstKey(cl *call) string {
	if len(cl.keys) == 0 {
		return ""
	}
	return cl.keys[0]
}

// runCall sends one call, and again once the library is loaded when the
// server did not hold its function.
func (f *FunctionsClient) runCall(ctx context.Context, cl *call) *redis.Cmd {
	key := firstKey(cl)
	if err := f.owned(ctx, key); err != nil {
		return failedCmd(ctx, err)
	}
	cmd := fcall(ctx, f.c, cl)
	if !functionNotFound(cmd.Err()) {
		return cmd
	}
	f.lost(ctx, key) // the library went away since the check: check, and load it
	if err := f.owned(ctx, key); err != nil {
		return failedCmd(ctx, err)
	}
	return fcall(ctx, f.c, cl)
}

// execCalls is Batch.Exec through the library: one pipeline of the calls
// whose primary holds it, then the calls whose function was missing once
// more, after loading the library.
func (f *FunctionsClient) execCalls(ctx context.Context, calls []*call) error {
	cmds := make([]*redis.Cmd, len(calls))
	send := func(idx []int) {
		pipe := f.c.Pipeline()
		for _, i := range idx {
			if err := f.owned(ctx, firstKey(calls[i])); err != nil {
				cmds[i] = failedCmd(ctx, err)
			} else {
				cmds[i] = fcall(ctx, pipe, calls[i])
			}
		}
		// Errors are per command; they are read from cmds below, except
		// when go-redis could not send the pipeline at all (see
		// Batch.Exec).
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); err != nil {
				unsent(cmds, err)
			}
		}
	}
	var all []int
	for i, cl := range calls {
		if cl.err == nil {
			all = append(all, i)
		}
	}
	send(all)
	var missing []int
	for i, cmd := range cmds {
		if cmd != nil && functionNotFound(cmd.Err()) {
			f.lost(ctx, firstKey(calls[i]))
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		send(missing)
	}
	return finishAll(calls, cmds)
}

// syncLibrary puts the library on one node, unless another library holds
// one of its functions (a *FunctionsConflictError). With replace, other
// code under its name is replaced; without, FUNCTION LOAD is tried first
// (the library is usually just missing) and other code is
// ErrFunctionsStale.
func syncLibrary(ctx context.Context, node FunctionsCmdable, replace bool) error {
	if err := conflicts(ctx, node); err != nil {
		return err
	}
	if !replace {
		err := node.FunctionLoad(ctx, functionsCode).Err()
		if functionExists(err) {
			// Another library registered one of the names since the look.
			if cerr := conflicts(ctx, node); cerr != nil {
				return cerr
			}
		}
		if err == nil || !libraryExists(err) {
			return err
		}
		// Someone loaded it meanwhile, or it is another version.
	}
	code, found, err := libraryCode(ctx, node)
	switch {
	case err != nil:
		return err
	case found && sameCode(code, functionsCode):
		return nil
	case found && !replace:
		return ErrFunctionsStale
	}
	err = node.FunctionLoadReplace(ctx, functionsCode).Err()
	if functionExists(err) {
		if cerr := conflicts(ctx, node); cerr != nil {
			return cerr
		}
	}
	return err
}

// sameCode compares library code up to trailing line ends: a shell's
// $(cat file), as in redis-cli FUNCTION LOAD "$(cat NAME.functions.lua)",
// drops the file's last newline, and the library is the same without it.
func sameCode(a, b string) bool {
	return strings.TrimRight(a, "\r\n") == strings.TrimRight(b, "\r\n")
}

// libraryCode reads the library's code from one node. FUNCTION LIST takes a
// pattern and matches it without regard to case, so the name is compared
// here.
func libraryCode(ctx context.Context, node FunctionsCmdable) (code string, found bool, err error) {
	libs, err := node.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: FunctionsLibrary, WithCode: true}).Result()
	if err != nil {
		return "", false, err
	}
	for _, l := range libs {
		if l.Name == FunctionsLibrary {
			return l.Code, true, nil
		}
	}
	return "", false, nil
}

// eachPrimary runs fn on every node that takes writes: the masters of a
// *redis.ClusterClient, the shards of a *redis.Ring, or c itself. Errors
// name their node.
func eachPrimary(ctx context.Context, c FunctionsCmdable, fn func(ctx context.Context, node FunctionsCmdable) error) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	each := func(ctx context.Context, node *redis.Client) error {
		if err := fn(ctx, node); err != nil {
			mu.Lock()
			errs = append(errs, fmt.Errorf("%s: %w", node.Options().Addr, err))
			mu.Unlock()
		}
		return nil
	}
	var err error
	switch c := c.(type) {
	case interface {
		ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
	}:
		err = c.ForEachMaster(ctx, each)
	case interface {
		ForEachShard(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error
	}:
		err = c.ForEachShard(ctx, each)
	default:
		return fn(ctx, c)
	}
	if err != nil {
		return err
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return errors.Join(errs...)
}

// functionNotFound reports FCALL's answer for a function the server does
// not hold; the call did not run.
func functionNotFound(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.TrimPrefix(rerr.Error(), "ERR ") == "Function not found"
}

// libraryExists reports FUNCTION LOAD's answer for a library name that is
// taken.
func libraryExists(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.Contains(rerr.Error(), "Library '"+FunctionsLibrary+"' already exists")
}

// functionExists reports FUNCTION LOAD's answer for a function name that
// another library holds.
func functionExists(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(strings.TrimPrefix(rerr.Error(), "ERR "), "Function ") && strings.HasSuffix(rerr.Error(), " already exists")
}

func failedCmd(ctx context.Context, err error) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(err)
	return cmd
}
