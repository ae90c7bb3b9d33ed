package ring

import (
	"hash/crc32"
	"sort"
	"strconv"
)

// groupcacheMap is the baseline the benchmarks compare against: a ring in
// the style of github.com/golang/groupcache/consistenthash (its classic
// version), written here from its description. Each of `replicas` virtual
// nodes of a node is hashed from strconv.Itoa(i)+node with CRC-32 (IEEE); a
// lookup hashes the key and binary-searches the sorted virtual nodes. Hash
// collisions between virtual nodes silently overwrite each other in the map,
// as in groupcache.
type groupcacheMap struct {
	hash     func([]byte) uint32
	replicas int
	keys     []int          // sorted virtual node hashes
	hashMap  map[int]string // virtual node hash -> node
}

func newGroupcacheMap(replicas int, nodes ...string) *groupcacheMap {
	m := &groupcacheMap{hash: crc32.ChecksumIEEE, replicas: replicas, hashMap: make(map[int]string)}
	for _, n := range nodes {
		for i := 0; i < replicas; i++ {
			h := int(m.hash([]byte(strconv.Itoa(i) + n)))
			m.keys = append(m.keys, h)
			m.hashMap[h] = n
		}
	}
	sort.Ints(m.keys)
	return m
}

// Get returns the node owning key ("" when empty).
func (m *groupcacheMap) Get(key string) string {
	if len(m.keys) == 0 {
		return ""
	}
	h := int(m.hash([]byte(key)))
	idx := sort.Search(len(m.keys), func(i int) bool { return m.keys[i] >= h })
	if idx == len(m.keys) {
		idx = 0
	}
	return m.hashMap[m.keys[idx]]
}
