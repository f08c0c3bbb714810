package rls

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/redlimit/redlimit/internal/child"
	"github.com/redlimit/redlimit/internal/redisserver"
)

// referenceVersion pins envoyproxy/ratelimit, the reference this server
// is tested against: its sources (test/config, README.md) and its
// service_cmd, built through the Go module proxy.
const (
	referenceModule  = "github.com/envoyproxy/ratelimit"
	referenceVersion = "v1.4.1-0.20260122083618-3fb702589d36"
)

// needReference fails the test where the reference is required (CI, or
// REDLIMIT_REQUIRE_REDIS=1), and skips it elsewhere, saying why.
func needReference(t testing.TB, err error) {
	t.Helper()
	if redisserver.Required() {
		t.Fatalf("the reference %s@%s is required here (CI or REDLIMIT_REQUIRE_REDIS=1): %v", referenceModule, referenceVersion, err)
	}
	t.Skipf("SKIPPED: the reference %s@%s is not available: %v", referenceModule, referenceVersion, err)
}

var reference struct {
	once          sync.Once
	dir, bin, chk string // the sources, service_cmd, config_check_cmd
	err           error
}

// referenceDir is the reference's module source, from the module cache.
func referenceDir(t testing.TB) string {
	t.Helper()
	loadReference()
	if reference.dir == "" {
		needReference(t, reference.err)
	}
	return reference.dir
}

// referenceBinary is the reference's service_cmd, built once per machine
// (under the user cache directory, by version) with go install; a fresh
// build takes about two minutes.
func referenceBinary(t testing.TB) string {
	t.Helper()
	loadReference()
	if reference.bin == "" {
		needReference(t, reference.err)
	}
	return reference.bin
}

func loadReference() {
	reference.once.Do(func() {
		const goBin = "go" // go test puts GOROOT/bin first on PATH
		env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := exec.Command(goBin, "mod", "download", "-json", referenceModule+"@"+referenceVersion).Output()
		var mod struct{ Dir, Error string }
		if err == nil {
			err = json.Unmarshal(out, &mod)
		}
		if err != nil || mod.Dir == "" {
			reference.err = fmt.Errorf("go mod download: %v %s", err, mod.Error)
			return
		}
		reference.dir = mod.Dir
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		binDir := filepath.Join(cache, "redlimit-rls-reference", referenceVersion)
		bin, chk := filepath.Join(binDir, "service_cmd"), filepath.Join(binDir, "config_check_cmd")
		_, err1 := os.Stat(bin)
		_, err2 := os.Stat(chk)
		if err1 == nil && err2 == nil {
			reference.bin, reference.chk = bin, chk
			return
		}
		tmp, err := os.MkdirTemp(cache, "redlimit-rls-reference-build")
		if err != nil {
			reference.err = err
			return
		}
		defer os.RemoveAll(tmp)
		cmd := exec.Command(goBin, "install", referenceModule+"/src/service_cmd@"+referenceVersion, referenceModule+"/src/config_check_cmd@"+referenceVersion)
		cmd.Env = append(env, "GOBIN="+tmp)
		if out, err := cmd.CombinedOutput(); err != nil {
			reference.err = fmt.Errorf("go install: %v\n%s", err, out)
			return
		}
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			reference.err = err
			return
		}
		for _, b := range []string{bin, chk} {
			if err := os.Rename(filepath.Join(tmp, filepath.Base(b)), b); err != nil {
				reference.err = err
				return
			}
		}
		reference.bin, reference.chk = bin, chk
	})
}

// referenceAccepts runs the reference's config_check_cmd on files (name
// to contents) and reports whether it loads them, with what it printed.
func referenceAccepts(t testing.TB, files map[string]string, merge bool) (bool, string) {
	t.Helper()
	loadReference()
	if reference.chk == "" {
		needReference(t, reference.err)
	}
	dir := t.TempDir()
	for name, yaml := range files {
		writeFile(t, filepath.Join(dir, name), yaml)
	}
	out, err := exec.Command(reference.chk, "-config_dir", dir, fmt.Sprintf("-merge_domain_configs=%t", merge)).CombinedOutput()
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatal(err)
		}
	}
	return err == nil && strings.Contains(string(out), "all rate limit configs ok"), string(out)
}

// A refServer is the reference running on the test's Redis.
type refServer struct {
	client rlpb.RateLimitServiceClient
	http   string
	log    *logBuffer
	cmd    *exec.Cmd
	root   string        // RUNTIME_ROOT
	exited chan struct{} // closed when the process has exited
}

// startReference runs the reference with the files in config on Redis at
// redisAddr, with env added to what it needs, and waits until it answers.
func startReference(t testing.TB, redisAddr string, config map[string]string, env map[string]string) *refServer {
	t.Helper()
	rs := launchReference(t, redisAddr, config, env)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, err := rs.healthcheck()
		if code == 200 {
			return rs
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reference did not become healthy in 20 s: %v\n%s", err, rs.log)
		}
	}
}

// healthcheck is the reference's /healthcheck status code.
func (rs *refServer) healthcheck() (int, error) {
	resp, err := http.Get("http://" + rs.http + "/healthcheck")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// launchReference starts the reference as startReference does, without
// waiting for it. RUNTIME_SUBDIRECTORY set to "-" in env is left unset.
func launchReference(t testing.TB, redisAddr string, config map[string]string, env map[string]string) *refServer {
	t.Helper()
	bin := referenceBinary(t)
	root := t.TempDir()
	dir := filepath.Join(root, "ratelimit", "config")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, yaml := range config {
		writeFile(t, filepath.Join(dir, name), yaml)
	}
	ports := freePorts(t, 3)
	cmd := child.Tie(exec.Command(bin))
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"),
		"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=" + redisAddr,
		"RUNTIME_ROOT=" + root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"USE_STATSD=false", "LOG_LEVEL=warn",
		"HOST=127.0.0.1", "GRPC_HOST=127.0.0.1", "DEBUG_HOST=127.0.0.1",
		"PORT=" + ports[0], "GRPC_PORT=" + ports[1], "DEBUG_PORT=" + ports[2],
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	if env["RUNTIME_SUBDIRECTORY"] == "-" {
		var kept []string
		for _, kv := range cmd.Env {
			if !strings.HasPrefix(kv, "RUNTIME_SUBDIRECTORY=") {
				kept = append(kept, kv)
			}
		}
		cmd.Env = kept
	}
	lb := &logBuffer{}
	cmd.Stdout, cmd.Stderr = lb, lb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	rs := &refServer{http: "127.0.0.1:" + ports[0], log: lb, cmd: cmd, root: root, exited: exited}
	conn, err := grpc.NewClient("127.0.0.1:"+ports[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	rs.client = rlpb.NewRateLimitServiceClient(conn)
	return rs
}

func (rs *refServer) call(t testing.TB, req *rlpb.RateLimitRequest) *rlpb.RateLimitResponse {
	t.Helper()
	resp, err := rs.client.ShouldRateLimit(context.Background(), req)
	if err != nil {
		t.Fatalf("the reference: ShouldRateLimit(%v): %v\n%s", req, err, rs.log)
	}
	return resp
}

// freePorts finds n free loopback ports.
func freePorts(t testing.TB, n int) []string {
	t.Helper()
	var ports []string
	var ls []net.Listener
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		_, p, _ := net.SplitHostPort(l.Addr().String())
		ports = append(ports, p)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}

// readReferenceFile reads a file of the reference's sources.
func readReferenceFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(referenceDir(t), filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// readmeExamples are the YAML blocks of the reference README's "####
// Example N" sections, by N.
func readmeExamples(t testing.TB) map[int][]string {
	t.Helper()
	readme := readReferenceFile(t, "README.md")
	ex := map[int][]string{}
	n := 0
	inYAML := false
	var block strings.Builder
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(line, "#### Example "):
			fmt.Sscanf(strings.TrimPrefix(line, "#### Example "), "%d", &n)
		case strings.HasPrefix(line, "## ") || strings.HasPrefix(line, "# "):
			if !inYAML {
				n = 0
			}
		case line == "```yaml" && n > 0:
			inYAML = true
			block.Reset()
		case line == "```" && inYAML:
			inYAML = false
			ex[n] = append(ex[n], block.String())
		case inYAML:
			block.WriteString(line + "\n")
		}
	}
	return ex
}
