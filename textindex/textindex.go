// Package textindex searches documents in memory as PostgreSQL's full-text search does: a
// document is its tsvector (the lexemes PostgreSQL produced, in its text form, with their
// positions and weights), a query is a set of lexemes, and ranks are ts_rank's, computed as
// PostgreSQL 15 computes them (src/backend/utils/adt/tsrank.c: calc_rank_or, calc_rank_and,
// with the default weights and no normalization), in the same float precision, so that a
// search in memory orders its results as the statement would.
//
// The lexemes themselves (stemming, stop words, the language) stay PostgreSQL's: the index
// is built from tsvectors PostgreSQL made, and queried with lexemes PostgreSQL made from the
// question. Nothing here parses natural language.
package textindex

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strings"
)

// Index is an immutable set of documents and their lexemes. Build it with a Builder.
type Index struct {
	docs     int
	postings map[string][]posting // by lexeme, in document order
	pos      []uint16             // every posting's positions, one after the other
	bytes    int
}

// posting is a lexeme's occurrences in one document: n of PostgreSQL's WordEntryPos values
// from Index.pos[off], the position in the low 14 bits and the weight (D 0, C 1, B 2, A 3)
// in the high two. A lexeme stored without positions has none (PostgreSQL's "haspos"
// false). Twelve bytes a posting, the positions apart: a knowledge base of 10,000 chunks has
// about a million.
type posting struct {
	doc int32
	off uint32
	n   uint32
}

// Builder adds documents to an Index, in order: a document's number is its order of Add.
type Builder struct{ x Index }

// Add adds the next document, given its tsvector as PostgreSQL prints it
// ('lexeme':1,5B 'other':3 ...). After an error the Builder holds part of that document: drop
// it.
func (b *Builder) Add(tsvector string) error {
	if b.x.postings == nil {
		b.x.postings = map[string][]posting{}
	}
	doc := int32(b.x.docs)
	s := tsvector
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			break
		}
		lexeme, rest, err := quoted(s)
		if err != nil {
			return fmt.Errorf("textindex: document %d: %w", doc, err)
		}
		off := len(b.x.pos)
		if strings.HasPrefix(rest, ":") {
			var pos []uint16
			if pos, rest, err = positions(b.x.pos, rest[1:]); err != nil {
				b.x.pos = b.x.pos[:off]
				return fmt.Errorf("textindex: document %d, lexeme %q: %w", doc, lexeme, err)
			}
			b.x.pos = pos
		}
		ps, known := b.x.postings[lexeme]
		if !known {
			b.x.bytes += len(lexeme) + 64 // the map's entry
		}
		b.x.postings[lexeme] = append(ps, posting{doc: doc, off: uint32(off), n: uint32(len(b.x.pos) - off)})
		b.x.bytes += 12 + 2*(len(b.x.pos)-off)
		s = rest
	}
	b.x.docs++
	return nil
}

// Index returns what was added. The Builder must not be used afterwards.
func (b *Builder) Index() *Index {
	x := b.x
	if x.postings == nil {
		x.postings = map[string][]posting{}
	}
	return &x
}

// quoted reads a quoted lexeme, in which two quotes stand for one and a backslash escapes
// the next byte.
func quoted(s string) (string, string, error) {
	if s[0] != '\'' {
		return "", "", fmt.Errorf("a lexeme begins with a quote: %.20q", s)
	}
	var out strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s):
			i++
			out.WriteByte(s[i])
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			i++
			out.WriteByte('\'')
		case c == '\'':
			return out.String(), s[i+1:], nil
		default:
			out.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("a lexeme is not closed: %.20q", s)
}

// positions appends to out what 1,5B,7A reads: positions with their weight letter (none
// for D).
func positions(out []uint16, s string) ([]uint16, string, error) {
	for {
		i := 0
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			n = n*10 + int(s[i]-'0')
			i++
		}
		if i == 0 || n > maxPos {
			return nil, "", fmt.Errorf("bad position in %.20q", s)
		}
		w := uint16(0)
		if i < len(s) {
			switch s[i] {
			case 'A':
				w, i = 3, i+1
			case 'B':
				w, i = 2, i+1
			case 'C':
				w, i = 1, i+1
			case 'D':
				i++
			}
		}
		out = append(out, w<<14|uint16(n))
		s = s[i:]
		if !strings.HasPrefix(s, ",") {
			return out, s, nil
		}
		s = s[1:]
	}
}

// maxPos is PostgreSQL's MAXENTRYPOS - 1, the largest position a tsvector holds.
const maxPos = 1<<14 - 1

// Docs is how many documents the index holds.
func (x *Index) Docs() int { return x.docs }

// Bytes is about what the index's postings take in memory.
func (x *Index) Bytes() int { return x.bytes }

// Match is the number of distinct terms each document holds, for the documents that hold at
// least one (documents in order), and whether one of the terms occurs in it more than once
// (the document's tsv_repeated matches). terms must be distinct.
type Match struct {
	Doc      int
	Terms    int
	Repeated bool
}

// Matches yields the documents holding at least one of terms, in document order: the merge
// of the terms' postings, which are in document order. It yields them one by one rather than
// as a list: a common term is in thousands of documents, of which a search keeps a few
// hundred at most (store's searchIndex), and the list was most of what a search allocated.
func (x *Index) Matches(terms []string) iter.Seq[Match] {
	return func(yield func(Match) bool) {
		var buf [8][]posting // a question's few terms: no allocation
		lists := buf[:0]
		for _, t := range terms {
			if ps := x.postings[t]; len(ps) > 0 {
				lists = append(lists, ps)
			}
		}
		for {
			next := int32(-1)
			for _, ps := range lists {
				if len(ps) > 0 && (next < 0 || ps[0].doc < next) {
					next = ps[0].doc
				}
			}
			if next < 0 {
				return
			}
			m := Match{Doc: int(next)}
			for i, ps := range lists {
				if len(ps) > 0 && ps[0].doc == next {
					m.Terms++
					m.Repeated = m.Repeated || ps[0].n > 1
					lists[i] = ps[1:]
				}
			}
			if !yield(m) {
				return
			}
		}
	}
}

// weights are ts_rank's defaults, by weight (D, C, B, A).
var weights = [4]float32{0.1, 0.2, 0.4, 1.0}

func wpos(p uint16) float32 { return weights[p>>14] }
func posOf(p uint16) int    { return int(p & maxPos) }

// Rank is ts_rank(document, query) for a query over terms: with all true, the AND of every
// term ('a' & 'b' & 'c', whose rank is calc_rank_and's); otherwise any query whose top
// operator is an OR or which is one term (calc_rank_or's), such as the OR of the ANDs of each
// m of them. terms are the query's operands.
func (x *Index) Rank(doc int, terms []string, all bool) float32 {
	return x.Ranker(terms, all).Rank(doc)
}

// Ranker ranks documents against one query, as Rank does, without allocating for each.
type Ranker struct {
	x     *Index
	items []string // the query's operands, sorted and each once (SortAndUniqItems)
	and   bool
	pos   [][]uint16
	found []bool
	null  []bool
}

// Ranker prepares Rank's query for many documents.
func (x *Index) Ranker(terms []string, all bool) *Ranker {
	items := slices.Clone(terms)
	slices.Sort(items) // tsCompareString orders as bytes do
	items = slices.Compact(items)
	return &Ranker{x: x, items: items, and: all && len(items) >= 2,
		pos: make([][]uint16, len(items)), found: make([]bool, len(items)), null: make([]bool, len(items))}
}

// Rank is ts_rank of doc.
func (r *Ranker) Rank(doc int) float32 {
	holds := false
	for i, t := range r.items {
		r.pos[i], r.found[i] = r.x.occurrences(t, int32(doc))
		holds = holds || r.found[i]
	}
	if !holds {
		return 0 // calc_rank: an empty document or query ranks 0; so does none of its terms
	}
	var res float32
	if r.and {
		res = rankAnd(r.pos, r.found, r.null)
	} else {
		res = rankOr(r.pos, r.found)
	}
	if res < 0 {
		res = 1e-20
	}
	return res
}

// occurrences is the positions of term in doc, and whether doc holds it.
func (x *Index) occurrences(term string, doc int32) ([]uint16, bool) {
	ps := x.postings[term]
	i, ok := slices.BinarySearchFunc(ps, doc, func(p posting, d int32) int { return int(p.doc - d) })
	if !ok {
		return nil, false
	}
	p := ps[i]
	return x.pos[p.off : p.off+p.n : p.off+p.n], true
}

// rankOr is calc_rank_or. A lexeme without positions counts as one occurrence of weight D.
func rankOr(pos [][]uint16, found []bool) float32 {
	var res float32
	for i, ps := range pos {
		if !found[i] {
			continue
		}
		if len(ps) == 0 {
			ps = posNone
		}
		var resj float32
		wjm := float32(-1)
		jm := 0
		for j, p := range ps {
			resj += wpos(p) / float32((j+1)*(j+1))
			if wpos(p) > wjm {
				wjm, jm = wpos(p), j
			}
		}
		// In C the sum is a float, the divisor a double literal: the addition is a double's.
		res = float32(float64(res) + float64(wjm+resj-wjm/float32((jm+1)*(jm+1)))/1.64493406685)
	}
	return res / float32(len(pos))
}

// posNone stands for the positions of a lexeme stored without any, in calc_rank_or.
var posNone = []uint16{0}

// posNull stands for the positions of a lexeme stored without any, in calc_rank_and.
var posNull = []uint16{maxPos}

// rankAnd is calc_rank_and: every pair of occurrences of two different terms adds its
// proximity.
func rankAnd(pos [][]uint16, found, null []bool) float32 {
	res := float32(-1)
	for i := range pos {
		null[i] = found[i] && len(pos[i]) == 0
		if null[i] {
			pos[i] = posNull
		}
	}
	for i := range pos {
		if !found[i] {
			continue
		}
		for k := 0; k < i; k++ {
			if !found[k] {
				continue
			}
			for _, l := range pos[i] {
				for _, p := range pos[k] {
					dist := posOf(l) - posOf(p)
					if dist < 0 {
						dist = -dist
					}
					if dist == 0 && !null[i] && !null[k] {
						continue
					}
					if dist == 0 {
						dist = maxPos + 1
					}
					curw := float32(math.Sqrt(float64(wpos(l) * wpos(p) * wordDistance(dist))))
					if res < 0 {
						res = curw
					} else {
						res = float32(1.0 - (1.0-float64(res))*(1.0-float64(curw)))
					}
				}
			}
		}
	}
	return res
}

// wordDistance is tsrank.c's word_distance.
func wordDistance(w int) float32 {
	if w > 100 {
		return 1e-30
	}
	return float32(1.0 / (1.005 + 0.05*math.Exp(float64(float32(w))/1.5-2)))
}
