package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Moving a set of blocks into a data directory all or nothing. A rename is
// atomic, but several are not: a crash between two renames of an import
// would leave part of it visible. So the move is journalled, as a
// database's redo log is: once every block is built in the staging
// directory, a journal naming them is written (atomically: a temporary
// file, fsync, rename), then the blocks are renamed into place, then the
// journal is removed. RecoverBlockMoves, run under the directory's lock
// before the TSDB opens it, finishes a move that a crash interrupted (the
// blocks still in the staging directory are moved too) or, when a block
// is missing from both places, undoes it; either way the import is whole
// or absent.

// journalSuffix names the journals in a data directory.
const journalSuffix = ".block-move.json"

// blockJournal is what a journal records.
type blockJournal struct {
	// Staging is the staging directory's name, inside the data directory.
	Staging string `json:"staging"`
	// Blocks are the block directories' names, to move from Staging.
	Blocks []string `json:"blocks"`
}

// MoveBlocks moves the named block directories from staging (inside dir)
// into dir, all or none even across a crash (see RecoverBlockMoves).
// moved, when not nil, is called after each rename (tests crash there).
func MoveBlocks(dir, staging string, blocks []string, moved func(i int)) error {
	if len(blocks) == 0 {
		return nil
	}
	j := blockJournal{Staging: filepath.Base(staging), Blocks: blocks}
	path := filepath.Join(dir, j.Staging+journalSuffix)
	if err := writeJournal(path, j); err != nil {
		return fmt.Errorf("write the block move's journal: %w", err)
	}
	for i, b := range blocks {
		if err := os.Rename(filepath.Join(staging, b), filepath.Join(dir, b)); err != nil {
			// Undo what moved, then drop the journal: nothing is left.
			return errors.Join(fmt.Errorf("move block %s into %s: %w", b, dir, err), undoMove(dir, j), os.Remove(path))
		}
		if moved != nil {
			moved(i)
		}
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return os.Remove(path)
}

// RecoverBlockMoves finishes or undoes the block moves a crash
// interrupted in dir, which the caller has locked, and reports what it
// did.
func RecoverBlockMoves(dir string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*"+journalSuffix))
	if err != nil {
		return err
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read block move journal: %w", err)
		}
		var j blockJournal
		if err := json.Unmarshal(b, &j); err != nil || !plainName(j.Staging) || slices.ContainsFunc(j.Blocks, func(b string) bool { return !plainName(b) }) {
			logger.Warn("unreadable block move journal removed", "journal", path)
			if err := os.Remove(path); err != nil {
				return err
			}
			continue
		}
		whole := true
		for _, blk := range j.Blocks {
			if !isDir(filepath.Join(dir, blk)) && !isDir(filepath.Join(dir, j.Staging, blk)) {
				whole = false
			}
		}
		if whole {
			for _, blk := range j.Blocks {
				if isDir(filepath.Join(dir, blk)) {
					continue
				}
				if err := os.Rename(filepath.Join(dir, j.Staging, blk), filepath.Join(dir, blk)); err != nil {
					return fmt.Errorf("finish an interrupted block move: %w", err)
				}
			}
			logger.Warn("finished an import that a crash interrupted", "blocks", len(j.Blocks))
		} else {
			if err := undoMove(dir, j); err != nil {
				return err
			}
			logger.Warn("undid an import that a crash interrupted: some of its blocks are gone", "blocks", len(j.Blocks))
		}
		if err := errors.Join(syncDir(dir), os.RemoveAll(filepath.Join(dir, j.Staging)), os.Remove(path)); err != nil {
			return fmt.Errorf("recover a block move: %w", err)
		}
	}
	return nil
}

// undoMove removes the journal's blocks that are in dir.
func undoMove(dir string, j blockJournal) error {
	var errs []error
	for _, blk := range j.Blocks {
		if !plainName(blk) {
			continue
		}
		errs = append(errs, os.RemoveAll(filepath.Join(dir, blk)))
	}
	return errors.Join(errs...)
}

// writeJournal writes j to path atomically and durably.
func writeJournal(path string, j blockJournal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		return errors.Join(err, f.Close(), os.Remove(tmp))
	}
	if err := f.Sync(); err != nil {
		return errors.Join(err, f.Close(), os.Remove(tmp))
	}
	if err := f.Close(); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes the renames in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// plainName tells whether name names an entry of the directory itself.
func plainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`)
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
