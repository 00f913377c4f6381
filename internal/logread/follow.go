package logread

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/podvisor/podvisor/internal/crilog"
)

// Watch tells Follow about the log's future.
type Watch struct {
	// Poll is how often Follow looks for more at the end of the log;
	// 200ms when zero.
	Poll time.Duration
	// Next returns the live file of the instance after the one whose live
	// file is live, once it exists. Nil: NextInstance.
	Next func(live string) (string, bool)
	// Ended reports that the log whose instance has live file live will
	// not grow any more (the pod is gone, or the container ended for
	// good). Nil: never.
	Ended func(live string) bool
	// Idle, if not nil, is called when Follow has emitted all there is and
	// is about to wait (to flush output).
	Idle func() error
}

// NextInstance returns "<n+1>.log" beside live "<n>.log" when it exists
// (as whatever: a symlink there is refused when it is opened).
func NextInstance(live string) (string, bool) {
	base := filepath.Base(live)
	var n int
	if _, err := fmt.Sscanf(base, "%d.log", &n); err != nil || fmt.Sprintf("%d.log", n) != base {
		return "", false
	}
	next := filepath.Join(filepath.Dir(live), fmt.Sprintf("%d.log", n+1))
	if _, err := os.Lstat(next); err != nil {
		return "", false
	}
	return next, true
}

// Follow emits the lines of the instance whose live file is live, as o
// selects them, then follows it and the instances after it until w.Ended
// or ctx is done (then it returns ctx's error).
func Follow(ctx context.Context, live string, o Options, w Watch, emit func(Line) error) error {
	return follow(ctx, live, o, w, nil, emit)
}

// follow is Follow with a hook called, when not nil, before each look
// Follow takes at the files (a test stops it there to move them under it).
func follow(ctx context.Context, live string, o Options, w Watch, step func(string), emit func(Line) error) error {
	if w.Poll <= 0 {
		w.Poll = 200 * time.Millisecond
	}
	if w.Next == nil {
		w.Next = NextInstance
	}
	s := newSink(o, emit)
	f := &follower{ctx: ctx, w: w, s: s, hook: step, root: -1}
	defer f.close()
	first := true
	for {
		next, err := f.instance(live, func() error {
			if first {
				first = false
				return s.endTail()
			}
			return nil
		})
		if err != nil || next == "" {
			return err
		}
		live = next
	}
}

type follower struct {
	ctx  context.Context
	w    Watch
	s    *sink
	hook func(string)
	// root is the log directory (-1 until it exists); dir the
	// container's, opened beneath it at each look (nil while missing),
	// so that each look sees the directory that is there now, and no
	// symlink planted on the way is followed.
	root int
	dir  *containerDir
}

func (f *follower) step(name string) {
	if f.hook != nil {
		f.hook(name)
	}
}

func (f *follower) close() {
	f.dir.close()
	closeRoot(f.root)
}

// look opens the container's directory afresh for a look at its files.
func (f *follower) look(live string) error {
	if f.root < 0 {
		root, err := openRoot(live)
		if err != nil {
			return err
		}
		f.root = root
	}
	d, err := openContainerDir(f.root, live)
	if err != nil {
		return err
	}
	f.dir.close()
	f.dir = d
	return nil
}

// openLive is the live file being read.
type openLive struct {
	f  *os.File
	id fileID
	lr *lineReader
}

func (f *follower) open(live string) (*openLive, error) {
	f.step("open")
	if f.dir == nil {
		return nil, nil
	}
	file, err := f.dir.open(filepath.Base(live))
	if file == nil || err != nil {
		return nil, err
	}
	id, err := idOf(file)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("stat log %s: %w", live, err)
	}
	return &openLive{f: file, id: id, lr: newLineReader(file)}, nil
}

func (l *openLive) close() {
	if l != nil {
		l.f.Close()
	}
}

// at reports whether live names the file open at cur now (both nil: no
// live file), as of the latest look.
func (f *follower) at(live string, cur *openLive) (bool, error) {
	if f.dir == nil {
		return cur == nil, nil
	}
	id, ok, err := f.dir.id(filepath.Base(live))
	if err != nil {
		return false, err
	}
	if cur == nil {
		return !ok, nil
	}
	return ok && id == cur.id, nil
}

// instance follows one instance; it returns the next one's live file, or
// "" when the log ended. caughtUp runs each time the end is reached.
func (f *follower) instance(live string, caughtUp func() error) (string, error) {
	consumed := map[string]bool{}
	cur, rotated, err := f.openLatest(live)
	if err != nil {
		return "", err
	}
	defer func() { cur.close() }()
	// The rotated files older than the open live file come first; any
	// rotated after it was opened (the open file among them) are taken
	// up when the rotation is seen.
	for _, r := range rotated {
		f.step("read rotated")
		if err := readRotated(f.dir, r, f.s); err != nil {
			return "", err
		}
		consumed[rotatedKey(r)] = true
	}
	for {
		if cur != nil {
			f.step("read")
			if err := cur.lr.drain(f.s.record); err != nil {
				return "", fmt.Errorf("read %s: %w", live, err)
			}
		}
		// Rotated away, or created at last?
		f.step("stat")
		if err := f.look(live); err != nil {
			return "", err
		}
		same, err := f.at(live, cur)
		if err != nil {
			return "", err
		}
		if !same {
			if cur != nil {
				// Finish the old file: what was written before the
				// writer moved on.
				if err := cur.lr.drain(f.s.record); err != nil {
					return "", fmt.Errorf("read %s: %w", live, err)
				}
				if err := cur.lr.finish(f.s.record); err != nil {
					return "", err
				}
			}
			next, rotated, err := f.openLatest(live)
			if err != nil {
				return "", err
			}
			err = f.takeRotated(rotated, cur, consumed)
			cur.close()
			cur = next
			if err != nil {
				return "", err
			}
			continue
		}
		if err := caughtUp(); err != nil {
			return "", err
		}
		if next, ok := f.w.Next(live); ok {
			// The container has exited: its output is all there.
			if cur != nil {
				if err := cur.lr.drain(f.s.record); err != nil {
					return "", err
				}
				if err := cur.lr.finish(f.s.record); err != nil {
					return "", err
				}
			}
			return next, f.s.endInstance()
		}
		if f.w.Ended != nil && f.w.Ended(live) {
			if cur != nil {
				if err := cur.lr.drain(f.s.record); err != nil {
					return "", err
				}
			}
			return "", f.s.endInstance()
		}
		if f.w.Idle != nil {
			if err := f.w.Idle(); err != nil {
				return "", err
			}
		}
		t := time.NewTimer(f.w.Poll)
		select {
		case <-f.ctx.Done():
			t.Stop()
			return "", f.ctx.Err()
		case <-t.C:
		}
	}
}

// openLatest opens the live file (nil if there is none) and lists the
// rotated files beside it, and the two agree: the list is taken after the
// open, and the live path is looked at again after the list, so that every
// file rotated before the open one is listed and none rotated after it is.
// Were the open file rotated before the list was taken, the files it was
// rotated with would be listed (and taken as read) while the file opened is
// the one after them; so when the live path has moved on by then, it is
// done again.
func (f *follower) openLatest(live string) (*openLive, []string, error) {
	for {
		if err := f.look(live); err != nil {
			return nil, nil, err
		}
		cur, err := f.open(live)
		if err != nil {
			return nil, nil, err
		}
		f.step("list")
		var rotated []string
		if f.dir != nil {
			rotated, err = f.dir.rotated(filepath.Base(live))
			if err != nil {
				cur.close()
				return nil, nil, err
			}
		}
		// With no live file, anything listed is older than the next one.
		if cur == nil {
			return nil, rotated, nil
		}
		f.step("stat")
		same, err := f.at(live, cur)
		if err != nil {
			cur.close()
			return nil, nil, err
		}
		if same {
			return cur, rotated, nil
		}
		cur.close()
		if err := f.ctx.Err(); err != nil {
			return nil, nil, err
		}
	}
}

// takeRotated reads, in order, the rotated files listed and not read yet,
// except the one that was the open live file (read through cur). When that
// one is gone, removed to keep the number of files the writer keeps (or
// when no live file was open at the look before), files rotated since may
// have gone too: unless the stamps prove that none did, a line says that
// output may be missing there.
func (f *follower) takeRotated(rotated []string, cur *openLive, consumed map[string]bool) error {
	var fresh []string
	for _, r := range rotated {
		if k := rotatedKey(r); !consumed[k] && (len(fresh) == 0 || fresh[len(fresh)-1] != k) {
			fresh = append(fresh, k)
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	ours, unread := -1, 1 // rotations before fresh[0] not listed yet
	if cur != nil {
		var err error
		if ours, err = f.identify(fresh, cur); err != nil {
			return err
		}
		unread = 2
	}
	if ours < 0 && !follows(fresh[0], consumed, unread) {
		if err := f.s.note("podvisor: log output may be missing: the log rotated more often than it was read, and rotated files were removed"); err != nil {
			return err
		}
	}
	for i, r := range fresh {
		consumed[r] = true
		if i == ours {
			continue
		}
		f.step("read rotated")
		if err := readRotated(f.dir, r, f.s); err != nil {
			return err
		}
	}
	return nil
}

// identify returns the index in fresh (rotated files, oldest first, none
// of them listed when cur was opened) of the file open at cur, or -1 when
// it is not there any more. A plain one is known by its inode; a
// compressed one, a new inode, can only be the oldest (the writer's stamps
// grow), and is known by its content.
func (f *follower) identify(fresh []string, cur *openLive) (int, error) {
	if f.dir == nil {
		return -1, nil
	}
	for i, r := range fresh {
		f.step("identify")
		id, ok, err := f.dir.id(r)
		if err != nil {
			return -1, err
		}
		if ok && id == cur.id {
			return i, nil
		}
		if i == 0 && !ok {
			same, err := sameContent(f.dir, r+".gz", cur.f)
			if err != nil {
				return -1, err
			}
			if same {
				return 0, nil
			}
		}
	}
	return -1, nil
}

// sameContent reports whether the gzip file name in d holds what held
// does, from its start.
func sameContent(d *containerDir, name string, held *os.File) (bool, error) {
	gz, err := d.open(name)
	if gz == nil || err != nil {
		return false, err
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		return false, nil // not a gzip file: not the one held
	}
	defer zr.Close()
	a := bufio.NewReaderSize(io.NewSectionReader(held, 0, 1<<62), 32<<10)
	b := bufio.NewReaderSize(zr, 32<<10)
	bufA, bufB := make([]byte, 32<<10), make([]byte, 32<<10)
	for {
		na, errA := io.ReadFull(a, bufA)
		nb, errB := io.ReadFull(b, bufB)
		if na != nb || !bytes.Equal(bufA[:na], bufB[:nb]) {
			return false, nil
		}
		if errA != nil || errB != nil {
			return ended(errA) && ended(errB), nil
		}
	}
}

func ended(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }

// follows reports whether the rotated file first must be the one rotated
// right after the n rotations that followed the newest one consumed (all
// listed when the live file of the look before was opened, or found
// missing). The writer stamps each rotation later than the one before
// (crilog.StampLayout, a second at least between two): so the first of
// those n holds that stamp plus a second at least, the next plus two, and
// first, if its stamp is the newest plus n seconds, is the nth, with
// nothing between them lost. n is 2 when the live file open at the look
// before is gone (it was the first of them), 1 when there was none.
func follows(first string, consumed map[string]bool, n int) bool {
	stamp := func(name string) (time.Time, bool) {
		i := strings.LastIndex(name, ".")
		if i < 0 {
			return time.Time{}, false
		}
		t, err := time.Parse(crilog.StampLayout, name[i+1:])
		return t, err == nil
	}
	var newest time.Time
	for k := range consumed {
		if t, ok := stamp(k); ok && t.After(newest) {
			newest = t
		}
	}
	t, ok := stamp(first)
	return ok && !newest.IsZero() && t.Equal(newest.Add(time.Duration(n)*time.Second))
}
