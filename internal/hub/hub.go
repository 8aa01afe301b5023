// Package hub publishes files to a Hugging Face Hub dataset repository over
// the Hub's HTTP API, the way the official huggingface_hub client does:
// create the repository (an existing one is fine), ask the preupload
// endpoint which files go through LFS, upload those through the LFS batch
// API (basic PUT, or multipart when the server asks for chunks) and verify
// them, then create one commit (NDJSON: a header, base64 regular files,
// LFS pointers by SHA-256).
package hub

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Client talks to one Hub endpoint with a token. Safe for concurrent use.
type Client struct {
	Endpoint string // e.g. the Hub's base URL (HF_ENDPOINT)
	Token    string
	HTTP     *http.Client // nil: http.DefaultClient
}

// File is one file to publish.
type File struct {
	PathInRepo string
	LocalPath  string
}

// Error is a non-2xx answer of the Hub.
type Error struct {
	Op     string
	Status int
	Body   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("hub: %s: HTTP %d: %s", e.Op, e.Status, strings.TrimSpace(e.Body))
}

func (c *Client) do(ctx context.Context, op, method, u string, body io.Reader, ctype string, out any) (http.Header, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("hub: %s: %w", op, err)
	}
	if c.Token != "" && strings.HasPrefix(u, strings.TrimRight(c.Endpoint, "/")) {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
		if strings.Contains(ctype, "git-lfs") {
			req.Header.Set("Accept", ctype)
		}
	}
	resp, b, err := c.send(req, op, 16<<20)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return resp.Header, &Error{Op: op, Status: resp.StatusCode, Body: string(b)}
	}
	if out != nil && len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return resp.Header, fmt.Errorf("hub: %s: answer: %w", op, err)
		}
	}
	return resp.Header, nil
}

// send sends req with the client's HTTP client and reads the answer's
// body, at most limit bytes (-1: all of it; API answers are small, a
// downloaded file is not).
func (c *Client) send(req *http.Request, op string, limit int64) (*http.Response, []byte, error) {
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("hub: %s: %w", op, err)
	}
	defer resp.Body.Close()
	var body io.Reader = resp.Body
	if limit >= 0 {
		body = io.LimitReader(body, limit)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, nil, fmt.Errorf("hub: %s: %w", op, err)
	}
	return resp, b, nil
}

func (c *Client) api(path string) string { return strings.TrimRight(c.Endpoint, "/") + path }

// CreateRepo creates the dataset repository repoID ("namespace/name"); an
// existing repository (HTTP 409) is not an error.
func (c *Client) CreateRepo(ctx context.Context, repoID string, private bool) error {
	ns, name, ok := strings.Cut(repoID, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return fmt.Errorf("hub: repository %q: want namespace/name", repoID)
	}
	body, _ := json.Marshal(map[string]any{"name": name, "organization": ns, "private": private, "type": "dataset"})
	_, err := c.do(ctx, "create repository", http.MethodPost, c.api("/api/repos/create"), bytes.NewReader(body), "application/json", nil)
	var he *Error
	if errors.As(err, &he) && he.Status == http.StatusConflict {
		return nil
	}
	return err
}

type upload struct {
	File
	size   int64
	sha    string
	sample []byte
	mode   string // "lfs" or "regular"
}

func describe(f File) (upload, error) {
	u := upload{File: f}
	fh, err := os.Open(f.LocalPath)
	if err != nil {
		return u, fmt.Errorf("hub: %w", err)
	}
	defer fh.Close()
	h := sha256.New()
	n, err := io.Copy(h, fh)
	if err != nil {
		return u, fmt.Errorf("hub: read %s: %w", f.LocalPath, err)
	}
	u.size, u.sha = n, hex.EncodeToString(h.Sum(nil))
	u.sample = make([]byte, min(n, 512))
	if _, err := fh.ReadAt(u.sample, 0); err != nil && err != io.EOF {
		return u, fmt.Errorf("hub: read %s: %w", f.LocalPath, err)
	}
	return u, nil
}

// Upload publishes files in one commit on the repository's main branch and
// returns the commit's URL. Files the Hub routes through LFS are uploaded
// first (skipped when the Hub already has their content).
func (c *Client) Upload(ctx context.Context, repoID string, files []File, message string) (string, error) {
	ups := make([]upload, len(files))
	for i, f := range files {
		u, err := describe(f)
		if err != nil {
			return "", err
		}
		ups[i] = u
	}
	if err := c.preupload(ctx, repoID, ups); err != nil {
		return "", err
	}
	for i := range ups {
		if ups[i].mode == "lfs" {
			if err := c.uploadLFS(ctx, repoID, &ups[i]); err != nil {
				return "", err
			}
		}
	}
	return c.commit(ctx, repoID, ups, message)
}

func (c *Client) preupload(ctx context.Context, repoID string, ups []upload) error {
	type fileReq struct {
		Path   string `json:"path"`
		Size   int64  `json:"size"`
		Sample string `json:"sample"`
	}
	var req struct {
		Files []fileReq `json:"files"`
	}
	for _, u := range ups {
		req.Files = append(req.Files, fileReq{u.PathInRepo, u.size, base64.StdEncoding.EncodeToString(u.sample)})
	}
	var resp struct {
		Files []struct {
			Path       string `json:"path"`
			UploadMode string `json:"uploadMode"`
		} `json:"files"`
	}
	body, _ := json.Marshal(req)
	if _, err := c.do(ctx, "preupload", http.MethodPost, c.api("/api/datasets/"+repoID+"/preupload/main"), bytes.NewReader(body), "application/json", &resp); err != nil {
		return err
	}
	modes := map[string]string{}
	for _, f := range resp.Files {
		modes[f.Path] = f.UploadMode
	}
	for i := range ups {
		switch m := modes[ups[i].PathInRepo]; m {
		case "lfs", "regular":
			ups[i].mode = m
		default:
			return fmt.Errorf("hub: preupload: no upload mode for %s", ups[i].PathInRepo)
		}
	}
	return nil
}

type lfsAction struct {
	Href   string            `json:"href"`
	Header map[string]string `json:"header"`
}

const lfsType = "application/vnd.git-lfs+json"

func (c *Client) uploadLFS(ctx context.Context, repoID string, u *upload) error {
	req := map[string]any{
		"operation": "upload", "transfers": []string{"basic", "multipart"}, "hash_algo": "sha256",
		"ref":     map[string]string{"name": "main"},
		"objects": []map[string]any{{"oid": u.sha, "size": u.size}},
	}
	body, _ := json.Marshal(req)
	var resp struct {
		Objects []struct {
			OID     string `json:"oid"`
			Actions struct {
				Upload *lfsAction `json:"upload"`
				Verify *lfsAction `json:"verify"`
			} `json:"actions"`
			Error *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		} `json:"objects"`
	}
	if _, err := c.do(ctx, "LFS batch", http.MethodPost, c.api("/datasets/"+repoID+".git/info/lfs/objects/batch"), bytes.NewReader(body), lfsType, &resp); err != nil {
		return err
	}
	if len(resp.Objects) != 1 {
		return fmt.Errorf("hub: LFS batch: %d objects in the answer, want 1", len(resp.Objects))
	}
	obj := resp.Objects[0]
	if obj.Error != nil {
		return fmt.Errorf("hub: LFS batch: %s: %d %s", u.PathInRepo, obj.Error.Code, obj.Error.Message)
	}
	up := obj.Actions.Upload
	if up == nil {
		return nil // the Hub has this content already
	}
	var err error
	if cs, ok := up.Header["chunk_size"]; ok {
		err = c.multipart(ctx, u, up, cs)
	} else {
		err = c.putFile(ctx, u, up)
	}
	if err != nil {
		return err
	}
	if v := obj.Actions.Verify; v != nil {
		body, _ := json.Marshal(map[string]any{"oid": u.sha, "size": u.size})
		if _, err := c.do(ctx, "LFS verify", http.MethodPost, v.Href, bytes.NewReader(body), lfsType, nil); err != nil {
			return err
		}
	}
	return nil
}

func (c *Client) putFile(ctx context.Context, u *upload, a *lfsAction) error {
	f, err := os.Open(u.LocalPath)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer f.Close()
	_, err = c.do(ctx, "LFS upload "+u.PathInRepo, http.MethodPut, a.Href, f, "", nil)
	return err
}

// multipart uploads the file in chunk_size parts to the URLs the header
// names by part number ("00001", ...), then posts the parts' ETags to the
// action's href.
func (c *Client) multipart(ctx context.Context, u *upload, a *lfsAction, chunk string) error {
	size, err := strconv.ParseInt(chunk, 10, 64)
	if err != nil || size <= 0 {
		return fmt.Errorf("hub: LFS multipart: chunk_size %q", chunk)
	}
	var parts []string
	for k := range a.Header {
		if _, err := strconv.Atoi(k); err == nil {
			parts = append(parts, k)
		}
	}
	sort.Slice(parts, func(i, j int) bool { n, _ := strconv.Atoi(parts[i]); m, _ := strconv.Atoi(parts[j]); return n < m })
	f, err := os.Open(u.LocalPath)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer f.Close()
	type etag struct {
		PartNumber int    `json:"partNumber"`
		ETag       string `json:"etag"`
	}
	var done []etag
	for i, k := range parts {
		sec := io.NewSectionReader(f, int64(i)*size, size)
		h, err := c.do(ctx, "LFS upload part "+k, http.MethodPut, a.Header[k], sec, "", nil)
		if err != nil {
			return err
		}
		n, _ := strconv.Atoi(k)
		done = append(done, etag{n, h.Get("ETag")})
	}
	body, _ := json.Marshal(map[string]any{"oid": u.sha, "parts": done})
	_, err = c.do(ctx, "LFS complete multipart", http.MethodPost, a.Href, bytes.NewReader(body), lfsType, nil)
	return err
}

func (c *Client) commit(ctx context.Context, repoID string, ups []upload, message string) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(map[string]any{"key": "header", "value": map[string]string{"summary": message, "description": ""}})
	for _, u := range ups {
		if u.mode == "lfs" {
			enc.Encode(map[string]any{"key": "lfsFile", "value": map[string]any{"path": u.PathInRepo, "algo": "sha256", "oid": u.sha, "size": u.size}})
			continue
		}
		data, err := os.ReadFile(u.LocalPath)
		if err != nil {
			return "", fmt.Errorf("hub: %w", err)
		}
		enc.Encode(map[string]any{"key": "file", "value": map[string]string{"path": u.PathInRepo, "encoding": "base64", "content": base64.StdEncoding.EncodeToString(data)}})
	}
	var resp struct {
		CommitURL string `json:"commitUrl"`
		CommitOID string `json:"commitOid"`
	}
	if _, err := c.do(ctx, "commit", http.MethodPost, c.api("/api/datasets/"+repoID+"/commit/main"), &b, "application/x-ndjson", &resp); err != nil {
		return "", err
	}
	return resp.CommitURL, nil
}

// ResolveURL is where the Hub serves a file of a dataset repository.
func (c *Client) ResolveURL(repoID, path string) string {
	return c.api("/datasets/" + repoID + "/resolve/main/" + (&url.URL{Path: path}).EscapedPath())
}

// Download reads a committed file of a dataset repository back (resolve).
func (c *Client) Download(ctx context.Context, repoID, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.ResolveURL(repoID, path), nil)
	if err != nil {
		return nil, fmt.Errorf("hub: download: %w", err)
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, b, err := c.send(req, "download "+path, -1)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &Error{Op: "download " + path, Status: resp.StatusCode, Body: string(b)}
	}
	return b, nil
}
