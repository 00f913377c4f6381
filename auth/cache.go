package auth

import (
	"container/list"
	"net"
	"sync"
	"time"
)

// The bounds of a webhook cache: positive answers (a token's user, an
// allowed review) and negative ones (a token the apiserver does not know,
// a denied review) each have their own room, so a flood of bad tokens
// evicts only other bad tokens' answers, never a good one.
const (
	maxPositiveEntries = 4096
	maxNegativeEntries = 1024
)

// answerCache holds webhook answers for their TTLs, each kind in a
// least-recently-used list of its own size.
type answerCache[V any] struct {
	mu       sync.Mutex
	pos, neg lru[V]
}

func (c *answerCache[V]) get(key string, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.pos.get(key, now); ok {
		return v, true
	}
	return c.neg.get(key, now)
}

// put stores v as a positive or negative answer for ttl; ttl 0 stores
// nothing (no cache, as kubelet's flags mean).
func (c *answerCache[V]) put(key string, v V, positive bool, now time.Time, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if positive {
		c.neg.remove(key)
		c.pos.put(key, v, now.Add(ttl), maxPositiveEntries)
	} else {
		c.pos.remove(key)
		c.neg.put(key, v, now.Add(ttl), maxNegativeEntries)
	}
}

// len returns the entries held, positive and negative.
func (c *answerCache[V]) len() (int, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pos.l.Len(), c.neg.l.Len()
}

// lru is a least-recently-used map of expiring entries; the zero value
// is empty. Not safe for concurrent use.
type lru[V any] struct {
	l list.List // front: most recently used
	m map[string]*list.Element
}

type lruEntry[V any] struct {
	key     string
	v       V
	expires time.Time
}

func (c *lru[V]) get(key string, now time.Time) (V, bool) {
	var zero V
	el, ok := c.m[key]
	if !ok {
		return zero, false
	}
	e := el.Value.(*lruEntry[V])
	if !now.Before(e.expires) {
		c.l.Remove(el)
		delete(c.m, key)
		return zero, false
	}
	c.l.MoveToFront(el)
	return e.v, true
}

func (c *lru[V]) put(key string, v V, expires time.Time, max int) {
	if c.m == nil {
		c.m = map[string]*list.Element{}
	}
	if el, ok := c.m[key]; ok {
		e := el.Value.(*lruEntry[V])
		e.v, e.expires = v, expires
		c.l.MoveToFront(el)
		return
	}
	for c.l.Len() >= max {
		old := c.l.Back()
		c.l.Remove(old)
		delete(c.m, old.Value.(*lruEntry[V]).key)
	}
	c.m[key] = c.l.PushFront(&lruEntry[V]{key: key, v: v, expires: expires})
}

func (c *lru[V]) remove(key string) {
	if el, ok := c.m[key]; ok {
		c.l.Remove(el)
		delete(c.m, key)
	}
}

// The per-address limit on TokenReviews of tokens not in the cache: a
// client may have this many reviewed at once, and one more each
// reviewInterval. A client with a good token is answered from the cache
// after its first request; only one that sends new tokens all the time is
// slowed.
const (
	reviewBurst    = 20
	reviewInterval = 200 * time.Millisecond // 5 per second
	// maxLimitedAddresses bounds the addresses remembered: the least
	// recently seen is forgotten first (a full bucket, as a new one).
	maxLimitedAddresses = 4096
)

// reviewLimiter is a token bucket per client address (an IPv6 address by
// its /64, which one host commonly holds whole).
type reviewLimiter struct {
	mu      sync.Mutex
	buckets lru[*bucket]
}

type bucket struct {
	tokens float64
	last   time.Time
}

// allow takes one review from remote's bucket; false when it is empty,
// with how long until the next.
func (r *reviewLimiter) allow(remote string, now time.Time) (bool, time.Duration) {
	key := addressKey(remote)
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.buckets.get(key, now)
	if !ok {
		b = &bucket{tokens: reviewBurst, last: now}
	}
	// Entries never expire by time: only by use.
	r.buckets.put(key, b, now.Add(100*365*24*time.Hour), maxLimitedAddresses)
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(reviewBurst, b.tokens+float64(el)/float64(reviewInterval))
		b.last = now
	}
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(reviewInterval))
	}
	b.tokens--
	return true, 0
}

// addressKey is remote's host, an IPv6 one as its /64.
func addressKey(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return host
	}
	if ip4 := ip.To4(); ip4 != nil {
		return ip4.String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
