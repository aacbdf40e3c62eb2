// Package storagetest gives tests a real PostgreSQL server: the one named by
// TEST_DATABASE_URL or DATABASE_URL, or else a throwaway cluster started once
// per test process from the machine's PostgreSQL binaries. PostgreSQL tests
// never skip, so a missing server is a test failure, not a silent pass.
// Open opens a migrated database of either dialect for a test.
//
// A package that uses it must call Main from its TestMain, so that the
// throwaway cluster is stopped and its directory removed:
//
//	func TestMain(m *testing.M) { storagetest.Main(m) }
package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	mainCalled atomic.Bool

	// clusterOnce guards running, clusterURL and clusterErr: the first test
	// that needs a server starts it, and every later one reuses the result,
	// including a failure, so a broken machine fails fast instead of
	// starting a cluster per test.
	clusterOnce sync.Once
	running     *cluster
	clusterURL  string
	clusterErr  error
)

// Main runs the tests of a package and then stops the throwaway cluster, if
// one was started, and removes its directory. Call it from TestMain; it does
// not return.
func Main(m *testing.M) {
	mainCalled.Store(true)
	code := m.Run()
	// Running Do here orders the read of running after its write, and makes
	// any straggling PostgresURL call fail instead of starting a new cluster
	// that nobody would stop.
	clusterOnce.Do(func() { clusterErr = errors.New("tests have finished") })
	if running != nil {
		if err := running.stop(); err != nil {
			slog.Error("Stop throwaway PostgreSQL failed", "dir", running.dir, "error", err)
		}
	}
	os.Exit(code)
}

// PostgresURL returns the DSN of a running PostgreSQL server, connecting as a
// superuser. It prefers TEST_DATABASE_URL, then DATABASE_URL, and otherwise
// starts a throwaway cluster shared by the whole test process. Tests that
// write should use NewDatabase instead, so they can run in parallel.
func PostgresURL(tb testing.TB) string {
	tb.Helper()
	// Checked even when a URL is set, so that a package missing TestMain
	// fails on every machine, not only on those without a database.
	if !mainCalled.Load() {
		tb.Fatal("storagetest: call storagetest.Main(m) from TestMain, so the throwaway cluster is stopped")
	}
	for _, env := range []string{"TEST_DATABASE_URL", "DATABASE_URL"} {
		if dsn := os.Getenv(env); dsn != "" {
			return dsn
		}
	}
	clusterOnce.Do(func() {
		running, clusterErr = startCluster()
		if clusterErr == nil {
			clusterURL = running.url
			tb.Logf("storagetest: started throwaway PostgreSQL at %s in %s", running.url, running.dir)
		}
	})
	if clusterErr != nil {
		tb.Fatalf("storagetest: start throwaway PostgreSQL: %v", clusterErr)
	}
	return clusterURL
}

// NewDatabase creates an empty database on the server of PostgresURL and
// returns its DSN. The database is dropped, with its connections closed, when
// tb and its subtests finish.
func NewDatabase(tb testing.TB) string {
	tb.Helper()
	return newDatabaseOn(tb, PostgresURL(tb))
}

func newDatabaseOn(tb testing.TB, admin string) string {
	tb.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	name := "tg_" + hex.EncodeToString(b)
	dsn, err := withDatabase(admin, name)
	if err != nil {
		tb.Fatalf("storagetest: %v", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := execAdmin(tb.Context(), admin, "CREATE DATABASE "+ident); err != nil {
		tb.Fatalf("storagetest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		// tb.Context is already cancelled when cleanups run.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// FORCE closes connections a test forgot, such as an unclosed pool.
		if err := execAdmin(ctx, admin, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			tb.Errorf("storagetest: drop database %s: %v", name, err)
		}
	})
	return dsn
}

// withDatabase returns dsn with its database replaced by name. It accepts
// both forms that pgx does: URLs and keyword/value strings.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", fmt.Errorf("parse database URL: %w", err)
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	// In keyword/value strings a later keyword overrides an earlier one.
	return dsn + " dbname=" + name, nil
}

func execAdmin(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	return err
}

// cluster is a throwaway PostgreSQL server owned by this test process.
type cluster struct {
	dir     string // holds data/, the Unix socket and postgres.log
	bin     string
	cred    *syscall.Credential
	port    int // kept across restarts, so that clients reconnect to the same URL
	url     string
	cmd     *exec.Cmd
	done    chan struct{} // closed when cmd has exited
	waitErr error         // set before done is closed
}

func startCluster() (_ *cluster, err error) {
	bin, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tollgate-pg-") // mode 0700
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir, bin: bin, cred: cred, port: port}
	defer func() {
		if err != nil {
			c.stop()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, err
		}
	}
	initdb := c.command(cred, filepath.Join(bin, "initdb"),
		"-D", filepath.Join(dir, "data"), "-A", "trust", "-U", "postgres",
		"--no-sync", "-E", "UTF8",
		// The C locale works with any encoding, whatever LANG the machine has.
		"--no-locale")
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	if err := c.start(); err != nil {
		return nil, err
	}
	return c, nil
}

// start runs postgres directly rather than through pg_ctl, so that it is our
// child and Pdeathsig can kill it if the test process dies.
func (c *cluster) start() error {
	logPath := filepath.Join(c.dir, "postgres.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child keeps its own descriptor
	args := append([]string{"-D", filepath.Join(c.dir, "data"), "-k", c.dir, "-p", strconv.Itoa(c.port)},
		serverSettings(os.Getenv)...)
	cmd := c.command(c.cred, filepath.Join(c.bin, "postgres"), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.cmd, c.done = cmd, make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.done)
	}()
	c.url = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	if err := c.waitReady(30 * time.Second); err != nil {
		log, _ := os.ReadFile(logPath)
		return fmt.Errorf("wait for postgres: %w\nserver log:\n%s", err, log)
	}
	return nil
}

// serverSettings returns the -c flags the throwaway server starts with.
// When TOLLGATE_BENCH_PGSTATS is set, pg_stat_statements is loaded and
// tracks statements run inside functions and triggers too, and the time
// spent planning them, so that the bench can say what each statement of a
// cycle costs and what its planning does; it must be loaded at
// start, which is why the setting lives here and not in the bench.
func serverSettings(getenv func(string) string) []string {
	flags := []string{
		"-c", "listen_addresses=127.0.0.1",
		// Durability is pointless for a cluster deleted at exit.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		// Parallel tests each hold a database and a pool.
		"-c", "max_connections=300", "-c", "shared_buffers=128MB",
	}
	if getenv("TOLLGATE_BENCH_PGSTATS") != "" {
		flags = append(flags, "-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all",
			"-c", "pg_stat_statements.track_planning=on")
	}
	return flags
}

// command runs as the postgres user when we are root, because initdb and
// postgres refuse to run as root.
func (c *cluster) command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir // the postgres user may not be allowed into our working directory
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: cred,
		// Linux only. The signal fires when the thread that forked exits;
		// the Go runtime keeps its threads unless a goroutine exits while
		// locked to one, which nothing here does.
		Pdeathsig: syscall.SIGKILL,
	}
	return cmd
}

func (c *cluster) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for {
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.Connect(attempt, c.url)
		cancelAttempt()
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.done:
			return fmt.Errorf("postgres exited: %v", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not accepting connections after %s: %w", timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// halt shuts the server down fast (SIGINT), killing it after 10s.
func (c *cluster) halt() error {
	if c.cmd == nil {
		return nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("signal postgres: %w", err)
	}
	select {
	case <-c.done:
		return nil
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
		return errors.New("postgres did not stop within 10s; killed it")
	}
}

// stop shuts the server down and removes its directory. It uses SIGINT, a
// fast shutdown, rather than SIGTERM: SIGTERM waits for every client to
// disconnect, and a test that leaked a pool would hold it for the full 10s.
func (c *cluster) stop() error {
	return errors.Join(c.halt(), os.RemoveAll(c.dir))
}

// Cluster is a PostgreSQL server of one test's own, which the test may
// restart under its clients (the shared server of PostgresURL must stay
// up for the tests running beside it).
type Cluster struct{ c *cluster }

// NewCluster starts a throwaway PostgreSQL server for tb, stopped and
// removed when tb finishes.
func NewCluster(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := startCluster()
	if err != nil {
		tb.Fatalf("storagetest: start a PostgreSQL server: %v", err)
	}
	tb.Cleanup(func() {
		if err := c.stop(); err != nil {
			tb.Errorf("storagetest: stop the PostgreSQL server: %v", err)
		}
	})
	return &Cluster{c: c}
}

// NewDatabase creates a database of its own on the server, as the
// package's NewDatabase does on the shared one.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	return newDatabaseOn(tb, c.c.url)
}

// Restart stops the server (a fast shutdown: every connection is cut) and
// starts it again on the same port and data.
func (c *Cluster) Restart() error {
	if err := c.c.halt(); err != nil {
		return err
	}
	return c.c.start()
}

// findBinDir returns the directory holding initdb and postgres: the one of
// the initdb on PATH, or else the newest /usr/lib/postgresql/*/bin, which is
// where Debian installs them without putting them on PATH.
func findBinDir() (string, error) {
	var dirs []string
	if p, err := exec.LookPath("initdb"); err == nil {
		// Follow symlinks so that postgres comes from the same version.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(debian, func(a, b string) int {
		return -slices.Compare(pgVersion(a), pgVersion(b))
	})
	dirs = append(dirs, debian...)
	for _, dir := range dirs {
		if isExecutable(filepath.Join(dir, "initdb")) && isExecutable(filepath.Join(dir, "postgres")) {
			return dir, nil
		}
	}
	return "", errors.New("no initdb and postgres on PATH or under /usr/lib/postgresql/*/bin; " +
		"install the PostgreSQL server (apt-get install postgresql) or set TEST_DATABASE_URL")
}

// pgVersion parses the version in /usr/lib/postgresql/<version>/bin, so that
// 10 sorts after 9.6.
func pgVersion(binDir string) []int {
	var v []int
	for _, part := range strings.Split(filepath.Base(filepath.Dir(binDir)), ".") {
		n, _ := strconv.Atoi(part)
		v = append(v, n)
	}
	return v
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// serverCredential returns the postgres system user when we are root and nil
// otherwise, meaning the current user.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, so PostgreSQL must run as the postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse uid of postgres: %w", err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("parse gid of postgres: %w", err)
	}
	// Groups is empty, so the child drops root's supplementary groups.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
