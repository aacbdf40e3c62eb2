// Package domain holds Tollgate's vocabulary — workflows, runs, steps,
// events, suspensions and commands — and the rules that bind them: which
// commands a step may return together, how a step outcome becomes one atomic
// commit, how a suspension is resumed exactly once.
//
// It imports only the standard library and small pure helpers. Storage, the
// web layer and the engine runtime (domain/engine) depend on it, never the
// other way round. Time always comes in as a parameter or through Clock; the
// domain never reads the wall clock itself.
package domain
