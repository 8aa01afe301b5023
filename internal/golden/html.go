package golden

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// skeletonAttrs are the attributes HTMLSkeleton keeps: those that carry
// structure, not presentation.
var skeletonAttrs = []string{"id", "class", "href", "lang", "name", "type", "data-id", "colspan", "charset", "aria-label"}

// voidElements have no end tag.
var voidElements = map[string]bool{"meta": true, "input": true, "br": true, "hr": true, "img": true, "link": true}

// node is an element of the skeleton (tag set) or a text (tag empty).
type node struct {
	tag, line string
	kids      []*node
}

// HTMLSkeleton reduces an HTML page to its element tree, one element a
// line, indented by depth, with the attributes in skeletonAttrs and the
// text (white space folded, cut at maxText runes); an element holding only
// a text has it on its own line. What would bury the structure is
// summarised in one line: a <pre> by its text, <style> as (CSS), an <svg>
// as (chart), a <script> holding a JSON object by its top-level keys. An
// end tag that closes no open element is ignored, so a missing end tag
// shows as wrong nesting.
func HTMLSkeleton(page string, maxText int) (string, error) {
	clip := func(s string) string {
		s = strings.Join(strings.Fields(s), " ")
		if r := []rune(s); len(r) > maxText {
			s = string(r[:maxText]) + "…"
		}
		return s
	}
	z := html.NewTokenizer(strings.NewReader(page))
	root := &node{tag: "#root"}
	stack := []*node{root}
	var collected strings.Builder // the text of a summarised element
	for {
		top := stack[len(stack)-1]
		summarised := len(stack) > 1 && summarise[top.tag] != nil
		switch z.Next() {
		case html.ErrorToken:
			if err := z.Err(); err != io.EOF {
				return "", fmt.Errorf("golden: html: %w", err)
			}
			var b strings.Builder
			for _, n := range root.kids {
				n.write(&b, 0)
			}
			return b.String(), nil
		case html.DoctypeToken:
			root.kids = append(root.kids, &node{tag: "!doctype", line: "<!DOCTYPE " + string(z.Text()) + ">"})
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if summarised {
				continue // an SVG's shapes, a highlighted code's spans
			}
			n := &node{tag: tok.Data, line: startTag(tok)}
			top.kids = append(top.kids, n)
			if !voidElements[tok.Data] && tok.Type == html.StartTagToken {
				stack = append(stack, n)
				collected.Reset()
			}
		case html.EndTagToken:
			if tag := z.Token().Data; tag == top.tag && len(stack) > 1 {
				if summarised {
					if s := summarise[tag](collected.String(), clip); s != "" {
						top.kids = append(top.kids, &node{line: s})
					}
				}
				stack = stack[:len(stack)-1]
			}
		case html.TextToken:
			if summarised {
				collected.Write(z.Text())
			} else if s := clip(string(z.Text())); s != "" {
				top.kids = append(top.kids, &node{line: s})
			}
		}
	}
}

// summarise gives the one line that stands for the content of an element
// the skeleton does not show in full.
var summarise = map[string]func(text string, clip func(string) string) string{
	"pre":   func(text string, clip func(string) string) string { return clip(text) },
	"style": func(string, func(string) string) string { return "(CSS)" },
	"svg":   func(string, func(string) string) string { return "(chart)" },
	"script": func(text string, _ func(string) string) string {
		var data map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &data) == nil {
			return "(JSON with keys: " + strings.Join(slices.Sorted(maps.Keys(data)), ", ") + ")"
		}
		return "(script)"
	},
}

// write prints n at depth d: an element holding only a text on one line,
// others with their children indented below.
func (n *node) write(b *strings.Builder, d int) {
	indent := strings.Repeat("  ", d)
	switch {
	case len(n.kids) == 1 && n.kids[0].tag == "":
		b.WriteString(indent + n.line + " " + n.kids[0].line + "\n")
	case n.tag == "":
		b.WriteString(indent + "| " + n.line + "\n")
	default:
		b.WriteString(indent + n.line + "\n")
		for _, k := range n.kids {
			k.write(b, d+1)
		}
	}
}

func startTag(tok html.Token) string {
	var b strings.Builder
	b.WriteString("<" + tok.Data)
	for _, k := range skeletonAttrs {
		for _, a := range tok.Attr {
			if a.Key == k {
				fmt.Fprintf(&b, " %s=%q", a.Key, a.Val)
			}
		}
	}
	return b.String() + ">"
}
