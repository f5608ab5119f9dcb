package fileimport

// SetAfterBlockMove sets the hook WriteBlocks calls after each block's
// rename (a crash test exits there).
func SetAfterBlockMove(f func(i int)) { afterBlockMove = f }
