package membership_test

import (
	"context"
	"fmt"
	"time"

	"github.com/locuscache/locus/pkg/membership"
)

// A cache node joins a cluster, a scheduler joins as an observer and reads
// the View: members, their state and slots, and the ring that names the
// owner of a block. Then the cache node drains.
func Example() {
	newMember := func(meta membership.NodeMeta) *membership.Membership {
		m, err := membership.New(membership.Config{
			Meta:     meta,
			BindAddr: "127.0.0.1:0", // a free port; production uses --gossip-addr
			Tuning:   membership.LoopbackTuning(),
		})
		if err != nil {
			panic(err)
		}
		return m
	}
	cache := newMember(membership.NodeMeta{
		ID:            "cache-1",
		Rack:          "r1",
		GRPCAddr:      "127.0.0.1:7070",
		HTTPAddr:      "127.0.0.1:7080",
		Slots:         8,
		CapacityBytes: 64 << 30,
		BlockSize:     128 << 20,
	})
	defer cache.Shutdown()

	sched := newMember(membership.NodeMeta{ID: "scheduler", Role: membership.RoleObserver})
	defer sched.Shutdown()
	if _, err := sched.Join([]string{cache.GossipAddr()}); err != nil {
		fmt.Println("join:", err)
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := sched.WaitFor(ctx, func(v *membership.View) bool { return len(v.Members) == 2 })
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range v.Members {
		fmt.Printf("%s role=%s state=%s slots=%d placeable=%v\n", m.ID, m.Role, m.State, m.Slots, m.Placeable())
	}
	fmt.Println("block size:", membership.FormatBytes(v.BlockSize()))
	fmt.Println("owner of block 0:", v.Ring.Owner("s3://bucket/data.parquet#0").ID)

	// The cache node drains: still the owner (its cache serves peer reads),
	// no longer placeable, and the ring epoch does not change.
	if err := cache.SetState(ctx, membership.StateDraining); err != nil {
		fmt.Println(err)
		return
	}
	v2, err := sched.WaitFor(ctx, func(v *membership.View) bool {
		m, _ := v.Member("cache-1")
		return m.State == membership.StateDraining
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	m, _ := v2.Member("cache-1")
	fmt.Println("after drain: placeable:", m.Placeable(), "same epoch:", v2.Epoch == v.Epoch)
	// Output:
	// cache-1 role=cache state=alive slots=8 placeable=true
	// scheduler role=observer state=alive slots=0 placeable=false
	// block size: 128 MiB
	// owner of block 0: cache-1
	// after drain: placeable: false same epoch: true
}
