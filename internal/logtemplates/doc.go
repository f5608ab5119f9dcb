// Package logtemplates mines the templates of log messages with Drain (He,
// Zhu, Zheng and Lyu, "Drain: An Online Log Parsing Approach with Fixed
// Depth Tree", ICWS 2017), the way drain3, the maintained Python
// implementation (logpai, formerly IBM), does it. It owns the masking of
// variables, the splitting into tokens, the prefix tree, the clusters and
// their bound. It does not read, store or count logs, nor name what a
// template means: internal/logsignals feeds it messages and counts the
// templates.
//
// # Algorithm
//
// A message is masked (see below), then split on white space as strings.Fields
// does; no punctuation is stripped and no other character splits. Tokens past
// MaxTokens, and bytes past 16 KiB, are dropped. The tokens choose a path down
// a tree of fixed depth: first the node of their count, so that messages of
// different token counts (up to MaxTokens) never share a cluster, then one node
// per token for the first Depth-3 tokens (one, the first token, at the default
// depth 4; a message's last token never routes). A token that holds a digit, or
// is a masked variable, goes to the node's <*> child; so does any new token
// once a node has MaxChildren children. The leaf at the end of the path holds
// clusters. The message joins the leaf's cluster whose template is most similar
// to it, where the similarity (the share of positions where the template holds
// the message's token, <*> positions not counting) is at least SimThreshold; on
// a tie the template with more <*> wins, then the oldest. The template's
// positions where the message differs become <*>. Where no cluster is similar
// enough, the message makes a new one, with the message as its template. A
// message with no token has a cluster of its own.
//
// Like drain3, the miner holds at most MaxClusters clusters: a new one past
// the bound evicts the least recently used (made or joined longest ago).
// Unlike drain3, which leaves an evicted cluster's ID in its leaf until a
// cluster is next added to that leaf and never removes a node, the miner
// removes the cluster from the tree at once, and the nodes it leaves
// empty, so that memory follows the clusters held. (A node emptied so may
// free a place under a full parent, where drain3 would send a later new
// token to the <*> child.) IDs count up from 1 and are never reused.
//
// Routing by the first token means that a message that starts with a
// timestamp (masked to <*>) is routed by its length alone and found by
// similarity among all messages of that length; where the line's format
// allows, feed the message without its timestamp and level prefix.
//
// # Defaults
//
// Depth 4, SimThreshold 0.4 and MaxChildren 100 are drain3's defaults, as
// is routing tokens with a digit through <*> (drain3's
// parametrize_numeric_tokens); the paper tunes depth and threshold per log
// source. MaxClusters 1000, MaxTokens 64 and
// MaxTemplateBytes 200 are this package's: drain3 bounds none of them by
// default.
//
// # Masking
//
// Before a message is split, Mask replaces its variable parts with <*>,
// as drain3's masking instructions do (there with named masks such as
// <NUM> and <IP>; here all are <*>). A word is a run of ASCII letters,
// digits and '_' and of non-ASCII characters other than spaces; a variable
// starts where a word starts and ends where one ends. It is a UUID, an
// ISO-8601 or RFC 3339 date or timestamp, a time of day (HH:MM:SS, with a
// fraction and zone), an IPv4 address with an optional port, a 0x hex
// number or a run of 8 or more hex digits, an e-mail address, the value of
// a key=value pair (the key kept: "user=<*>"), or a number: a word that
// starts with a digit, or a sign and a digit, with any decimals, exponent
// and unit ("12ms", "3.5s", "200MB", "5µs", "61.4%"). So "sshd[24206]:"
// masks to "sshd[<*>]:", "/users/42" to "/users/<*>" and "node-7" to
// "node-<*>", since '[', '/' and '-' end words. A word with digits after
// its first letter ("v2", "sha256", "test9") is kept: it is usually a
// name, and Drain generalises it where it varies. A quoted string is not
// masked as a whole, nor is a quoted key=value value (msg="handled
// request" keeps its text), but the variables inside quotes are masked
// like any other, so that Go's `Get "http://10.0.0.1/x"` masks to
// `Get "http://<*>/x"`. A masked variable is a token like any other in the
// similarity, as drain3's named masks are: the template's <*> from masking
// matches the message's <*>.
//
// # Cost
//
// Mask reads each byte a bounded number of times, with no regular
// expression, and returns its input unchanged, without allocating, when
// nothing is variable. Add costs the masking, a walk of Depth-2 map look-ups
// and the similarity with each cluster of the leaf (each a comparison per
// token), so O(bytes + clusters in the leaf × tokens); the LRU bound is an
// intrusive list, O(1) apart from taking an evicted cluster out of its
// leaf. A message that joins a cluster allocates nothing; a new cluster
// allocates its template once. A message's tokens past MaxTokens, and its
// bytes past 16 KiB, are dropped before masking, so that a giant line
// costs no more than its start, and a cluster holds at most 16 KiB of
// text. BenchmarkAdd (a mix of 50 templates of a microservice fleet,
// messages of about 100 bytes) measured about 0.9 µs a message, with no
// allocation, on one of two shared cores; masking is about two thirds of
// that.
//
// # Concurrency
//
// A Miner is not safe for concurrent use: the caller serialises its calls,
// Template and Len included. Mask is safe for concurrent use.
package logtemplates
