package node

import (
	"slices"
	"testing"

	"github.com/locuscache/locus/pkg/membership"
)

func TestRingDiff(t *testing.T) {
	view := func(ids ...string) *membership.View {
		v := &membership.View{}
		for _, id := range ids { // sorted, as Views keep them
			v.Members = append(v.Members, membership.Member{NodeMeta: membership.NodeMeta{ID: id}})
		}
		return v
	}
	tests := []struct {
		a, b         *membership.View
		joined, left []string
	}{
		{view("n1", "n2"), view("n1", "n2", "n3"), []string{"n3"}, nil},
		{view("n1", "n2", "n3"), view("n1", "n3"), nil, []string{"n2"}},
		{view("n1"), view("n2"), []string{"n2"}, []string{"n1"}},
		{view(), view(), nil, nil},
	}
	for _, tc := range tests {
		joined, left := ringDiff(tc.a, tc.b)
		if !slices.Equal(joined, tc.joined) || !slices.Equal(left, tc.left) {
			t.Errorf("ringDiff: joined %v left %v, want %v and %v", joined, left, tc.joined, tc.left)
		}
	}
}
