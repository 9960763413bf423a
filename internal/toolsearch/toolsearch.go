// Package toolsearch ranks tools for a natural-language intent with SQLite
// FTS5: bm25() over weighted fields (name, title, server, description,
// parameter names, parameter descriptions, annotations, and the verb and
// noun synonyms of the tool's name), then a prior from the tool's own
// annotations: a tool that deletes or overwrites ranks lower unless the
// intent asks to delete. Text is split at snake_case, kebab-case and
// camelCase boundaries and Porter-stemmed, so "listCommits", "list_commits"
// and "listing commits" meet. No model, no network.
//
// Synonyms are expanded on the document side (a tool named create_entities
// is also indexed under store, save, add, insert, …, in a table of its
// own with a lower weight) so a synonym counts less than the word itself.
//
// Candidates from FTS5 are then scaled by a coordination factor (the share
// of the intent's words the tool has), so one strong word does not beat a
// tool that matches most of the intent.
//
// Each Index is its own in-memory SQLite database on one connection.
// Building one is the expensive part (about 0.1 s for the 739 tools of
// testdata/ on a shared 2-CPU machine; a search about 0.6 ms), so callers
// keep an Index while their tool list is unchanged and build a new one,
// closing the old, when it changes. An Index is safe for concurrent use:
// searches are serialised on its connection.
package toolsearch

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	_ "modernc.org/sqlite" // pure-Go SQLite driver with FTS5
)

// Hints are the tool's own annotations that inform ranking; nil means the
// tool did not say.
type Hints struct {
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}

// Doc is one searchable tool. Params and ParamDocs are the input schema's
// property names and descriptions, space-separated.
type Doc struct {
	ID                               string
	Name, Title, Server, Description string
	Params, ParamDocs                string
	Hints                            Hints
}

// Hit is a ranked result; a higher Score is a better match.
type Hit struct {
	ID    string
	Score float64
}

// fields are the FTS5 tables a doc is split into, each with its columns'
// bm25() weights and the table's weight in the sum. FTS5's bm25 normalises
// by the length of the whole row, so fields of very different lengths live
// in separate tables: a long description or a long synonym list must not
// weaken a match on the tool's name.
var fields = []struct {
	table   string
	columns []string
	weights []float64
	weight  float64
}{
	{"f_names", []string{"name", "title", "server"}, []float64{4, 2, 3}, 1},
	{"f_descs", []string{"description"}, []float64{1}, 1},
	{"f_params", []string{"params", "param_docs", "annotations"}, []float64{1, 0.4, 0.3}, 0.2},
	{"f_alts", []string{"alt"}, []float64{1}, 0.8}, // synonyms of the name's, title's and server's words
}

// kind bits: what the tool does to its data, for the ranking prior.
const (
	kindDeletes     = 1 // its name's verb deletes (delete_*, remove_*, clear_*)
	kindDestructive = 2 // destructiveHint true
	kindReadOnly    = 4 // readOnlyHint true, or no hint and a reading verb
	kindWrites      = 8 // readOnlyHint false, or no hint and a writing verb
)

// Index is an FTS5 index over documents. Close it when done.
type Index struct {
	mu     sync.Mutex // serialises use of conn
	db     *sql.DB
	conn   *sql.Conn
	search *sql.Stmt
	n      int
	// words are each doc's stemmed words (all fields and synonyms), by
	// rowid, for the coordination factor.
	words []map[string]bool
}

var dbSeq atomic.Uint64

// New indexes docs in a new in-memory database.
func New(docs []Doc) (ix *Index, retErr error) {
	ctx := context.Background()
	// A named memory database per Index: each connection to a plain
	// ":memory:" would be a separate, empty database.
	db, err := sql.Open("sqlite", fmt.Sprintf("file:toolsearch%d?mode=memory", dbSeq.Add(1)))
	if err != nil {
		return nil, err
	}
	defer func() {
		if retErr != nil {
			db.Close()
		}
	}()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	if err := load(ctx, conn, docs); err != nil {
		return nil, err
	}
	stmt, err := conn.PrepareContext(ctx, searchSQL())
	if err != nil {
		return nil, err
	}
	ix = &Index{db: db, conn: conn, search: stmt, n: len(docs), words: make([]map[string]bool, len(docs))}
	for i, d := range docs {
		ix.words[i] = stems(d.Name, d.Title, d.Server, d.Description, d.Params, d.ParamDocs,
			alternatives(d.Name+" "+d.Title), alternatives(d.Server))
	}
	return ix, nil
}

// load creates the table and inserts docs in one transaction.
// schema is the docs table (id and kind by rowid) and one FTS5 table per
// field.
func schema() string {
	var b strings.Builder
	b.WriteString("CREATE TABLE docs (rowid INTEGER PRIMARY KEY, id TEXT NOT NULL, kind INTEGER NOT NULL);\n")
	for _, f := range fields {
		fmt.Fprintf(&b, "CREATE VIRTUAL TABLE %s USING fts5(%s, tokenize = 'porter unicode61 remove_diacritics 2');\n",
			f.table, strings.Join(f.columns, ", "))
	}
	return b.String()
}

// inserts are the INSERT statements of the docs table and each field's
// table, in that order.
var inserts = func() []string {
	out := []string{"INSERT INTO docs (rowid, id, kind) VALUES (?, ?, ?)"}
	for _, f := range fields {
		out = append(out, fmt.Sprintf("INSERT INTO %s (rowid, %s) VALUES (?%s)",
			f.table, strings.Join(f.columns, ", "), strings.Repeat(", ?", len(f.columns))))
	}
	return out
}()

func load(ctx context.Context, conn *sql.Conn, docs []Doc) error {
	if _, err := conn.ExecContext(ctx, schema()); err != nil {
		return fmt.Errorf("toolsearch: %w (is FTS5 compiled in?)", err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmts := make([]*sql.Stmt, len(inserts))
	for i, q := range inserts {
		if stmts[i], err = tx.PrepareContext(ctx, q); err != nil {
			return err
		}
		defer stmts[i].Close()
	}
	for i, d := range docs {
		values := [][]any{
			{i, d.ID, kind(d)},
			{i, normalize(d.Name), newWords(d.Title, d.Name), normalize(d.Server) + " " + alternatives(d.Server)},
			{i, normalize(d.Description)},
			{i, normalize(d.Params), normalize(d.ParamDocs), hintText(d.Hints)},
			{i, alternatives(d.Name + " " + d.Title)},
		}
		for j, st := range stmts {
			if _, err := st.ExecContext(ctx, values[j]...); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// searchSQL sums each field table's weighted bm25 per doc and multiplies
// by the prior: ?1 is the MATCH expression, ?2..?4 the factors for
// kindDeletes, kindDestructive and kindReadOnly tools, ?5 the limit, ?6
// the factor for kindWrites tools. It returns rowid, id and score.
func searchSQL() string {
	var parts []string
	for _, f := range fields {
		w := make([]string, len(f.weights))
		for i, x := range f.weights {
			w[i] = fmt.Sprint(x)
		}
		parts = append(parts, fmt.Sprintf("SELECT rowid AS r, -%v * bm25(%s, %s) AS s FROM %[2]s WHERE %[2]s MATCH ?1",
			f.weight, f.table, strings.Join(w, ", ")))
	}
	return `SELECT m.r, docs.id, SUM(m.s)
	  * (CASE WHEN docs.kind & 1 THEN ?2 ELSE 1.0 END)
	  * (CASE WHEN docs.kind & 2 THEN ?3 ELSE 1.0 END)
	  * (CASE WHEN docs.kind & 4 THEN ?4 ELSE 1.0 END)
	  * (CASE WHEN docs.kind & 8 THEN ?6 ELSE 1.0 END) AS score
	FROM (` + strings.Join(parts, " UNION ALL ") + `) AS m JOIN docs ON docs.rowid = m.r
	GROUP BY m.r ORDER BY score DESC, docs.id LIMIT ?5`
}

// Len is the number of indexed documents.
func (ix *Index) Len() int { return ix.n }

// Close frees the index's database.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return errors.Join(ix.search.Close(), ix.conn.Close(), ix.db.Close())
}

// Search returns at most k documents matching query, best first (ties by
// ID). k <= 0 means all. A query with no searchable word matches nothing.
func (ix *Index) Search(query string, k int) ([]Hit, error) {
	q := parseQuery(query)
	if q.match == "" {
		return nil, nil
	}
	// The coordination factor reorders the best candidates, so fetch more
	// than k of them.
	limit := max(4*k, 20)
	if k <= 0 {
		limit = -1
	}
	hits, err := ix.candidates(q, limit)
	if err != nil {
		return nil, err
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	return hits, nil
}

// candidates runs the FTS5 query and applies the coordination factor: a
// tool scores in proportion to the square of the share of the intent's
// words it has (in any field or as a synonym), so a strong match on one
// word of "read the text of a file" does not outrank tools that match
// most of it.
func (ix *Index) candidates(q query, limit int) ([]Hit, error) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	rows, err := ix.search.Query(q.match, q.deletes, q.destructive, q.readOnly, limit, q.writes)
	if err != nil {
		return nil, fmt.Errorf("toolsearch: %w", err)
	}
	defer rows.Close()
	var hits []Hit
	for rows.Next() {
		var h Hit
		var r int
		if err := rows.Scan(&r, &h.ID, &h.Score); err != nil {
			return nil, err
		}
		n := 0
		for _, s := range q.stems {
			if ix.words[r][s] {
				n++
			}
		}
		share := float64(n) / float64(len(q.stems))
		h.Score *= share * share
		hits = append(hits, h)
	}
	return hits, rows.Err()
}
