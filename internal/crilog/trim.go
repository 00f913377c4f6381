package crilog

import (
	"errors"
	"io/fs"
)

// Trim removes the oldest rotations of the log at path so that at most
// maxFiles files remain, the live one included (less than MinMaxFiles is
// MinMaxFiles), as a rotation would: what a lowered --container-log-max-files
// left behind, or the rotations of a log no driver writes any more (a
// previous run's), which no rotation will trim again. Temporary files of a
// compression under way are left to their driver. It says which rotations
// it removed (by their stamped names, without suffix).
func Trim(path string, maxFiles int) ([]string, error) {
	if maxFiles < MinMaxFiles {
		maxFiles = MinMaxFiles
	}
	rs, err := listRotated(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	rs = withFiles(rs)
	var (
		done []string
		errs []error
	)
	for i := 0; i < len(rs)-(maxFiles-1); i++ {
		if err := rs[i].remove(path, false); err != nil {
			errs = append(errs, err)
			continue
		}
		done = append(done, path+"."+rs[i].stamp)
	}
	return done, errors.Join(errs...)
}
