// Package hubtest is an in-process fake of the Hugging Face Hub endpoints
// package hub uses (repository creation, preupload, the LFS batch API with
// basic and multipart transfers and verification, NDJSON commits, and
// resolve for reading files back), served on loopback by httptest. It
// enforces what the Hub enforces that a client can get wrong: the bearer
// token, LFS content uploaded (with the announced SHA-256 and size) before
// a commit names it, and base64 content for regular files.
package hubtest

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
)

// Repo is a fake repository's state.
type Repo struct {
	Private bool
	Files   map[string][]byte // committed files by path
	Commits []string          // commit summaries
}

// Server is the fake Hub.
type Server struct {
	*httptest.Server
	Token string
	// LFSMin is the size from which preupload answers "lfs" (the Hub routes
	// by size and by .gitattributes patterns; *.parquet always goes to LFS).
	LFSMin int64
	// Chunk, when > 0, makes uploads of larger files multipart in parts of
	// this size.
	Chunk int64

	mu      sync.Mutex
	repos   map[string]*Repo
	objects map[string][]byte // LFS store by oid
	pending map[string][][]byte
	Calls   []string // method and path of every request, in order
}

// New starts a fake Hub on loopback; Close it when done.
func New(token string) *Server {
	s := &Server{Token: token, LFSMin: 10 << 20, repos: map[string]*Repo{}, objects: map[string][]byte{}, pending: map[string][][]byte{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Repo returns a copy of a repository's state, or nil.
func (s *Server) Repo(id string) *Repo {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[id]
	if r == nil {
		return nil
	}
	c := &Repo{Private: r.Private, Files: map[string][]byte{}, Commits: append([]string(nil), r.Commits...)}
	for k, v := range r.Files {
		c.Files[k] = v
	}
	return c
}

func (s *Server) fail(w http.ResponseWriter, code int, f string, a ...any) {
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": fmt.Sprintf(f, a...)})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.Calls = append(s.Calls, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	p := r.URL.Path
	// Upload and verify URLs are handed out by the batch answer and carry
	// their own one-time token in the query, as presigned URLs do.
	if strings.HasPrefix(p, "/lfs-upload/") || strings.HasPrefix(p, "/lfs-part/") || strings.HasPrefix(p, "/lfs-complete/") {
		s.lfsTransfer(w, r)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		s.fail(w, http.StatusUnauthorized, "invalid credentials")
		return
	}
	switch {
	case r.Method == http.MethodPost && p == "/api/repos/create":
		s.create(w, r)
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/api/datasets/") && strings.Contains(p, "/preupload/"):
		s.preupload(w, r, repoOf(p, "/api/datasets/", "/preupload/"))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/api/datasets/") && strings.Contains(p, "/commit/"):
		s.commit(w, r, repoOf(p, "/api/datasets/", "/commit/"))
	case r.Method == http.MethodPost && strings.HasSuffix(p, ".git/info/lfs/objects/batch"):
		s.batch(w, r, strings.TrimSuffix(strings.TrimPrefix(p, "/datasets/"), ".git/info/lfs/objects/batch"))
	case r.Method == http.MethodPost && strings.HasPrefix(p, "/lfs-verify/"):
		s.verify(w, r)
	case r.Method == http.MethodGet && strings.HasPrefix(p, "/datasets/") && strings.Contains(p, "/resolve/main/"):
		id, path, _ := strings.Cut(strings.TrimPrefix(p, "/datasets/"), "/resolve/main/")
		s.mu.Lock()
		repo := s.repos[id]
		var b []byte
		if repo != nil {
			b = repo.Files[path]
		}
		s.mu.Unlock()
		if b == nil {
			s.fail(w, http.StatusNotFound, "entry not found")
			return
		}
		w.Write(b)
	default:
		s.fail(w, http.StatusNotFound, "no route %s %s", r.Method, p)
	}
}

func repoOf(p, prefix, sep string) string {
	id, _, _ := strings.Cut(strings.TrimPrefix(p, prefix), sep)
	return id
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Name, Organization, Type string
		Private                  bool
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Name == "" || req.Type != "dataset" {
		s.fail(w, http.StatusBadRequest, "bad create request")
		return
	}
	id := req.Organization + "/" + req.Name
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos[id] != nil {
		s.fail(w, http.StatusConflict, "You already created this dataset repo")
		return
	}
	s.repos[id] = &Repo{Private: req.Private, Files: map[string][]byte{}}
	json.NewEncoder(w).Encode(map[string]string{"url": s.URL + "/datasets/" + id})
}

func (s *Server) exists(w http.ResponseWriter, id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.repos[id] == nil {
		s.fail(w, http.StatusNotFound, "repository %s not found", id)
		return false
	}
	return true
}

func (s *Server) preupload(w http.ResponseWriter, r *http.Request, id string) {
	if !s.exists(w, id) {
		return
	}
	var req struct {
		Files []struct {
			Path   string `json:"path"`
			Size   int64  `json:"size"`
			Sample string `json:"sample"`
		} `json:"files"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.fail(w, http.StatusBadRequest, "bad preupload request: %v", err)
		return
	}
	type mode struct {
		Path         string `json:"path"`
		UploadMode   string `json:"uploadMode"`
		ShouldIgnore bool   `json:"shouldIgnore"`
	}
	var out []mode
	for _, f := range req.Files {
		if _, err := base64.StdEncoding.DecodeString(f.Sample); err != nil {
			s.fail(w, http.StatusBadRequest, "sample of %s is not base64", f.Path)
			return
		}
		m := "regular"
		if f.Size >= s.LFSMin || strings.HasSuffix(f.Path, ".parquet") {
			m = "lfs"
		}
		out = append(out, mode{f.Path, m, false})
	}
	json.NewEncoder(w).Encode(map[string]any{"files": out})
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request, id string) {
	if r.Header.Get("Accept") != "application/vnd.git-lfs+json" {
		s.fail(w, http.StatusNotAcceptable, "want Accept: application/vnd.git-lfs+json")
		return
	}
	if !s.exists(w, id) {
		return
	}
	var req struct {
		Operation string `json:"operation"`
		Objects   []struct {
			OID  string `json:"oid"`
			Size int64  `json:"size"`
		} `json:"objects"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Operation != "upload" {
		s.fail(w, http.StatusBadRequest, "bad batch request")
		return
	}
	var objs []map[string]any
	for _, o := range req.Objects {
		s.mu.Lock()
		_, have := s.objects[o.OID]
		s.mu.Unlock()
		obj := map[string]any{"oid": o.OID, "size": o.Size}
		if !have {
			key := o.OID + "-" + strconv.FormatInt(o.Size, 10)
			acts := map[string]any{"verify": map[string]any{"href": s.URL + "/lfs-verify/" + key}}
			if s.Chunk > 0 && o.Size > s.Chunk {
				hdr := map[string]string{"chunk_size": strconv.FormatInt(s.Chunk, 10)}
				n := (o.Size + s.Chunk - 1) / s.Chunk
				for i := int64(1); i <= n; i++ {
					hdr[fmt.Sprintf("%05d", i)] = fmt.Sprintf("%s/lfs-part/%s/%d", s.URL, key, i)
				}
				acts["upload"] = map[string]any{"href": s.URL + "/lfs-complete/" + key, "header": hdr}
			} else {
				acts["upload"] = map[string]any{"href": s.URL + "/lfs-upload/" + key}
			}
			obj["actions"] = acts
		}
		objs = append(objs, obj)
	}
	w.Header().Set("Content-Type", "application/vnd.git-lfs+json")
	json.NewEncoder(w).Encode(map[string]any{"transfer": "basic", "objects": objs})
}

// store keeps b under oid when its hash and size match the key.
func (s *Server) store(w http.ResponseWriter, key string, b []byte) bool {
	oid, size, _ := strings.Cut(key, "-")
	h := sha256.Sum256(b)
	if hex.EncodeToString(h[:]) != oid || strconv.Itoa(len(b)) != size {
		s.fail(w, http.StatusBadRequest, "content does not match oid %s and size %s", oid, size)
		return false
	}
	s.mu.Lock()
	s.objects[oid] = b
	s.mu.Unlock()
	return true
}

func (s *Server) lfsTransfer(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, http.StatusBadRequest, "%v", err)
		return
	}
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/lfs-upload/") && r.Method == http.MethodPut:
		if s.store(w, strings.TrimPrefix(p, "/lfs-upload/"), b) {
			w.WriteHeader(http.StatusOK)
		}
	case strings.HasPrefix(p, "/lfs-part/") && r.Method == http.MethodPut:
		key, part, _ := strings.Cut(strings.TrimPrefix(p, "/lfs-part/"), "/")
		n, _ := strconv.Atoi(part)
		s.mu.Lock()
		for len(s.pending[key]) < n {
			s.pending[key] = append(s.pending[key], nil)
		}
		s.pending[key][n-1] = b
		s.mu.Unlock()
		h := sha256.Sum256(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(h[:8])+`"`)
	case strings.HasPrefix(p, "/lfs-complete/") && r.Method == http.MethodPost:
		key := strings.TrimPrefix(p, "/lfs-complete/")
		var req struct {
			Parts []struct {
				PartNumber int    `json:"partNumber"`
				ETag       string `json:"etag"`
			} `json:"parts"`
		}
		if json.Unmarshal(b, &req) != nil {
			s.fail(w, http.StatusBadRequest, "bad completion")
			return
		}
		s.mu.Lock()
		parts := s.pending[key]
		s.mu.Unlock()
		var all []byte
		for i, pt := range req.Parts {
			if pt.PartNumber != i+1 || i >= len(parts) || parts[i] == nil {
				s.fail(w, http.StatusBadRequest, "part %d missing", i+1)
				return
			}
			h := sha256.Sum256(parts[i])
			if pt.ETag != `"`+hex.EncodeToString(h[:8])+`"` {
				s.fail(w, http.StatusBadRequest, "part %d: etag %s does not match", i+1, pt.ETag)
				return
			}
			all = append(all, parts[i]...)
		}
		s.store(w, key, all)
	default:
		s.fail(w, http.StatusMethodNotAllowed, "bad transfer")
	}
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	key := strings.TrimPrefix(r.URL.Path, "/lfs-verify/")
	oid, _, _ := strings.Cut(key, "-")
	s.mu.Lock()
	_, ok := s.objects[oid]
	s.mu.Unlock()
	if !ok {
		s.fail(w, http.StatusNotFound, "object %s was not uploaded", oid)
	}
}

func (s *Server) commit(w http.ResponseWriter, r *http.Request, id string) {
	if r.Header.Get("Content-Type") != "application/x-ndjson" {
		s.fail(w, http.StatusBadRequest, "want application/x-ndjson")
		return
	}
	if !s.exists(w, id) {
		return
	}
	files := map[string][]byte{}
	summary := ""
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 256<<20)
	for sc.Scan() {
		var line struct {
			Key   string          `json:"key"`
			Value json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			s.fail(w, http.StatusBadRequest, "bad NDJSON line: %v", err)
			return
		}
		var v struct {
			Summary  string `json:"summary"`
			Path     string `json:"path"`
			Encoding string `json:"encoding"`
			Content  string `json:"content"`
			Algo     string `json:"algo"`
			OID      string `json:"oid"`
			Size     int64  `json:"size"`
		}
		json.Unmarshal(line.Value, &v)
		switch line.Key {
		case "header":
			summary = v.Summary
		case "file":
			b, err := base64.StdEncoding.DecodeString(v.Content)
			if v.Encoding != "base64" || err != nil {
				s.fail(w, http.StatusBadRequest, "%s: content is not base64", v.Path)
				return
			}
			files[v.Path] = b
		case "lfsFile":
			s.mu.Lock()
			b, ok := s.objects[v.OID]
			s.mu.Unlock()
			if v.Algo != "sha256" || !ok || int64(len(b)) != v.Size {
				s.fail(w, http.StatusBadRequest, "%s: LFS object %s was not uploaded", v.Path, v.OID)
				return
			}
			files[v.Path] = b
		default:
			s.fail(w, http.StatusBadRequest, "unknown key %q", line.Key)
			return
		}
	}
	if summary == "" {
		s.fail(w, http.StatusBadRequest, "commit without a header")
		return
	}
	s.mu.Lock()
	repo := s.repos[id]
	for k, v := range files {
		repo.Files[k] = v
	}
	repo.Commits = append(repo.Commits, summary)
	n := len(repo.Commits)
	s.mu.Unlock()
	json.NewEncoder(w).Encode(map[string]string{"commitUrl": fmt.Sprintf("%s/datasets/%s/commit/%d", s.URL, id, n), "commitOid": strconv.Itoa(n)})
}
