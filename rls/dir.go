package rls

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// readConfigDir reads the configuration files under dir, as the reference
// reads its runtime directory, but only files named *.yaml or *.yml, and
// nothing whose name starts with '.' (a Kubernetes ConfigMap's ..data
// links among them): a stray notes.txt is skipped and named, never
// parsed. Files are read in the order of their paths. It returns what it
// skipped, and an error when dir is missing or holds no file to read.
func readConfigDir(dir string) (files []sourceFile, skipped []string, err error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("the configuration directory: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("the configuration directory %s is not a directory", dir)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			skipped = append(skipped, path)
			return nil
		}
		data, err := os.ReadFile(path) // follows a symlink to its file
		if err != nil {
			return err
		}
		files = append(files, sourceFile{name: path, data: data})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, skipped, fmt.Errorf("the configuration directory %s holds no *.yaml or *.yml file", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, skipped, nil
}

// digest identifies a set of files' names and contents.
func digest(files []sourceFile) [32]byte {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%d:%s%d:", len(f.name), f.name, len(f.data))
		h.Write(f.data)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// A loader reads the configuration directory when it changes and hands
// each configuration that loads to apply; one that does not is logged,
// counted and dropped, and the one before keeps serving.
type loader struct {
	dir     string
	root    string // the highest directory watched (RUNTIME_ROOT's parent)
	merge   bool
	bind    func(*Rule) error
	apply   func(*Config)
	refused func(error) // a load that failed
	log     *slog.Logger
	last    [32]byte
	loaded  bool
}

// load reads and loads the directory once; unchanged files load nothing.
func (l *loader) load() error {
	files, skipped, err := readConfigDir(l.dir)
	if err != nil {
		l.refused(err)
		return err
	}
	d := digest(files)
	if l.loaded && bytes.Equal(d[:], l.last[:]) {
		return nil
	}
	c, err := buildConfig(files, l.merge, l.bind)
	if err != nil {
		l.refused(err)
		return err
	}
	l.last, l.loaded = d, true
	for _, w := range c.Warnings {
		l.log.Warn("configuration: " + w)
	}
	if len(skipped) > 0 {
		l.log.Warn("configuration: not *.yaml or *.yml, not read", "files", skipped)
	}
	l.log.Info("configuration loaded", "dir", l.dir, "files", c.Files, "domains", len(c.domains))
	l.apply(c)
	return nil
}

// watch reloads on every change under the watched directories until ctx
// ends: the configuration directory and each directory above it up to
// root, so that a directory created later, or a symlink swapped above it
// (RUNTIME_ROOT pointing at a new version), is seen. Changes that come
// together load once. Where file events are not available it polls every
// poll.
func (l *loader) watch(ctx context.Context, poll time.Duration) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		l.log.Warn("configuration: no file events, polling instead", "every", poll, "err", err)
		l.poll(ctx, poll)
		return
	}
	defer w.Close()
	l.addWatches(w)
	var settle <-chan time.Time
	tick := time.NewTicker(poll) // events can be missed (a directory replaced under a watch)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-w.Events:
			if !ok {
				return
			}
			settle = time.After(100 * time.Millisecond)
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			l.log.Warn("configuration: file events", "err", err)
		case <-settle:
			settle = nil
			_ = l.load()
			l.addWatches(w)
		case <-tick.C:
			_ = l.load()
			l.addWatches(w)
		}
	}
}

func (l *loader) poll(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = l.load()
		}
	}
}

// addWatches watches the configuration directory, its subdirectories and
// the directories above it up to root, as they are now.
func (l *loader) addWatches(w *fsnotify.Watcher) {
	for _, p := range w.WatchList() {
		_ = w.Remove(p)
	}
	for d := l.dir; ; d = filepath.Dir(d) {
		_ = w.Add(d) // a directory that does not exist yet is watched from above
		if d == l.root || d == filepath.Dir(d) {
			break
		}
	}
	_ = filepath.WalkDir(l.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && path != l.dir {
			if strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			_ = w.Add(path)
		}
		return nil
	})
	// A ConfigMap's files are links into ..data, which is swapped as a
	// whole: watch where they point.
	entries, _ := os.ReadDir(l.dir)
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			if target, err := filepath.EvalSymlinks(filepath.Join(l.dir, e.Name())); err == nil {
				_ = w.Add(filepath.Dir(target))
			}
		}
	}
}

var errNoConfig = errors.New("no rate limit configuration loaded")
