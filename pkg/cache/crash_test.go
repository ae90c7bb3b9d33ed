package cache_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/locuscache/locus/pkg/cache"
	"github.com/locuscache/locus/pkg/cache/cachetest"
)

const (
	crashEnvDir   = "LOCUS_CACHE_CRASH_DIR"
	crashEnvRound = "LOCUS_CACHE_CRASH_ROUND"
	crashObjects  = 12
	crashPages    = 24 // per object; the cache holds 64 pages, so slots are reused
)

// generated serves any version of any object from cachetest.Fill, so the
// parent can check every byte without knowing what the child cached.
var generated = cache.OriginFunc(func(_ context.Context, obj cache.Object, p []byte, off int64) (int, error) {
	cachetest.Fill(obj.URI, obj.Version, off, p)
	return len(p), nil
})

func crashObject(i, round int) cache.Object {
	// Objects 0-3 change version every round: re-indexing must resolve
	// versions and drop stale ones.
	v := "v0"
	if i < 4 {
		v = "v" + strconv.Itoa(round)
	}
	return cache.Object{URI: fmt.Sprintf("s3://crash/obj-%02d", i), Version: v, Size: crashPages*testPage - int64(i)}
}

func crashConfig(dir string) cache.Config {
	return cache.Config{Origin: generated, Dir: dir, PageSize: testPage, Policy: "lru",
		CapacityBytes: 64*(testPage+512) + 2*4096, MaxFetchBytes: 4 * testPage}
}

// TestCrashChild is the child process of TestCrashRecovery: it fills the
// cache with random reads until it is killed. It does nothing in a normal
// test run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("child of TestCrashRecovery only")
	}
	round, _ := strconv.Atoi(os.Getenv(crashEnvRound))
	rng := rand.New(rand.NewPCG(uint64(round), 7))
	// The hook runs on the fill goroutines, concurrently: its own
	// generator, under a lock (sharing rng was a data race).
	var hookMu sync.Mutex
	hookRng := rand.New(rand.NewPCG(uint64(round), 8))
	cfg := cache.WithFaults(crashConfig(dir), cache.Faults{AfterData: func() {
		// Widen the window between a page's data and its header, where a
		// kill leaves a torn page.
		hookMu.Lock()
		pause := time.Duration(0)
		if hookRng.IntN(4) == 0 {
			pause = time.Duration(hookRng.IntN(300)) * time.Microsecond
		}
		hookMu.Unlock()
		time.Sleep(pause)
	}})
	c, err := cache.New(cfg)
	if err != nil {
		fmt.Println("ERROR", err)
		os.Exit(2)
	}
	buf := make([]byte, 6*testPage)
	for n := 0; ; n++ {
		obj := crashObject(rng.IntN(crashObjects), round)
		off := rng.Int64N(obj.Size)
		ln := 1 + rng.Int64N(int64(len(buf)))
		res, err := c.Get(context.Background(), obj, off, ln, buf)
		if err != nil {
			fmt.Println("ERROR", err)
			os.Exit(2)
		}
		want := cachetest.Generated(obj.URI, obj.Version, off, int(res.Bytes))
		if string(buf[:res.Bytes]) != string(want) {
			fmt.Println("ERROR wrong bytes in child", obj.URI, off)
			os.Exit(2)
		}
		fmt.Println("READ", n)
	}
}

// A child process fills a cache and is SIGKILLed mid-write, several times
// over the same directory. Every restart re-indexes what survived; every
// byte served is checked against its source, and no page may fail its
// checksum: a killed process never leaves a page that looks complete.
func TestCrashRecovery(t *testing.T) {
	if os.Getenv(crashEnvDir) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	rounds := 10
	if testing.Short() {
		rounds = 4
	}
	rng := rand.New(rand.NewPCG(42, 42))
	for round := 0; round < rounds; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnvDir+"="+dir, crashEnvRound+"="+strconv.Itoa(round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 50 + rng.IntN(400)
		sc := bufio.NewScanner(out)
		reads := 0
		for sc.Scan() {
			line := sc.Text()
			if len(line) > 5 && line[:5] == "ERROR" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child round %d: %s", round, line)
			}
			if len(line) > 4 && line[:4] == "READ" {
				reads++
				if reads == killAt {
					break
				}
			}
		}
		// Land the kill at a random point of the child's work, not right
		// after it printed a line.
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		go func() {
			for sc.Scan() {
			}
		}()
		err = cmd.Wait()
		if reads < killAt {
			t.Fatalf("child round %d ended after %d reads: %v", round, reads, err)
		}
		t.Logf("round %d: killed after %d reads", round, reads)
	}

	// Read every page the child could have cached through an origin that
	// always fails: a miss stores nothing, so no re-indexed page is evicted
	// before it is read, and every page served is a re-indexed one.
	cfg := crashConfig(dir)
	cfg.Origin = cache.OriginFunc(func(context.Context, cache.Object, []byte, int64) (int, error) {
		return 0, errors.New("origin down")
	})
	c, err := cache.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	reindexed := c.Stats().ReindexedPages
	if reindexed == 0 {
		t.Fatal("nothing survived the kills: the test proves nothing")
	}
	var hits int64
	page := make([]byte, testPage)
	for i := 0; i < crashObjects; i++ {
		for round := 0; round < rounds; round++ {
			obj := crashObject(i, round)
			if i >= 4 && round > 0 {
				break
			}
			for p := int64(0); p*testPage < obj.Size; p++ {
				res, err := c.Get(context.Background(), obj, p*testPage, testPage, page)
				if err != nil {
					continue // not cached
				}
				checkBytes(t, obj, p*testPage, page[:res.Bytes])
				hits++
			}
		}
	}
	st := c.Stats()
	t.Logf("re-indexed %d pages; %d served and checked; %d corrupt", reindexed, hits, st.CorruptPages)
	if st.CorruptPages != 0 {
		t.Fatalf("%d pages failed their checksum after process kills: a torn page was indexed", st.CorruptPages)
	}
	if hits != reindexed {
		t.Fatalf("%d pages re-indexed but %d served", reindexed, hits)
	}
	checkInv(t, c)
	c.Close()

	// And the cache goes on working normally over the same directory.
	c, err = cache.New(crashConfig(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < crashObjects; i++ {
		obj := crashObject(i, rounds-1)
		got, _ := mustGet(t, c, obj, 0, obj.Size)
		checkBytes(t, obj, 0, got)
	}
	checkInv(t, c)
}
