package placement

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Rekey is a queued task's new preference list: the ring changed while the
// task waited (a node joined or left), and its split's placement key now
// maps to other nodes. The placer knows nodes, not keys, so the caller
// computes the list on the new ring (see Placer.Rekey).
type Rekey struct {
	Job, ID string
	// Prefer is the new preference list, owner first, as Task.Prefer.
	Prefer []string
}

// Rekey gives queued tasks the preference lists of a new ring, at time
// now. Without it a task queued before a ring change would keep waiting
// for the old owner of its block, and count as DATA_LOCAL on a node that
// no longer caches it. Call it after SetNodes (or UpsertNode/RemoveNode)
// has applied the membership of that ring, then Advance: a task whose new
// preferred node has a free slot is placed there.
//
// The wait is not restarted: the task keeps its first-seen time and its
// ladder is worked out from it as Submit would with the new list, except
// that when none of the new preferred nodes can take tasks the data-local
// wait ends now (as when the last preferred node dies). So a task whose
// data-local wait had ended only because its old preferred nodes all died
// or left waits again, until its original deadline, for the node that owns
// its block now; the owner's rack is that of the new owner.
//
// Updates for tasks that are not queued (unknown, running, or placed but
// not yet returned by Advance: those keep the ring they were placed with)
// are ignored, as are lists equal to the task's; when a task is listed
// twice the last update wins (the earlier ones are not applied, and the
// last is compared with the task's list). Re-keyed tasks keep their order among the
// tasks waiting for a node or a rack: oldest (first submitted) first. It
// returns how many tasks changed list. Cost: O(k log k) for the k tasks
// that change, plus one pass over each waiting list they join.
// Errors: ErrInvalidTask (an empty node id, or more than MaxPrefer; then
// nothing changes).
func (p *Placer) Rekey(updates []Rekey, now time.Time) (int, error) {
	for i := range updates {
		u := &updates[i]
		if len(u.Prefer) > MaxPrefer {
			return 0, fmt.Errorf("%w: rekey of job %q task %q: %d preferred nodes, at most %d", ErrInvalidTask, u.Job, u.ID, len(u.Prefer), MaxPrefer)
		}
		if slices.Contains(u.Prefer, "") {
			return 0, fmt.Errorf("%w: rekey of job %q task %q: empty node id in preference list", ErrInvalidTask, u.Job, u.ID)
		}
	}
	p.clock(now)
	var moved, seen []*task // seen: the tasks updated, marked (rekeyed) until the end
	defer func() {
		for _, t := range seen {
			t.rekeyed = false
		}
	}()
	// Backwards, so that the last update of a task listed twice wins.
	for i := len(updates) - 1; i >= 0; i-- {
		t := p.queuedTask(updates[i].Job, updates[i].ID)
		if t == nil || t.rekeyed {
			continue
		}
		t.rekeyed = true
		seen = append(seen, t)
		var buf [MaxPrefer]*node
		prefer := buf[:0]
		for _, id := range updates[i].Prefer {
			if n := p.internNode(id); !slices.Contains(prefer, n) {
				prefer = append(prefer, n)
			}
		}
		if slices.Equal(prefer, t.prefer) {
			continue
		}
		p.unlinkForRekey(t, prefer)
		moved = append(moved, t)
	}
	if len(moved) == 0 {
		return 0, nil
	}
	// Link the moved tasks into their new waiting lists, in submission
	// order, each list in one merging pass.
	slices.SortFunc(moved, func(a, b *task) int { return cmp.Compare(a.seq, b.seq) })
	into := make(map[*list][]*link)
	for _, t := range moved {
		t.allocLinks()
		for i, n := range t.prefer {
			into[&n.waiters] = append(into[&n.waiters], &t.links[i])
		}
		for _, n := range t.prefer {
			// A new preferred node with a free slot serves its waiting
			// list (merged by submission order) first in catch-up, so
			// the oldest re-keyed task gets the slot, whatever order the
			// tasks joined the catch-up's list in.
			if n.takes() && !n.dirty {
				n.dirty = true
				p.dirty = append(p.dirty, n)
			}
		}
		if t.level >= levelRack && t.ownerRack != nil && !t.rackLink.linked() {
			into[&t.ownerRack.waiters] = append(into[&t.ownerRack.waiters], &t.rackLink)
		}
		if t.level == levelOther && !t.anyLink.linked() {
			into[&p.anyQ] = append(into[&p.anyQ], &t.anyLink)
		}
		if at, ok := t.nextStep(); ok {
			t.nextAt = at
			p.steps.push(t)
		}
	}
	for q, links := range into {
		mergeBySeq(q, links)
	}
	// Catch-up looks for a slot for each of them (a new preferred node may
	// have one free now).
	p.leveled = append(p.leveled, moved...)
	return len(moved), nil
}

// queuedTask returns the queued task (job, id), nil if there is none.
func (p *Placer) queuedTask(job, id string) *task {
	j := p.findJob(job)
	if j == nil {
		return nil
	}
	t := p.tasks.find(p.tasks.hashOf(j, id), j, id)
	if t == nil || t.state != stateQueued {
		return nil
	}
	return t
}

// unlinkForRekey takes t, queued, out of the indexes its preference list
// and ladder decide, gives it prefer and works out its ladder again
// (relevel). It stays in its rack queue or the any queue when its new
// level keeps it there, so it keeps its place; Rekey links it where it
// newly belongs.
func (p *Placer) unlinkForRekey(t *task, prefer []*node) {
	for i, n := range t.prefer {
		if i < len(t.links) && t.links[i].linked() {
			n.waiters.remove(&t.links[i])
		}
	}
	t.links = nil
	p.steps.remove(t)
	oldRack := t.ownerRack
	t.prefer = append(t.preferBuf[:0], prefer...)
	t.ownerRack = nil
	if len(t.prefer) > 0 {
		t.ownerRack = t.prefer[0].rack
	}
	p.relevel(t)
	if t.rackLink.linked() && (oldRack != t.ownerRack || t.level < levelRack) {
		oldRack.waiters.remove(&t.rackLink)
	}
	if t.anyLink.linked() && t.level < levelOther {
		p.anyQ.remove(&t.anyLink)
	}
}

// relevel works out the ladder of t, queued, from its first-seen time and
// its (new) preference list, as newTask does, at the latest time seen:
// the data-local wait lasts Wait from first seen if a preferred node can
// take tasks, else it ends now at the latest (as hopeless ends it); the
// rack level lasts Wait if the owner's rack is known.
func (p *Placer) relevel(t *task) {
	w := int64(max(t.wait, 0))
	usable := false
	for _, n := range t.prefer {
		usable = usable || n.usable()
	}
	if usable {
		t.rackAt = addNS(t.startNS, w)
	} else {
		t.rackAt = min(t.rackAt, p.nowNS)
	}
	t.anyAt = t.rackAt
	if t.ownerRack != nil {
		t.anyAt = addNS(t.rackAt, w)
	}
	p.setLevel(t)
}

// mergeBySeq links in (links of tasks in ascending seq order, none in q)
// into q, each before the first member submitted after it, in one pass
// over q.
func mergeBySeq(q *list, in []*link) {
	q.lazyInit()
	at := q.root.next
	for _, l := range in {
		for at != &q.root && at.t.seq < l.t.seq {
			at = at.next
		}
		q.insertAfter(at.prev, l)
	}
}
