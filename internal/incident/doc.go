// Package incident tracks incidents: what `vigil serve` pages about.
//
// An incident is one symptom on one entity — a training stall of
// ml-train/llm-pretrain, a burning SLO of a model, Vigil blind to a node —
// from the moment an evaluation first sees it until it has been gone for a
// while. Its identity is the symptom kind and the entity only, so a new
// diagnosis of the same incident (other ranked causes, new evidence) is a
// revision of it, never a second page. The Tracker keeps incidents across
// restarts in one JSON file, decides which ones are due for a
// notification (new, re-diagnosed, re-sent every interval, resolved) and
// says what each alert carries: identity labels, and the ranked causes,
// evidence, action and a link in annotations.
//
// It does not evaluate anything (internal/watch does) and does not talk to
// Alertmanager (internal/alert does).
package incident
